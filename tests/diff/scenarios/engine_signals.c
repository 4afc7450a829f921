/* Signals while waiting on engine sockets: epoll_wait, epoll_pwait with a
 * mask, poll, ppoll, select and pselect are interrupted (EINTR) with and
 * without SA_RESTART, as the kernel does for these calls; a signal blocked
 * by the call's mask does not interrupt it; timeouts expire; data that
 * arrives wakes each of them.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/select.h>

static volatile sig_atomic_t hits;
static void on_alarm(int sig)
{
	(void)sig;
	hits++;
}

static void handler(int restart)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigaction(SIGALRM, &sa, NULL);
}

static void arm_timer(int ms)
{
	struct itimerval it = { { 0, 0 }, { ms / 1000, (ms % 1000) * 1000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

int main(void)
{
	int c, s;
	nb_pair(&c, &s);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s };
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	char b[16];
	recv(s, b, sizeof(b), 0); /* armed, empty */

	for (int restart = 0; restart < 2; restart++) {
		handler(restart);
		say("-- SA_RESTART %s", restart ? "on" : "off");
		struct epoll_event out;
		arm_timer(50);
		R("epoll_wait interrupted", epoll_wait(ep, &out, 1, 5000));
		arm_timer(50);
		R("epoll_pwait interrupted", epoll_pwait(ep, &out, 1, 5000, NULL));
		struct pollfd p = { s, POLLIN, 0 };
		arm_timer(50);
		R("poll interrupted", poll(&p, 1, 5000));
		arm_timer(50);
		struct timespec ts = { 5, 0 };
		R("ppoll interrupted", ppoll(&p, 1, &ts, NULL));
		fd_set rs;
		FD_ZERO(&rs);
		FD_SET(s, &rs);
		struct timeval tv = { 5, 0 };
		arm_timer(50);
		R("select interrupted", select(s + 1, &rs, NULL, NULL, &tv));
		FD_ZERO(&rs);
		FD_SET(s, &rs);
		arm_timer(50);
		R("pselect interrupted", pselect(s + 1, &rs, NULL, NULL, &ts, NULL));
	}
	say("signals handled %d", (int)hits);

	/* A mask that blocks SIGALRM: the timer fires, the wait times out. */
	sigset_t block;
	sigemptyset(&block);
	sigaddset(&block, SIGALRM);
	sigset_t old;
	sigprocmask(SIG_BLOCK, &block, &old); /* pending until unblocked */
	arm_timer(20);
	struct epoll_event out;
	sigset_t none;
	sigemptyset(&none);
	sigaddset(&none, SIGALRM);
	R("epoll_pwait with SIGALRM blocked: times out", epoll_pwait(ep, &out, 1, 200, &none));
	struct pollfd p = { s, POLLIN, 0 };
	struct timespec t200 = { 0, 200000000 };
	R("ppoll with SIGALRM blocked: times out", ppoll(&p, 1, &t200, &none));
	hits = 0;
	sigprocmask(SIG_SETMASK, &old, NULL); /* delivered now */
	say("delivered on unblock %d", (int)hits);

	/* Timeouts, then data wakes each wait. */
	R("epoll_wait timeout", epoll_wait(ep, &out, 1, 30));
	R("poll timeout", poll(&p, 1, 30));
	struct timeval tv = { 0, 30000 };
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(s, &rs);
	R("select timeout", select(s + 1, &rs, NULL, NULL, &tv));
	say("select left the timeout at %ld.%06ld", (long)tv.tv_sec, (long)tv.tv_usec);
	pid_t k = fork();
	if (k == 0) {
		msleep(50);
		send(c, "wake", 4, 0);
		_exit(0);
	}
	R("epoll_wait woken by data", epoll_wait(ep, &out, 1, 5000));
	R("poll sees it", poll(&p, 1, 5000));
	say("revents %#x", p.revents);
	FD_ZERO(&rs);
	FD_SET(s, &rs);
	tv.tv_sec = 5;
	tv.tv_usec = 0;
	R("select sees it", select(s + 1, &rs, NULL, NULL, &tv));
	say("readable %d", FD_ISSET(s, &rs) != 0);
	reap("sender", k);
	long r = R("recv", recv(s, b, sizeof(b), 0));
	show("got", b, r);
	return 0;
}

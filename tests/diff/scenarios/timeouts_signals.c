/* SO_RCVTIMEO / SO_SNDTIMEO, and signals during blocking calls with and
 * without SA_RESTART (Linux never restarts socket calls that have a
 * timeout set).  The engine serves the blocking socket.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"

static volatile sig_atomic_t hits;
static void on_alarm(int sig)
{
	(void)sig;
	hits++;
}

static void arm(int restart)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = restart ? SA_RESTART : 0;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 0 }, { 0, 50000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

int main(void)
{
	int c, s, sync[2];
	char buf[64];
	tcp_pair(&c, &s);
	if (pipe(sync))
		die("pipe");

	struct timeval tv = { 0, 100000 };
	R("setsockopt SO_RCVTIMEO", setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	struct timeval got;
	socklen_t gl = sizeof(got);
	R("getsockopt SO_RCVTIMEO", getsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &got, &gl));
	say("rcvtimeo %ld.%06ld", (long)got.tv_sec, (long)got.tv_usec);
	R("recv times out", recv(s, buf, sizeof(buf), 0));
	R("read times out", read(s, buf, sizeof(buf)));
	R("recv MSG_WAITALL times out", recv(s, buf, 4, MSG_WAITALL));

	/* A signal interrupts a timed recv even with SA_RESTART. */
	tv.tv_sec = 2;
	tv.tv_usec = 0;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	hits = 0;
	arm(1);
	R("timed recv + SA_RESTART signal", recv(s, buf, sizeof(buf), 0));
	say("handler ran %d", hits);
	tv.tv_sec = 0;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	/* Without SA_RESTART: EINTR. */
	hits = 0;
	arm(0);
	R("recv + signal, no SA_RESTART", recv(s, buf, sizeof(buf), 0));
	say("handler ran %d", hits);
	hits = 0;
	arm(0);
	R("read + signal, no SA_RESTART", read(s, buf, sizeof(buf)));
	hits = 0;
	arm(0);
	struct pollfd p = { s, POLLIN, 0 };
	R("poll + signal", poll(&p, 1, 2000));
	hits = 0;
	arm(1);
	R("poll + SA_RESTART signal (poll never restarts)", poll(&p, 1, 2000));

	/* With SA_RESTART: the recv restarts and gets the data sent later. */
	pid_t pid = fork();
	if (pid == 0) {
		wait_go(sync[0]);
		msleep(200);
		send(c, "late", 4, 0);
		_exit(0);
	}
	hits = 0;
	go(sync[1]);
	arm(1);
	long n = R("recv + SA_RESTART signal", recv(s, buf, sizeof(buf), 0));
	show("got", buf, n);
	say("handler ran %d", hits);
	reap("sender", pid);

	/* accept without SA_RESTART */
	struct sockaddr_storage a;
	socklen_t al;
	int l = tcp_listener(AF_INET, &a, &al);
	hits = 0;
	arm(0);
	R("accept + signal, no SA_RESTART", accept(l, NULL, NULL));
	hits = 0;
	arm(0);
	R("accept4 + signal, no SA_RESTART", accept4(l, NULL, NULL, 0));

	/* SO_SNDTIMEO: blocking send into a full buffer times out. */
	int sz = 4096;
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	tv.tv_sec = 0;
	tv.tv_usec = 100000;
	R("setsockopt SO_SNDTIMEO", setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)));
	static char big[1 << 16];
	long r;
	int partial = 0;
	do {
		r = send(c, big, sizeof(big), 0);
		if (r > 0 && r < (long)sizeof(big))
			partial = 1;
	} while (r > 0);
	say("blocking send into full buffer ends with %s", r < 0 ? scn_errname(errno) : "0");
	(void)partial;
	return 0;
}

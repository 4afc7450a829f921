/* A signal handler's send reaches the peer at once.  The main thread
 * waits in a blocking recv (the kernel's own call: its socket is the
 * kernel's) for bytes that a SIGALRM handler with SA_RESTART sends on the
 * other end, an engine socket.  The kernel restarts the recv after the
 * handler without coming back to the library, so a send the engine queued
 * would wait for the drain thread's watchdog (50 to 100 ms: seed 29000040),
 * which only the timing shows.  tests/integration/stress.sh also runs this
 * with the watchdog sending nothing (faults.c watchdog), as when no drain
 * thread ran under a low RLIMIT_NOFILE: a queued send then waits for ever,
 * and a SIGUSR1 timer 3 s later, whose handler has no SA_RESTART, ends the
 * recv with EINTR where the kernel path returns the bytes.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <signal.h>
#include <sys/time.h>
#include <time.h>

static int s;

static void on_alarm(int sig)
{
	(void)sig;
	int e = errno;
	send(s, "from the handler", 16, MSG_NOSIGNAL);
	errno = e;
}

static void on_bound(int sig)
{
	(void)sig;
}

int main(void)
{
	int c;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	char b[64];
	R("send", send(s, "first", 5, 0));
	wait_fd(c, POLLIN, 5000);
	show("peer reads", b, R("recv", recv(c, b, sizeof(b), 0)));
	/* the peer's reads are the kernel's (a second descriptor), blocking */
	int keep = dup(c);
	close(c);
	int fl = fcntl(keep, F_GETFL);
	fcntl(keep, F_SETFL, fl & ~O_NONBLOCK);
	/* the bound: SIGUSR1 in 3 s, no SA_RESTART, ends the recv (EINTR) */
	struct sigaction su = { 0 };
	su.sa_handler = on_bound;
	sigemptyset(&su.sa_mask);
	R("sigaction USR1", sigaction(SIGUSR1, &su, NULL));
	timer_t bound;
	struct sigevent sev = { 0 };
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGUSR1;
	R("bound timer", timer_create(CLOCK_MONOTONIC, &sev, &bound));
	struct itimerspec in3 = { { 0, 0 }, { 3, 0 } }, off = { { 0, 0 }, { 0, 0 } };
	R("in 3 s", timer_settime(bound, 0, &in3, NULL));
	struct sigaction sa = { 0 };
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	R("sigaction", sigaction(SIGALRM, &sa, NULL));
	if (getenv("SCN_SANITIZER_SIGNALS")) {
		/* TSan runs handlers itself, at its interceptors' safe points,
		 * not through the library's trampoline (the library cannot
		 * tell it is in a handler): the handler is called here,
		 * before the recv (same transcript, no signal). */
		R("timer", 0L);
		on_alarm(SIGALRM);
	} else {
		struct itimerval it = { { 0, 0 }, { 0, 50000 } };
		R("timer", setitimer(ITIMER_REAL, &it, NULL));
	}
	show("blocking recv: the handler's bytes", b, R("recv", recv(keep, b, sizeof(b), 0)));
	timer_settime(bound, 0, &off, NULL);
	timer_delete(bound);
	close(keep);
	close(s);
	return 0;
}

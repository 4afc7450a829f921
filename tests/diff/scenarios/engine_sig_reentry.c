/* A signal handler that makes system calls (libuv's SIGCHLD handler
 * writes to a pipe, and reads one) while the thread it interrupted is
 * inside the library holding an engine lock (a send copying into the
 * socket's queue, a receive, a wait): the handler's calls must not take
 * that lock again.  A fast interval timer interrupts a loop of engine
 * sends and receives many thousands of times; with the bug the process
 * deadlocks (the harness's timeout ends it), so this fails only when a
 * signal lands inside the lock, which a run of this length does many
 * times over.  ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <signal.h>
#include <sys/time.h>

static int pfd[2];
static volatile sig_atomic_t ticks;

static void on_alarm(int sig)
{
	(void)sig;
	int saved = errno;
	char b[64];
	if (write(pfd[1], "x", 1) == 1)
		ticks = ticks + 1;
	while (read(pfd[0], b, sizeof(b)) > 0)
		;
	errno = saved;
}

int main(void)
{
	int c, s;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	if (pipe(pfd))
		die("pipe");
	set_nonblock(pfd[0]);
	set_nonblock(pfd[1]);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	setitimer(ITIMER_REAL, &it, NULL);

	static char out[16384], in[16384];
	fill_pattern(out, sizeof(out), 7);
	long rounds = 0, bad = 0;
	for (int i = 0; i < 4000; i++) {
		size_t n = 1 + (size_t)(i * 977) % sizeof(out);
		if (send_all_nb(c, out, n) != (long)n || recv_all_nb(s, in, n) != (long)n || memcmp(in, out, n))
			bad++;
		rounds++;
	}
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_REAL, &off, NULL);
	say("rounds: %ld, bad: %ld", rounds, bad);
	say("handler ran: %s", ticks > 0 ? "yes" : "no");
	return 0;
}

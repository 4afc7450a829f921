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

static int s;

static void on_alarm(int sig)
{
	(void)sig;
	int e = errno;
	send(s, "from the handler", 16, MSG_NOSIGNAL);
	errno = e;
}

int main(void)
{
	int keep = engine_with_kernel_peer(&s);
	char b[64];
	timer_t bound = handler_timers(on_alarm);
	show("blocking recv: the handler's bytes", b, R("recv", recv(keep, b, sizeof(b), 0)));
	handler_timers_off(bound);
	close(keep);
	close(s);
	return 0;
}

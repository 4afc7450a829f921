/* A timer's handler sends on one socket while the thread is in a blocking
 * recv of the other end, whose arm makes the thread's first ring.  The
 * handler's call must not enter the engine halfway through that making:
 * under RINGSOCK_ARM_AFTER=0 its send looked for the program's own
 * io_uring (foreign.c), found the ring being made and waited for the
 * making to end, on the thread that was making it: a hang, about one run
 * in a hundred of fuzz seed 25300237 (the timer fell there by chance).
 * integration.stress runs this with the signal raised inside the making
 * every time (faults.c setup_signal) and compares with plain.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <signal.h>
#include <sys/time.h>

static int c_fd;
static volatile sig_atomic_t sent_once;
static volatile long handler_sent;
static char out[4096];

static void on_alrm(int sig)
{
	(void)sig;
	if (sent_once)
		return;
	sent_once = 1;
	int e = errno;
	handler_sent = send(c_fd, out, sizeof(out), MSG_NOSIGNAL);
	errno = e;
}

int main(void)
{
	int s;
	tcp_pair(&c_fd, &s);
	fill_pattern(out, sizeof(out), 7);
	struct sigaction sa = { .sa_handler = on_alrm, .sa_flags = SA_RESTART };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL))
		die("sigaction");
	if (getenv("SCN_SANITIZER_SIGNALS")) {
		/* TSan runs handlers itself, at its interceptors' safe points,
		 * not through the library's trampoline, and a timer's signal
		 * during this blocking recv never reached the handler in its
		 * runs with the library loaded: the handler is called here,
		 * before the recv (same transcript, no signal). */
		on_alrm(SIGALRM);
	} else {
		/* (the kernel path's signal: 100 ms from now, once) */
		struct itimerval it = { .it_value = { .tv_sec = 0, .tv_usec = 100000 } };
		if (setitimer(ITIMER_REAL, &it, NULL))
			die("setitimer");
	}
	char in[4096];
	long n = recv(s, in, sizeof(in), MSG_WAITALL);
	scn_report("recv(MSG_WAITALL) of what the handler sent", n);
	if (n > 0)
		show("received", in, n);
	say("the handler's send = %ld", handler_sent);
	say("same bytes: %s", n == (long)sizeof(out) && !memcmp(in, out, sizeof(out)) ? "yes" : "no");
	return 0;
}

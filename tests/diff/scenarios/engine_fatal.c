/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* Death by a signal's default action loses no accepted byte: a child
 * sends 20,000 bytes (every send accepted) on an engine socket, then ends
 * by raise(), kill(), abort() or a signal whose handler was set back to
 * SIG_DFL; the peer must receive all of it and the child must die by that
 * same signal.  sigaction still reports SIG_DFL, SIG_IGN still ignores,
 * and a handler the program installs still runs.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/resource.h>

#define SIZE 20000

static volatile sig_atomic_t handled;
static void on_sig(int sig) { (void)sig; handled++; }

static void die_after_send(const char *label, int sig, int how)
{
	int c, s;
	pid_t p = fork_nb_pair(&c, &s); /* (made after the fork: the engine's) */
	if (p == 0) {
		close(c);
		struct rlimit no_core = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no_core);
		char buf[SIZE], tmp[16];
		fill_pattern(buf, sizeof(buf), (unsigned)sig);
		/* armed on the engine: a few round trips first */
		for (int i = 0; i < 6; i++) {
			wait_fd(s, POLLIN, 5000);
			recv(s, tmp, sizeof(tmp), 0);
			send(s, "k", 1, 0);
		}
		long sent = 0;
		for (int i = 0; i < 20 && sent < SIZE; i++) {
			ssize_t n = send(s, buf + sent, (size_t)(SIZE - sent) < 1000 ? (size_t)(SIZE - sent) : 1000, 0);
			if (n > 0)
				sent += n;
		}
		if (sent != SIZE)
			_exit(3);
		if (how == 1) {
			struct sigaction sa = { .sa_handler = on_sig };
			sigaction(sig, &sa, NULL);
			signal(sig, SIG_DFL);
		}
		struct sigaction cur;
		sigaction(sig, NULL, &cur);
		if (cur.sa_handler != SIG_DFL)
			_exit(4);
		if (how == 2)
			abort();
		if (how == 3)
			kill(getpid(), sig);
		else
			raise(sig);
		for (;;)
			pause();
	}
	close(s);
	char in[SIZE + 16], tmp[16];
	for (int i = 0; i < 6; i++) {
		send(c, "q", 1, 0);
		wait_fd(c, POLLIN, 5000);
		recv(c, tmp, 1, 0); /* just the "k": the data may follow it at once */
	}
	long got = recv_all_nb(c, in, sizeof(in));
	char want[SIZE];
	fill_pattern(want, sizeof(want), (unsigned)sig);
	say("%s: peer received %ld bytes, intact %d", label, got, got == SIZE && !memcmp(in, want, SIZE));
	reap(label, p);
	close(c);
}

int main(void)
{
	die_after_send("raise(SIGTERM)", SIGTERM, 0);
	die_after_send("kill(SIGINT)", SIGINT, 3);
	die_after_send("abort()", SIGABRT, 2);
	die_after_send("raise(SIGQUIT)", SIGQUIT, 0);
	die_after_send("raise(SIGUSR1) after handler then SIG_DFL", SIGUSR1, 1);
	die_after_send("raise(SIGRTMIN+4)", SIGRTMIN + 4, 0);
	if (!getenv("SCN_SANITIZER")) /* a sanitizer runtime owns SIGSEGV */
		die_after_send("raise(SIGSEGV)", SIGSEGV, 0);

	/* SIG_IGN stays ignored, handlers still run, DFL still reported */
	signal(SIGUSR2, SIG_IGN);
	R("raise ignored SIGUSR2", raise(SIGUSR2));
	struct sigaction sa = { .sa_handler = on_sig }, old;
	sigaction(SIGHUP, &sa, &old);
	say("SIGHUP was SIG_DFL: %d", old.sa_handler == SIG_DFL);
	raise(SIGHUP);
	say("SIGHUP handler ran: %d", (int)handled);
	sigaction(SIGHUP, NULL, &old);
	say("SIGHUP reports our handler: %d", old.sa_handler == on_sig);
	say("SIGTERM reports SIG_DFL: %d", signal(SIGTERM, SIG_DFL) == SIG_DFL);
	return 0;
}

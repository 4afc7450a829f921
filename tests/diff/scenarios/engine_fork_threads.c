/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* fork() while threads that served engine sockets come and go: each
 * worker thread gets a ring of its own (a connection, a few round trips
 * on the engine), then exits and its ring is torn down, while the main
 * thread forks again and again.  Fork's handlers walk every ring, and so
 * do exit flushes and the watchdog: none may touch a ring being torn down
 * or being built.  Children exit at once, or use a socket of their own.
 * ENGINE_MIN_ACCELERATED=8 */
#include "../scn.h"
#include <pthread.h>

#define WORKERS 4
#define ROUNDS 12
#define FORKS_PER_ROUND 6

static void *worker(void *arg)
{
	(void)arg;
	int c, s;
	char buf[64];
	nb_pair(&c, &s);
	int ok = 1;
	for (int i = 0; i < 8; i++) {
		if (send(c, "request", 7, 0) != 7 || !(wait_fd(s, POLLIN, 5000) & POLLIN) ||
		    recv(s, buf, sizeof(buf), 0) != 7)
			ok = 0;
		if (send(s, "reply", 5, 0) != 5 || !(wait_fd(c, POLLIN, 5000) & POLLIN) ||
		    recv(c, buf, sizeof(buf), 0) != 5)
			ok = 0;
	}
	close(c);
	close(s);
	return (void *)(long)ok;
}

static int child_uses_socket(void)
{
	int c, s;
	char buf[16];
	nb_pair(&c, &s);
	send(c, "x", 1, 0);
	wait_fd(s, POLLIN, 5000);
	return recv(s, buf, sizeof(buf), 0) == 1 ? 0 : 1;
}

int main(void)
{
	int threads_ok = 0, forks_ok = 0;
	/* (fewer rounds under a sanitizer: each fork costs far more there.
	 * And no child uses a socket: GCC 12's AddressSanitizer does not
	 * lock its allocator across fork, so a child that allocates after a
	 * fork made while another thread was allocating (a worker, a thread
	 * starting) deadlocks inside the sanitizer, with or without the
	 * library; seen here in about one run in eight.) */
	int sanitizer = getenv("SCN_SANITIZER") != NULL;
	int rounds = sanitizer ? ROUNDS / 3 : ROUNDS;
	for (int round = 0; round < rounds; round++) {
		pthread_t th[WORKERS];
		for (int i = 0; i < WORKERS; i++)
			if (pthread_create(&th[i], NULL, worker, NULL))
				die("pthread_create");
		for (int f = 0; f < FORKS_PER_ROUND; f++) {
			pid_t p = fork();
			if (p < 0)
				die("fork");
			if (p == 0)
				_exit(f % 2 && !sanitizer ? child_uses_socket() : 0);
			int st;
			while (waitpid(p, &st, 0) < 0 && errno == EINTR)
				;
			if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
				forks_ok++;
		}
		for (int i = 0; i < WORKERS; i++) {
			void *r;
			pthread_join(th[i], &r);
			threads_ok += r != NULL;
		}
	}
	say("workers ok: %d of %d", threads_ok, WORKERS * rounds);
	say("children ok: %d of %d", forks_ok, FORKS_PER_ROUND * rounds);
	return 0;
}

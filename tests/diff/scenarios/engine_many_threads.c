/* engine_many_threads: a thread-per-connection program with more threads
 * than fit at the top of the descriptor table.  Each thread that uses a
 * socket gets a ring of its own (two engine descriptors), so 80 threads
 * hold about 160: every one must stay the engine's, hidden from the
 * program, with no warning.  The threads all arm a connection by reading,
 * wait for each other, then the main thread closes every descriptor above
 * the program's own (close_range, as a spawner does), and each thread
 * exchanges more bytes: its ring must still be there.
 * ENGINE_MIN_ACCELERATED=80 */
#include "../scn.h"
#include <pthread.h>

#define THREADS 80

static pthread_barrier_t armed, closed;
static int fds[THREADS][2];
static int ok[THREADS];

static void *worker(void *x)
{
	int i = (int)(long)x;
	int c = fds[i][0], s = fds[i][1];
	char buf[32];
	arm_by_reading(c, s);
	pthread_barrier_wait(&armed);
	pthread_barrier_wait(&closed);
	int n = snprintf(buf, sizeof(buf), "thread %d", i);
	if (send(c, buf, (size_t)n, 0) == n && wait_fd(s, POLLIN, 10000) &&
	    recv(s, buf, sizeof(buf), 0) == n && send(s, "back", 4, 0) == 4 && wait_fd(c, POLLIN, 10000) &&
	    recv(c, buf, sizeof(buf), 0) == 4)
		ok[i] = 1;
	return NULL;
}

int main(void)
{
	alarm(60);
	int top = 2;
	for (int i = 0; i < THREADS; i++) {
		nb_pair(&fds[i][0], &fds[i][1]);
		top = fds[i][1] > top ? fds[i][1] : top;
	}
	pthread_barrier_init(&armed, NULL, THREADS + 1);
	pthread_barrier_init(&closed, NULL, THREADS + 1);
	pthread_t t[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(long)i))
			die("pthread_create");
	pthread_barrier_wait(&armed);
	R("close_range above the program's", close_range((unsigned)top + 1, ~0U, 0));
	pthread_barrier_wait(&closed);
	int good = 0;
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		good += ok[i];
	}
	say("threads whose connection still worked: %d of %d", good, THREADS);
	return 0;
}

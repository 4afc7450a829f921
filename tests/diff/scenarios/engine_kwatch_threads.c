/* kwatch across threads: two threads each poll (timeout 0) their own
 * engine socket, which stays readable, with their own pipe, which they
 * fill and drain between calls, while a third thread keeps closing and
 * reopening descriptors (so the numbers the others' rings registered are
 * dropped under them).  Every call must show exactly what the thread just
 * did to its pipe (which it also replaces now and then, under the same
 * numbers, the old one left readable): each thread prints its count of
 * wrong answers (0).
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <pthread.h>

#define ROUNDS 3000

static volatile int stop_churn;

struct worker {
	int c, s;    /* a connection; s, on the engine, stays readable */
	int p[2];    /* the thread's pipe */
	int wrong;
};

static void *work(void *arg)
{
	struct worker *w = arg;
	char b[8];
	/* this thread's sockets: armed by it, its first user */
	arm_by_reading(w->c, w->s);
	send(w->c, "data", 4, 0);
	wait_fd(w->s, POLLIN, 5000);
	for (int i = 0; i < ROUNDS; i++) {
		if (i % 500 == 499) {
			/* a new pipe under the same numbers, the old one left ready */
			if (write(w->p[1], "y", 1) != 1)
				die("write");
			int q[2];
			if (pipe(q) < 0 || dup2(q[0], w->p[0]) < 0 || dup2(q[1], w->p[1]) < 0)
				die("pipe");
			close(q[0]);
			close(q[1]);
		}
		int fill = i % 3 == 0;
		if (fill && write(w->p[1], "x", 1) != 1)
			die("write");
		struct pollfd pf[2] = { { w->s, POLLIN, 0 }, { w->p[0], POLLIN, 0 } };
		int n = poll(pf, 2, 0);
		int want = fill ? 2 : 1;
		if (n != want || !(pf[0].revents & POLLIN) || ((pf[1].revents & POLLIN) != 0) != fill)
			w->wrong++;
		if (fill && read(w->p[0], b, sizeof(b)) != 1)
			die("read");
	}
	return NULL;
}

static void *churn(void *arg)
{
	(void)arg;
	while (!stop_churn) {
		int q[2];
		if (pipe(q) < 0)
			die("pipe");
		int d = dup(q[0]);
		close(q[0]);
		close(q[1]);
		if (d >= 0)
			close(d);
	}
	return NULL;
}

int main(void)
{
	struct worker w[2];
	for (int k = 0; k < 2; k++) {
		nb_pair(&w[k].c, &w[k].s);
		if (pipe(w[k].p) < 0)
			die("pipe");
		w[k].wrong = 0;
	}
	pthread_t t[2], ch;
	pthread_create(&ch, NULL, churn, NULL);
	for (int k = 0; k < 2; k++)
		pthread_create(&t[k], NULL, work, &w[k]);
	for (int k = 0; k < 2; k++)
		pthread_join(t[k], NULL);
	stop_churn = 1;
	pthread_join(ch, NULL);
	for (int k = 0; k < 2; k++)
		say("thread %d: %d calls, wrong answers %d", k, ROUNDS, w[k].wrong);
	return 0;
}

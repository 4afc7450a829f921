/* Sockets handed between threads: created on one, used on another, the
 * creator blocked elsewhere or gone; concurrent readers and writers on
 * different sockets; a socket closed by another thread.
 * ENGINE_MIN_ACCELERATED=9 */
#define _GNU_SOURCE
#include "../scn.h"
#include <pthread.h>

struct job {
	int fd;
	int gate[2]; /* the thread waits on gate[0] */
	char out[128];
	long n;
	int seed;
};

static void *reader(void *arg)
{
	struct job *j = arg;
	wait_go(j->gate[0]);
	j->n = recv(j->fd, j->out, sizeof(j->out), MSG_WAITALL);
	return NULL;
}

static void *creator(void *arg)
{
	int *pair = arg;
	tcp_pair(&pair[0], &pair[1]);
	send(pair[0], "from-dead-thread", 16, 0);
	return NULL; /* the thread exits; its sockets live on */
}

static void *blocker(void *arg)
{
	/* Blocks in an unrelated call until released. */
	int *p = arg;
	char c;
	if (read(p[0], &c, 1) != 1)
		return NULL;
	return NULL;
}

static void *closer(void *arg)
{
	close((int)(long)arg);
	return NULL;
}

static void *writer(void *arg)
{
	struct job *j = arg;
	enum { LEN = 1 << 16 };
	char *data = malloc(LEN);
	for (size_t i = 0; i < LEN; i++)
		data[i] = (char)(i * 31 + j->seed);
	size_t off = 0;
	while (off < LEN) {
		ssize_t w = send(j->fd, data + off, LEN - off, 0);
		if (w <= 0)
			break;
		off += (size_t)w;
	}
	free(data);
	j->n = (long)off;
	return NULL;
}

int main(void)
{
	/* 1: created on a thread that has exited, used here. */
	int pair[2];
	pthread_t t;
	pthread_create(&t, NULL, creator, pair);
	pthread_join(t, NULL);
	char buf[64];
	long n = R("recv on socket from exited thread", recv(pair[1], buf, 16, MSG_WAITALL));
	show("got", buf, n);

	/* 2: the creating thread blocks in an unrelated read while another
	 * thread uses its socket. */
	int c, s, bp[2];
	tcp_pair(&c, &s);
	if (pipe(bp))
		die("pipe");
	pthread_t tb, tr;
	pthread_create(&tb, NULL, blocker, bp);
	struct job j = { .fd = s };
	if (pipe(j.gate))
		die("pipe");
	pthread_create(&tr, NULL, reader, &j);
	send(c, "0123456789", 10, 0);
	go(j.gate[1]);
	send(c, "abcdefghij", 10, 0);
	shutdown(c, SHUT_WR);
	pthread_join(tr, NULL);
	say("reader thread got %ld", j.n);
	show("reader", j.out, j.n);
	go(bp[1]);
	pthread_join(tb, NULL);

	/* 3: two writers on two sockets at once, checked on the other end. */
	int c1, s1, c2, s2;
	tcp_pair(&c1, &s1);
	tcp_pair(&c2, &s2);
	struct job w1 = { .fd = c1, .seed = 1 }, w2 = { .fd = c2, .seed = 2 };
	pthread_t a, b;
	pthread_create(&a, NULL, writer, &w1);
	pthread_create(&b, NULL, writer, &w2);
	static char r1[1 << 16], r2[1 << 16];
	n = R("recv all from writer 1", recv(s1, r1, sizeof(r1), MSG_WAITALL));
	long m = R("recv all from writer 2", recv(s2, r2, sizeof(r2), MSG_WAITALL));
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	say("sent %ld %ld", w1.n, w2.n);
	show("stream 1", r1, n);
	show("stream 2", r2, m);

	/* 4: a socket closed by another thread while idle. */
	int c3, s3;
	tcp_pair(&c3, &s3);
	pthread_t cl;
	pthread_create(&cl, NULL, closer, (void *)(long)s3);
	pthread_join(cl, NULL);
	R("recv on socket another thread closed", recv(s3, buf, sizeof(buf), MSG_DONTWAIT));
	R("peer sees EOF", recv(c3, buf, sizeof(buf), 0));
	return 0;
}

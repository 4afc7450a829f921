/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* Threads and engine sockets: a socket armed by one thread is used by
 * another while the first blocks in an unrelated call, then the first
 * exits and the socket keeps working; sockets handed from an accepting
 * thread to a worker; a slow reader next to a fast one on one thread.
 * ENGINE_MIN_ACCELERATED=3 */
#include "../scn.h"
#include <pthread.h>
#include <sys/epoll.h>

static int c, s;
static int gate[2], done_pipe[2];

static void *armer(void *arg)
{
	(void)arg;
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s };
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	send(c, "first", 5, 0);
	struct epoll_event out;
	epoll_wait(ep, &out, 1, 5000);
	char b[16];
	long r = recv(s, b, 2, 0); /* leave some bytes held by this thread's ring */
	show("thread A read", b, r);
	send(s, "from A", 6, 0);   /* queued on this thread's ring */
	/* Block in something unrelated until the main thread is done. */
	char g;
	if (read(gate[0], &g, 1) != 1)
		return NULL;
	close(ep);
	return NULL;
}

/* Arms a socket, closes it at once (its cancelled receive may still be
 * completing) and exits: thread exit must not touch the freed socket. */
static void *close_and_exit(void *arg)
{
	int fd = (int)(long)arg;
	char b[8];
	recv(fd, b, sizeof(b), MSG_DONTWAIT); /* arms it on this thread's ring */
	send(fd, "x", 1, 0);
	close(fd);
	return NULL;
}

static void *worker(void *arg)
{
	int fd = (int)(long)arg;
	set_nonblock(fd);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	char b[256];
	long total = 0;
	for (;;) {
		struct epoll_event out;
		if (epoll_wait(ep, &out, 1, 5000) <= 0)
			break;
		long r = recv(fd, b, sizeof(b), 0);
		if (r == 0)
			break;
		if (r > 0) {
			total += r;
			send_all_nb(fd, b, (size_t)r); /* echo */
		}
	}
	close(ep);
	close(fd);
	if (write(done_pipe[1], &total, sizeof(total)) != sizeof(total))
		die("done");
	return NULL;
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	if (pipe(gate) || pipe(done_pipe))
		die("pipe");
	nb_pair(&c, &s);
	pthread_t a;
	pthread_create(&a, NULL, armer, NULL);
	/* Wait for A's echo to arrive, then use the socket from here. */
	char b[64];
	long r = recv_all_nb(c, b, 6);
	show("main got from A", b, r);
	r = R("main reads what A left", recv(s, b, sizeof(b), 0));
	show("main got", b, r);
	R("main sends", send(s, "from main", 9, 0));
	r = recv_all_nb(c, b, 9);
	show("peer got", b, r);
	/* A exits; the socket is unaffected. */
	if (write(gate[1], "g", 1) != 1)
		die("gate");
	pthread_join(a, NULL);
	send(c, "after A", 7, 0);
	r = recv_all_nb(s, b, 7);
	show("main got after A exited", b, r);
	R("main sends again", send(s, "bye", 3, 0));
	r = recv_all_nb(c, b, 3);
	show("peer got", b, r);
	close(c);
	close(s);

	/* Accept in this thread, serve in a worker. */
	struct sockaddr_storage addr;
	socklen_t al;
	int l = tcp_listener(AF_INET, &addr, &al);
	int cl = socket(AF_INET, SOCK_STREAM, 0);
	connect(cl, (struct sockaddr *)&addr, al);
	int acc = accept(l, NULL, NULL);
	pthread_t w;
	pthread_create(&w, NULL, worker, (void *)(long)acc);
	static char msg[200000], echo[200000];
	fill_pattern(msg, sizeof(msg), 3);
	pid_t p = fork();
	if (p == 0) {
		if (write(cl, msg, sizeof(msg)) != (long)sizeof(msg))
			_exit(1);
		_exit(0);
	}
	r = 0;
	while (r < (long)sizeof(echo)) {
		long k = read(cl, echo + r, sizeof(echo) - (size_t)r);
		if (k <= 0)
			break;
		r += k;
	}
	reap("writer", p);
	say("echo %ld bytes intact %d", r, r == (long)sizeof(msg) && !memcmp(msg, echo, sizeof(msg)));
	shutdown(cl, SHUT_WR);
	long total = 0;
	if (read(done_pipe[0], &total, sizeof(total)) != sizeof(total))
		die("done");
	pthread_join(w, NULL);
	say("worker saw %ld bytes", total);
	close(cl);
	close(l);

	/* Slow and fast readers on one thread: the slow one's unread data must
	 * not stall the fast one. */
	int sc, ss, fc, fs;
	nb_pair(&sc, &ss);
	nb_pair(&fc, &fs);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = ss };
	epoll_ctl(ep, EPOLL_CTL_ADD, ss, &ev);
	ev.data.fd = fs;
	epoll_ctl(ep, EPOLL_CTL_ADD, fs, &ev);
	static char junk[1 << 16];
	long flooded = 0;
	for (int i = 0; i < 200; i++) { /* fill the slow path as far as it goes */
		long k = send(sc, junk, sizeof(junk), MSG_DONTWAIT);
		if (k <= 0)
			break;
		flooded += k;
		struct epoll_event out[2];
		epoll_wait(ep, out, 2, 0);
	}
	say("slow socket took some data %d", flooded > 0);
	long fast = 0;
	for (int i = 0; i < 2000 && fast < 1000000; i++) {
		send(fc, junk, 1000, MSG_DONTWAIT);
		struct epoll_event out[2];
		int n = epoll_wait(ep, out, 2, 1000);
		for (int j = 0; j < n; j++)
			if (out[j].data.fd == fs) {
				long k;
				while ((k = recv(fs, junk, sizeof(junk), 0)) > 0)
					fast += k;
			}
	}
	say("fast socket got its megabyte %d", fast >= 1000000);
	long slow = 0, k;
	while (slow < flooded) {
		size_t want = (size_t)(flooded - slow) < sizeof(junk) ? (size_t)(flooded - slow) : sizeof(junk);
		if ((k = recv_all_nb(ss, junk, want)) <= 0)
			break;
		slow += k;
	}
	say("slow socket then got everything %d", slow == flooded);

	int ok = 1;
	for (int i = 0; i < 50; i++) {
		int a1, b1;
		nb_pair(&a1, &b1);
		pthread_t t;
		pthread_create(&t, NULL, close_and_exit, (void *)(long)a1);
		pthread_join(t, NULL);
		char x;
		ok &= recv_all_nb(b1, &x, 1) == 1 && x == 'x';
		close(b1);
	}
	say("close then thread exit, 50 times: each byte arrived %d", ok);
	return 0;
}

/* udp: what the UDP engine must keep whatever the timing (udp.sh runs
 * each case plain and under the library).
 *
 *   burst RCVBUF ROUNDS PER SIZE
 *       A socket with SO_RCVBUF=RCVBUF, armed, that nobody reads: ROUNDS
 *       times a child process sends it PER datagrams of SIZE bytes (few
 *       enough for the kernel's queue), then the program reads another
 *       socket (under the library the engine's receive pulls them in).  Then
 *       every datagram it can read is counted: "received K".  The kernel
 *       keeps what its queue holds; the engine may add at most its bound
 *       (SO_RCVBUF as the kernel reports it, counted in memory) on top,
 *       never all ROUNDS x PER.
 *   kwait
 *       Four blocking reads that each wait (SO_RCVTIMEO ends them), then
 *       eight blocking reads of datagrams already sent, then four
 *       nonblocking ones: under the library the socket's reads go to the
 *       kernel after the fourth wait (direct_on 1), that wait and the next
 *       twelve reads are the kernel's (direct 13: a blocking read handed
 *       to the kernel counts when it is made), and the fourth nonblocking read with
 *       a datagram gives it back to the engine (direct_off 1).  Prints
 *       what the reads returned.
 *   kwaitsend
 *       A socket that sends two datagrams to a peer (the kernel takes
 *       them: its destination may be queued to from then on), waits four
 *       times (SO_RCVTIMEO), then answers each of nine requests with one
 *       reply, two in every third round.  Under the library its reads are
 *       the kernel's after the fourth wait, and so is the first reply
 *       after each read; only the second replies may be queued, and the
 *       first two of them are the kernel's too, before the drain thread
 *       runs (udp_queued 1).  The peer, connected
 *       (never queued), reads everything at the end; prints what it got.
 *   kwaitretry
 *       A reader that waits four times (SO_RCVTIMEO), then reads 1100
 *       datagrams with blocking reads, waits four times again, reads
 *       1100 more, reads four with nonblocking reads, waits four times
 *       and reads 1100 more (each datagram sent just before its read).
 *       Under the library the first waits send its reads to the kernel;
 *       the first 1100 reads give it back to the engine at the 1024th (a
 *       retry), where the next reads wait in the ring for the receive to
 *       bring each datagram, so four of them send it back (the second
 *       direct_on); the retry after that comes after 2048 reads, so the
 *       second 1100 leave it with the kernel; the nonblocking reads give
 *       it back (direct_off), the next waits send it to the kernel again,
 *       and the third 1100 give it back at the 1024th (an end by
 *       nonblocking reads starts the interval again), whose tail sends
 *       it back once more: direct_on 4, direct_off 3 (5 and 4 with a
 *       retry every 1024 reads; direct_off 2 without the restart).
 *       Prints what each phase read.
 *   mmsg N
 *       Another socket sends N numbered datagrams of varying size to one
 *       with a large SO_RCVBUF, in rounds of 100; after each round the
 *       program reads them with recvmmsg, 16 at a time (a blocking one,
 *       then nonblocking ones until EAGAIN), checking each number, size
 *       and source.  Prints "complete N" when all arrived once, in order,
 *       with their sizes.  Under the library the first recvmmsg that finds
 *       nothing held sends the socket's reads to the kernel (direct_on 1):
 *       its recvmmsg takes a whole vector per system call.
 *   seq SENDERS RECEIVERS N
 *       SENDERS threads each send N numbered datagrams to one socket with
 *       a large SO_RCVBUF (SO_RCVBUFFORCE), read by RECEIVERS threads
 *       until all have arrived.  Prints "complete" when every datagram
 *       arrived exactly once and, within each receiver, each sender's
 *       numbers increase; else what went wrong (and on stderr, the first
 *       datagrams out of order or malformed, per receiver).
 *   stream N SIZE
 *       An unconnected socket (armed by its first send) sends N numbered
 *       datagrams of SIZE bytes, one sendto each, to a socket of the same
 *       thread, which reads what has arrived (nonblocking) after every
 *       100; then whatever is left, waiting with poll.  Prints "complete"
 *       when every datagram arrived once, in order, with its size.  Under
 *       the library the datagrams are queued and leave in batches
 *       (udp_queued), runs of one size as one UDP_SEGMENT message
 *       (udp_gso_sends), and every read that finds nothing sends them.
 *   paced N
 *       The same sender, but each datagram followed by a sleep (nanosleep,
 *       usleep, clock_nanosleep, sched_yield in turn), then all read.
 *       Under the library each datagram is queued and leaves before the
 *       sleep: none ever travels with another (udp_gso_sends 0).
 *   nbsend ADDR PORT N SIZE
 *       A nonblocking unconnected socket with the smallest SO_SNDBUF
 *       sends N numbered datagrams of SIZE bytes to ADDR:PORT as fast as
 *       it can: on EAGAIN it waits for POLLOUT with poll and sends the
 *       same one again.  Prints "sent N" and how many EAGAINs it met
 *       (on stderr: their number depends on timing).
 *   mixsend ADDR PORT N SIZE1 SIZE2
 *       A blocking unconnected socket with default buffers sends N numbered
 *       datagrams to ADDR:PORT, the first half of SIZE1 bytes and the
 *       second of SIZE2, as fast as it can; prints "sent N".
 *   sinkseq PORT N
 *       Receives on 0.0.0.0:PORT until N numbered datagrams arrived
 *       (waiting up to 10 s for each); prints "complete" when each came
 *       exactly once, else what went wrong.  (Not their order: a veth
 *       pair may reorder what the sender sent from two CPUs.)
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void die(const char *m)
{
	perror(m);
	exit(2);
}

static int bound_sock(struct sockaddr_in *a)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(*a);
	if (s < 0 || bind(s, (struct sockaddr *)&any, sizeof(any)) || getsockname(s, (struct sockaddr *)a, &l))
		die("udp socket");
	return s;
}

static int mmsg(int n)
{
	struct sockaddr_in a, b;
	int s = bound_sock(&a), t = bound_sock(&b), big = 32 << 20;
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	enum { V = 16 };
	static char bufs[V][2048];
	struct mmsghdr v[V];
	struct iovec iov[V];
	struct sockaddr_in from[V];
	int next = 0;
	for (int round = 0; round * 100 < n; round++) {
		for (int i = round * 100; i < n && i < round * 100 + 100; i++) {
			char m[2048] = { 0 };
			memcpy(m, &i, sizeof(i));
			if (sendto(t, m, sizeof(i) + (size_t)(i % 1500), 0, (struct sockaddr *)&a, sizeof(a)) < 0)
				die("mmsg: sendto");
		}
		int flags = 0; /* (the first waits for the round, the rest do not) */
		while (next < n && next < round * 100 + 100) {
			for (int i = 0; i < V; i++) {
				iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
				memset(&v[i], 0, sizeof(v[i]));
				v[i].msg_hdr.msg_iov = &iov[i];
				v[i].msg_hdr.msg_iovlen = 1;
				v[i].msg_hdr.msg_name = &from[i];
				v[i].msg_hdr.msg_namelen = sizeof(from[i]);
			}
			int k = recvmmsg(s, v, V, flags, NULL);
			if (k <= 0) {
				printf("mmsg: recvmmsg %d (%s) after %d\n", k, k < 0 ? strerror(errno) : "", next);
				return 1;
			}
			for (int i = 0; i < k; i++, next++) {
				int num;
				memcpy(&num, bufs[i], sizeof(num));
				if (num != next || v[i].msg_len != sizeof(num) + (unsigned)(next % 1500) ||
				    from[i].sin_port != b.sin_port || v[i].msg_hdr.msg_flags) {
					printf("mmsg: datagram %d: number %d, %u bytes\n", next, num, v[i].msg_len);
					return 1;
				}
			}
			flags = MSG_DONTWAIT;
		}
	}
	printf("complete %d\n", next);
	return 0;
}

static int burst(int rcvbuf, int rounds, int per, int size)
{
	int cmd[2], ack[2];
	if (pipe(cmd) || pipe(ack))
		die("pipe");
	/* The sender first (the socket under test must not be open in two
	 * processes: that one the engine leaves to the kernel). */
	pid_t kid = fork();
	if (kid < 0)
		die("fork");
	if (kid == 0) {
		struct sockaddr_in to;
		close(cmd[1]);
		close(ack[0]);
		if (read(cmd[0], &to, sizeof(to)) != sizeof(to))
			_exit(1);
		/* Connected: its sends are the kernel's, one datagram each,
		 * in both runs (the library sends an unconnected socket's in
		 * UDP_SEGMENT batches, whose datagrams the receiver's queue
		 * accounts smaller: more fit). */
		int s = socket(AF_INET, SOCK_DGRAM, 0);
		char *m = calloc(1, (size_t)size), c;
		if (s < 0 || connect(s, (struct sockaddr *)&to, sizeof(to)))
			_exit(1);
		while (read(cmd[0], &c, 1) == 1) {
			for (int i = 0; i < per; i++)
				send(s, m, (size_t)size, 0);
			if (write(ack[1], "a", 1) != 1)
				_exit(1);
		}
		_exit(0);
	}
	struct sockaddr_in ta, pa;
	int t = bound_sock(&ta), poke = bound_sock(&pa);
	if (setsockopt(t, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)))
		die("SO_RCVBUF");
	static char buf[65536];
	/* armed: a first read (nothing there yet) */
	if (recv(t, buf, sizeof(buf), MSG_DONTWAIT) != -1 || errno != EAGAIN ||
	    recv(poke, buf, sizeof(buf), MSG_DONTWAIT) != -1 || errno != EAGAIN)
		die("first read");
	if (write(cmd[1], &ta, sizeof(ta)) != sizeof(ta))
		die("address");
	for (int r = 0; r < rounds; r++) {
		char c;
		/* PER datagrams reach the socket's queue (within the kernel's
		 * bound), then a read of another socket that finds nothing:
		 * under the library the engine's receive pulls them in. */
		if (write(cmd[1], "g", 1) != 1 || read(ack[0], &c, 1) != 1)
			die("round");
		recv(poke, buf, sizeof(buf), MSG_DONTWAIT);
	}
	close(cmd[1]);
	int st;
	waitpid(kid, &st, 0);
	long k = 0;
	while (recv(t, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		k++;
	printf("received %ld\n", k);
	return 0;
}

/* A bound socket whose blocking reads wait 20 ms at most (SO_RCVTIMEO):
 * each read with nothing to read is a wait that ends by itself. */
static int waiting_sock(struct sockaddr_in *a)
{
	int s = bound_sock(a);
	struct timeval tv = { 0, 20000 };
	if (setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		die("SO_RCVTIMEO");
	return s;
}

static int kwait(void)
{
	struct sockaddr_in a, b;
	int s = waiting_sock(&a), t = bound_sock(&b);
	char buf[64];
	for (int i = 0; i < 4; i++) {
		ssize_t r = recv(s, buf, sizeof(buf), 0);
		printf("wait %d: %zd %s\n", i, r, r < 0 ? strerror(errno) : "");
	}
	for (int i = 0; i < 12; i++) {
		char m[16];
		int k = snprintf(m, sizeof(m), "d%d-%s", i, i % 4 ? "long" : "x");
		sendto(t, m, (size_t)k, 0, (struct sockaddr *)&a, sizeof(a));
	}
	/* The kernel's reads in every shape a program uses: one buffer (the
	 * library reads with recvfrom) or two (recvmsg), cut short or not,
	 * with MSG_TRUNC or not, with the source address or not. */
	for (int i = 0; i < 8; i++) {
		struct sockaddr_in from;
		socklen_t fl = sizeof(from);
		char x[4], y[4];
		struct iovec v[2] = { { x, sizeof(x) }, { y, sizeof(y) } };
		struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = v, .msg_iovlen = 1 };
		ssize_t r;
		memset(buf, 0, sizeof(buf));
		memset(x, 0, sizeof(x));
		memset(y, 0, sizeof(y));
		switch (i % 4) {
		case 0:
			r = recv(s, buf, i ? 3 : sizeof(buf), 0);
			printf("blocking %d recv: %zd %.*s\n", i, r, (int)(r > 0 ? r : 0), buf);
			break;
		case 1:
			r = recvfrom(s, buf, 3, MSG_TRUNC, (struct sockaddr *)&from, &fl);
			printf("blocking %d recvfrom(MSG_TRUNC): %zd %.3s from %s len %u\n", i, r, buf,
			       from.sin_port == b.sin_port ? "the sender" : "elsewhere", (unsigned)fl);
			break;
		case 2:
			r = recvmsg(s, &m, 0);
			printf("blocking %d recvmsg 1 iov: %zd %.4s flags %s namelen %u %s\n", i, r, x,
			       m.msg_flags & MSG_TRUNC ? "TRUNC" : "-", (unsigned)m.msg_namelen,
			       from.sin_port == b.sin_port ? "the sender" : "elsewhere");
			break;
		default:
			m.msg_iovlen = 2;
			m.msg_name = NULL;
			m.msg_namelen = 0;
			r = recvmsg(s, &m, 0);
			printf("blocking %d recvmsg 2 iovs: %zd %.4s|%.4s flags %s\n", i, r, x, y,
			       m.msg_flags & MSG_TRUNC ? "TRUNC" : "-");
		}
	}
	for (int i = 0; i < 4; i++) {
		ssize_t r = recv(s, buf, sizeof(buf), MSG_DONTWAIT);
		printf("nonblocking %d: %.*s\n", i, (int)(r > 0 ? r : 0), buf);
	}
	return 0;
}

static int kwaitretry(void)
{
	struct sockaddr_in a, b;
	int s = waiting_sock(&a), t = bound_sock(&b);
	char buf[64];
	int seq = 0;
	const char *phases = "WRWRNWR";
	for (const char *p = phases; *p; p++) {
		int n = *p == 'W' || *p == 'N' ? 4 : 1100, ok = 0;
		for (int i = 0; i < n; i++) {
			if (*p == 'W') {
				ok += recv(s, buf, sizeof(buf), 0) < 0 && errno == EAGAIN;
				continue;
			}
			char m[16];
			int k = snprintf(m, sizeof(m), "d%d", seq++);
			if (sendto(t, m, (size_t)k, 0, (struct sockaddr *)&a, sizeof(a)) != k)
				die("sendto");
			ssize_t r = recv(s, buf, sizeof(buf), *p == 'N' ? MSG_DONTWAIT : 0);
			ok += r == k && !memcmp(buf, m, (size_t)k);
		}
		printf("phase %c: %d of %d\n", *p, ok, n);
	}
	return 0;
}

static int kwaitsend(void)
{
	struct sockaddr_in a, b;
	int s = waiting_sock(&a), t = bound_sock(&b);
	if (connect(t, (struct sockaddr *)&a, sizeof(a)))
		die("kwaitsend setup");
	char buf[64];
	for (int i = 0; i < 2; i++)
		printf("hello %d: %zd\n", i, sendto(s, "hi", 2, 0, (struct sockaddr *)&b, sizeof(b)));
	for (int i = 0; i < 4; i++) {
		ssize_t r = recv(s, buf, sizeof(buf), 0);
		printf("wait %d: %zd %s\n", i, r, r < 0 ? strerror(errno) : "");
	}
	for (int i = 0; i < 9; i++) {
		char q[8];
		int k = snprintf(q, sizeof(q), "q%d", i);
		if (send(t, q, (size_t)k, 0) != k)
			die("request");
		ssize_t r = recv(s, buf, sizeof(buf), 0);
		printf("request %d: %zd %.*s\n", i, r, (int)(r > 0 ? r : 0), buf);
		for (int j = 0; j < (i % 3 == 2 ? 2 : 1); j++) {
			k = snprintf(q, sizeof(q), "r%d.%d", i, j);
			printf("reply %d.%d: %zd\n", i, j, sendto(s, q, (size_t)k, 0, (struct sockaddr *)&b, sizeof(b)));
		}
	}
	ssize_t r;
	while ((r = recv(t, buf, sizeof(buf), MSG_DONTWAIT)) >= 0)
		printf("peer got: %.*s\n", (int)r, buf);
	printf("peer then: %s\n", strerror(errno));
	return 0;
}

struct seq_ctx {
	int sock;
	struct sockaddr_in to;
	int senders, n, id;
	long total;             /* all datagrams, for the receivers */
	long *got;              /* [sender * n + seq]: times received */
	pthread_mutex_t *mu;
	long *count;
	int bad;
};

static void *sender(void *arg)
{
	struct seq_ctx *c = arg;
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	for (int i = 0; i < c->n; i++) {
		int m[2] = { c->id, i };
		while (sendto(s, m, sizeof(m), 0, (struct sockaddr *)&c->to, sizeof(c->to)) < 0 && errno == ENOBUFS)
			;
		if (i % 64 == 63)
			usleep(100); /* (paced: the point is order and loss, not rate) */
	}
	close(s);
	return NULL;
}

static void *receiver(void *arg)
{
	struct seq_ctx *c = arg;
	int *last = calloc((size_t)c->senders, sizeof(int));
	for (int i = 0; i < c->senders; i++)
		last[i] = -1;
	for (;;) {
		pthread_mutex_lock(c->mu);
		int all = *c->count >= c->total;
		pthread_mutex_unlock(c->mu);
		if (all)
			break;
		int m[2];
		ssize_t r = recv(c->sock, m, sizeof(m), 0);
		if (r < 0 && errno == EAGAIN)
			break; /* (SO_RCVTIMEO: nothing for two seconds) */
		if (r != sizeof(m) || m[0] < 0 || m[0] >= c->senders || m[1] < 0 || m[1] >= c->n) {
			if (c->bad < 10) /* (what it was, on stderr: ctest shows it) */
				fprintf(stderr, "seq: receiver %d: %zd bytes (%s), sender %d number %d\n", c->id, r,
					r < 0 ? strerror(errno) : "", r >= 8 ? m[0] : -1, r >= 8 ? m[1] : -1);
			c->bad++;
			continue;
		}
		if (m[1] <= last[m[0]]) {
			if (c->bad < 10)
				fprintf(stderr, "seq: receiver %d: sender %d's %d after its %d\n", c->id, m[0], m[1],
					last[m[0]]);
			c->bad++; /* out of order within this receiver */
		}
		last[m[0]] = m[1];
		pthread_mutex_lock(c->mu);
		c->got[(long)m[0] * c->n + m[1]]++;
		(*c->count)++;
		pthread_mutex_unlock(c->mu);
	}
	free(last);
	return NULL;
}

static int seq(int senders, int receivers, int n)
{
	struct sockaddr_in a;
	int s = bound_sock(&a);
	int big = 32 << 20;
	if (setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)))
		setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	struct timeval tv = { 2, 0 };
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	long count = 0;
	long *got = calloc((size_t)senders * (size_t)n, sizeof(long));
	struct seq_ctx *rc = calloc((size_t)receivers, sizeof(*rc));
	struct seq_ctx *sc = calloc((size_t)senders, sizeof(*sc));
	pthread_t *rt = calloc((size_t)receivers, sizeof(pthread_t)), *st = calloc((size_t)senders, sizeof(pthread_t));
	for (int i = 0; i < receivers; i++) {
		rc[i] = (struct seq_ctx){ .sock = s, .senders = senders, .n = n, .total = (long)senders * n, .got = got, .id = i,
					  .mu = &mu, .count = &count };
		pthread_create(&rt[i], NULL, receiver, &rc[i]);
	}
	for (int i = 0; i < senders; i++) {
		sc[i] = (struct seq_ctx){ .to = a, .n = n, .id = i };
		pthread_create(&st[i], NULL, sender, &sc[i]);
	}
	for (int i = 0; i < senders; i++)
		pthread_join(st[i], NULL);
	for (int i = 0; i < receivers; i++)
		pthread_join(rt[i], NULL);
	long missing = 0, dup = 0, bad = 0;
	for (long i = 0; i < (long)senders * n; i++) {
		missing += got[i] == 0;
		dup += got[i] > 1;
	}
	for (int i = 0; i < receivers; i++)
		bad += rc[i].bad;
	if (!missing && !dup && !bad)
		printf("complete\n");
	else
		printf("missing %ld duplicated %ld out of order or malformed %ld\n", missing, dup, bad);
	return 0;
}

/* An unconnected sender and a receiver with a large buffer, bound on
 * loopback (its address in *a); -1 after a message. */
static int tx_rx_pair(const char *who, int *tx, int *rx, struct sockaddr_in *a)
{
	*tx = socket(AF_INET, SOCK_DGRAM, 0);
	*rx = socket(AF_INET, SOCK_DGRAM, 0);
	*a = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(*a);
	int big = 16 << 20;
	if (*tx < 0 || *rx < 0 || bind(*rx, (struct sockaddr *)a, sizeof(*a)) ||
	    getsockname(*rx, (struct sockaddr *)a, &al) ||
	    setsockopt(*rx, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big))) {
		perror(who);
		return -1;
	}
	return 0;
}

static int stream(int n, int size)
{
	int tx, rx;
	struct sockaddr_in a;
	if (tx_rx_pair("stream", &tx, &rx, &a) < 0)
		return 1;
	char buf[65536];
	int next = 0, bad = 0;
	for (int i = 0; i < n || next < n; i++) {
		if (i < n) {
			memset(buf, 0, (size_t)size);
			memcpy(buf, &i, sizeof(i));
			if (sendto(tx, buf, (size_t)size, 0, (struct sockaddr *)&a, sizeof(a)) != size)
				bad++;
			if ((i + 1) % 100 && i + 1 < n)
				continue;
		} else {
			struct pollfd p = { rx, POLLIN, 0 };
			if (poll(&p, 1, 5000) != 1) {
				printf("stream: %d of %d arrived, then none for 5 s\n", next, n);
				return 1;
			}
		}
		ssize_t r;
		while ((r = recv(rx, buf, sizeof(buf), MSG_DONTWAIT)) >= 0) {
			int k;
			memcpy(&k, buf, sizeof(k));
			if (k != next || r != size)
				bad++;
			next = k + 1;
		}
	}
	if (bad)
		printf("stream: %d datagrams failed, came out of order or with the wrong size\n", bad);
	else
		printf("complete\n");
	return bad != 0;
}

static int paced(int n)
{
	int tx, rx;
	struct sockaddr_in a;
	if (tx_rx_pair("paced", &tx, &rx, &a) < 0)
		return 1;
	for (int i = 0; i < n; i++) {
		if (sendto(tx, &i, sizeof(i), 0, (struct sockaddr *)&a, sizeof(a)) != sizeof(i))
			return 1;
		struct timespec ts = { 0, 10000 };
		switch (i % 4) {
		case 0: nanosleep(&ts, NULL); break;
		case 1: usleep(10); break;
		case 2: clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL); break;
		default: sched_yield();
		}
	}
	for (int next = 0; next < n;) {
		struct pollfd p = { rx, POLLIN, 0 };
		int k;
		if (poll(&p, 1, 5000) != 1 || recv(rx, &k, sizeof(k), 0) != sizeof(k) || k != next) {
			printf("paced: datagram %d missing or out of order\n", next);
			return 1;
		}
		next++;
	}
	printf("complete\n");
	return 0;
}

static int nbsend(const char *addr, int port, int n, int size)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), small = 1;
	char buf[65536] = { 0 };
	if (s < 0 || inet_pton(AF_INET, addr, &a.sin_addr) != 1 ||
	    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small))) {
		perror("nbsend");
		return 1;
	}
	long again = 0;
	for (int i = 0; i < n;) {
		memcpy(buf, &i, sizeof(i));
		if (sendto(s, buf, (size_t)size, 0, (struct sockaddr *)&a, sizeof(a)) == size) {
			i++;
			continue;
		}
		if (errno != EAGAIN) {
			perror("nbsend: sendto");
			return 1;
		}
		again++;
		struct pollfd p = { s, POLLOUT, 0 };
		if (poll(&p, 1, 10000) != 1) {
			printf("nbsend: no room for 10 s at %d\n", i);
			return 1;
		}
	}
	fprintf(stderr, "nbsend: %ld EAGAIN\n", again);
	printf("sent %d\n", n);
	close(s);
	return 0;
}

static int mixsend(const char *addr, int port, int n, int size1, int size2)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	char buf[65536] = { 0 };
	if (s < 0 || inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		perror("mixsend");
		return 1;
	}
	for (int i = 0; i < n; i++) {
		int size = i < n / 2 ? size1 : size2;
		memcpy(buf, &i, sizeof(i));
		if (sendto(s, buf, (size_t)size, 0, (struct sockaddr *)&a, sizeof(a)) != size) {
			perror("mixsend: sendto");
			return 1;
		}
	}
	printf("sent %d\n", n);
	close(s);
	return 0;
}

/* The numbers below n not seen, as ranges ("0-129 2999"): which end of
 * the stream went missing says where to look (the first ones: sent before
 * the sink's socket was there). */
static void print_missing(const char *seen, int n)
{
	for (int i = 0; i < n; i++) {
		if (seen[i])
			continue;
		int j = i;
		while (j + 1 < n && !seen[j + 1])
			j++;
		if (j > i)
			printf(" %d-%d", i, j);
		else
			printf(" %d", i);
		i = j;
	}
	printf("\n");
}

static int sinkseq(int port, int n)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)port) };
	int s = socket(AF_INET, SOCK_DGRAM, 0), big = 32 << 20;
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_RCVBUFFORCE, &big, sizeof(big)) ||
	    bind(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("sinkseq");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	char buf[65536], *seen = calloc(1, (size_t)n);
	for (int got = 0; got < n; got++) {
		struct pollfd p = { s, POLLIN, 0 };
		int k;
		if (poll(&p, 1, 10000) != 1) {
			printf("sinkseq: %d of %d arrived, then none for 10 s; missing", got, n);
			print_missing(seen, n);
			return 1;
		}
		if (recv(s, buf, sizeof(buf), 0) < (ssize_t)sizeof(k) || (memcpy(&k, buf, sizeof(k)), k < 0 || k >= n) ||
		    seen[k]++) {
			printf("sinkseq: a datagram not sent, or twice\n");
			return 1;
		}
	}
	printf("complete\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[1], "burst"))
		return burst(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (argc == 2 && !strcmp(argv[1], "kwait"))
		return kwait();
	if (argc == 2 && !strcmp(argv[1], "kwaitsend"))
		return kwaitsend();
	if (argc == 2 && !strcmp(argv[1], "kwaitretry"))
		return kwaitretry();
	if (argc == 3 && !strcmp(argv[1], "mmsg"))
		return mmsg(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "seq"))
		return seq(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "nbsend"))
		return nbsend(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	if (argc == 7 && !strcmp(argv[1], "mixsend"))
		return mixsend(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]), atoi(argv[6]));
	if (argc == 4 && !strcmp(argv[1], "sinkseq"))
		return sinkseq(atoi(argv[2]), atoi(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "paced"))
		return paced(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "stream"))
		return stream(atoi(argv[2]), atoi(argv[3]));
	fprintf(stderr, "usage: udp burst RCVBUF ROUNDS PER SIZE | kwait | kwaitsend | kwaitretry | mmsg N | seq SENDERS RECEIVERS N | stream N SIZE | paced N\n"
			"       | nbsend ADDR PORT N SIZE | sinkseq PORT N\n");
	return 2;
}

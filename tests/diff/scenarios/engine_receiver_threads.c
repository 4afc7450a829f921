/* engine_receiver_threads: a single-threaded program that only receives
 * (blocking recvfrom on a UDP socket, blocking recv of a TCP stream, both
 * from a forked sender, each round acknowledged through a pipe) stays
 * single-threaded: the library's drain thread starts only when the
 * engine first queues a send (drain.c), and this program never sends on
 * a socket.  Its thread count (/proc/self/status) is printed with the
 * bytes: a second thread would change what the program sees (a fork's
 * child, libc's locking), so it must be the kernel path's 1.
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"

#define ROUNDS 200
#define DGRAMS 8
#define CHUNK 1000

/* fd: the pipe's read end, the receiver's address and then an ack per
 * round. */
static void sender(int c, int fd)
{
	struct sockaddr_in to;
	if (read_full(fd, &to, sizeof(to)))
		_exit(2);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	if (u < 0)
		_exit(3);
	char buf[CHUNK];
	for (int i = 0; i < ROUNDS; i++) {
		for (int k = 0; k < DGRAMS; k++) {
			size_t n = 1 + (size_t)((i * DGRAMS + k) % 300);
			fill_pattern(buf, n, (unsigned)(i * DGRAMS + k));
			if (sendto(u, buf, n, 0, (struct sockaddr *)&to, sizeof(to)) != (long)n)
				_exit(4);
		}
		fill_pattern(buf, CHUNK, (unsigned)i + 7);
		if (send(c, buf, CHUNK, 0) != CHUNK)
			_exit(5);
		char ack;
		if (read_full(fd, &ack, 1))
			_exit(6);
	}
	close(c);
}

static int threads(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	int n = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

int main(void)
{
	int pp[2];
	if (pipe(pp))
		die("pipe");
	int u = udp_bound();
	struct sockaddr_in me;
	socklen_t ml = sizeof(me);
	if (getsockname(u, (struct sockaddr *)&me, &ml))
		die("getsockname");
	pid_t p;
	int c = forked_peer_conn(sender, pp[0], pp[1], &p);
	if (write(pp[1], &me, sizeof(me)) != sizeof(me))
		die("write");
	say("threads before: %d", threads());
	long dgrams = 0, bad = 0, bytes = 0;
	uint32_t sum = 0;
	char buf[CHUNK], want[CHUNK];
	for (int i = 0; i < ROUNDS; i++) {
		for (int k = 0; k < DGRAMS; k++) {
			size_t n = 1 + (size_t)((i * DGRAMS + k) % 300);
			fill_pattern(want, n, (unsigned)(i * DGRAMS + k));
			long r = recvfrom(u, buf, sizeof(buf), 0, NULL, NULL);
			if (r != (long)n || memcmp(buf, want, n)) {
				if (bad++ < 5)
					say("round %d datagram %d: %ld bytes (%s)", i, k, r, r < 0 ? scn_errname(errno) : "");
				continue;
			}
			dgrams++;
			sum = sum * 31 + scn_sum(buf, n);
		}
		if (recv_full(c, buf, CHUNK)) {
			say("round %d: the stream ended early", i);
			break;
		}
		fill_pattern(want, CHUNK, (unsigned)i + 7);
		if (memcmp(buf, want, CHUNK) && bad++ < 5)
			say("round %d: stream bytes differ", i);
		bytes += CHUNK;
		sum = sum * 31 + scn_sum(buf, CHUNK);
		if (write(pp[1], "a", 1) != 1)
			die("ack");
	}
	R("recv at the end", recv(c, buf, sizeof(buf), 0));
	say("datagrams = %ld, stream bytes = %ld, wrong = %ld, sum %08x", dgrams, bytes, bad, sum);
	say("threads after: %d", threads());
	reap("sender", p);
	return 0;
}

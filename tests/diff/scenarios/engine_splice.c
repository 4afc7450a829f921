/* engine_splice: splice from a socket whose input the engine has read
 * ahead, as a proxy does (HAProxy's splice-auto: headers read with recv,
 * bodies moved with splice, keep-alive connections reused).  The bytes
 * the engine holds must come first, into the pipe, in order, then the
 * kernel's; readiness must never say readable for bytes splice cannot
 * get.  Cases: held bytes after a partial recv of "headers"; a reused
 * keep-alive socket (recv, splice, recv, splice); nonblocking and
 * blocking sockets; SPLICE_F_NONBLOCK and SPLICE_F_MORE; a pipe that is
 * full (EAGAIN with SPLICE_F_NONBLOCK, or a nonblocking pipe); len smaller
 * than what is held.
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <fcntl.h>

static char body[3000];

/* The peer sends a "request": 8 header bytes, then n body bytes. */
static void request(int c, size_t n)
{
	if (send(c, "HDR:0123", 8, 0) != 8 || send_all_nb(c, body, n) != (long)n)
		die("peer send");
}

/* Drain n bytes from the pipe: are they the body's, from off? */
static void pipe_out(const char *label, int p0, long n, size_t off)
{
	static char got[65536];
	if (n <= 0)
		return;
	if (read_full(p0, got, (size_t)n))
		die("pipe");
	say("%s: %ld bytes through the pipe, in order: %d", label, n, memcmp(got, body + off, (size_t)n) == 0);
}

static void keepalive(int c, int s, int p[2], unsigned flags, const char *mode)
{
	char hdr[8];
	say("-- %s", mode);
	for (int round = 0; round < 3; round++) {
		request(c, 1000);
		wait_fd(s, POLLIN, 5000);
		msleep(20); /* (the body is in: the engine has read it ahead) */
		R("recv the header", recv(s, hdr, sizeof(hdr), MSG_WAITALL));
		long total = 0;
		while (total < 1000) {
			long n = splice(s, NULL, p[1], NULL, 1000 - (size_t)total, flags);
			if (n < 0 && errno == EAGAIN) {
				wait_fd(s, POLLIN, 5000);
				continue;
			}
			if (n <= 0) {
				R("splice", n);
				break;
			}
			static char got[1000];
			if (read_full(p[0], got, (size_t)n))
				die("pipe");
			if (memcmp(got, body + total, (size_t)n))
				say("round %d: bytes %ld..%ld out of order", round, total, total + n);
			total += n;
		}
		say("round %d: %ld body bytes spliced, in order", round, total);
	}
	/* nothing left: readable must be false, splice EAGAIN */
	struct pollfd q = { s, POLLIN, 0 };
	R("poll after the last body", poll(&q, 1, 0));
	if (fcntl(s, F_GETFL) & O_NONBLOCK) /* (SPLICE_F_NONBLOCK is the pipe's: a blocking socket waits) */
		R("splice with nothing left", splice(s, NULL, p[1], NULL, 100, SPLICE_F_NONBLOCK));
}

int main(void)
{
	alarm(60);
	fill_pattern(body, sizeof(body), 11);
	int p[2];
	if (pipe(p))
		die("pipe");

	/* nonblocking socket, reused, SPLICE_F_MORE */
	int c, s;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	keepalive(c, s, p, SPLICE_F_MORE, "nonblocking, SPLICE_F_MORE");

	/* len smaller than what is held */
	request(c, 1000);
	wait_fd(s, POLLIN, 5000);
	msleep(20);
	char hdr[8];
	R("recv the header", recv(s, hdr, sizeof(hdr), 0));
	long n = R("splice 300 of the 1000 held", splice(s, NULL, p[1], NULL, 300, 0));
	pipe_out("first part", p[0], n, 0);
	n = R("splice the rest", splice(s, NULL, p[1], NULL, 5000, SPLICE_F_NONBLOCK));
	pipe_out("the rest", p[0], n, 300);

	/* a full pipe */
	request(c, 1000);
	wait_fd(s, POLLIN, 5000);
	msleep(20);
	R("recv the header", recv(s, hdr, sizeof(hdr), 0));
	R("F_SETPIPE_SZ 4096", fcntl(p[1], F_SETPIPE_SZ, 4096));
	static char fill[4096];
	R("fill the pipe", write(p[1], fill, sizeof(fill)));
	R("splice into a full pipe, SPLICE_F_NONBLOCK", splice(s, NULL, p[1], NULL, 1000, SPLICE_F_NONBLOCK));
	set_nonblock(p[1]);
	R("splice into a full nonblocking pipe", splice(s, NULL, p[1], NULL, 1000, 0));
	fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) & ~O_NONBLOCK);
	R("empty the pipe", read_full(p[0], fill, sizeof(fill)));
	n = R("splice after the pipe emptied", splice(s, NULL, p[1], NULL, 1000, 0));
	pipe_out("after the pipe emptied", p[0], n, 0);
	R("F_SETPIPE_SZ 65536", fcntl(p[1], F_SETPIPE_SZ, 65536));
	close(c);
	close(s);

	/* blocking socket, reused */
	int bc, bs;
	tcp_pair(&bc, &bs);
	set_nonblock(bc);
	for (int i = 0; i < 6; i++) { /* armed by reading */
		send(bc, "x", 1, 0);
		recv(bs, hdr, 1, 0);
	}
	keepalive(bc, bs, p, 0, "blocking");
	close(bc);
	close(bs);
	return 0;
}

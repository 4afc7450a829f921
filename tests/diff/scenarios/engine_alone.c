/* engine_alone: an event loop with one connection, one request at a time.
 * Its 64th epoll wait in a row that returns one event hands the socket's
 * reads and sends to the kernel (ringsock(7), the lone socket); a wait
 * with two events gives it back.  Whatever the path, the program sees what
 * the kernel shows: each reply intact, MSG_PEEK, FIONREAD, a partial read,
 * a second socket's event, then the peer's end (0) and EPIPE on a send.
 * The peer is a forked process answering on its own; the transcript is
 * printed only at points where the order is fixed.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#define ROUNDS 100
#define MSG 100

/* The peer: ROUNDS requests, each waiting for its reply; then two
 * messages at once; then a byte on the control pipe and its end. */
static void peer(int c, int ctl)
{
	char b[MSG], r[MSG];
	for (int i = 0; i < ROUNDS + 2; i++) {
		memset(b, 'a' + i % 26, sizeof(b));
		if (write(c, b, sizeof(b)) != sizeof(b))
			_exit(1);
		size_t got = 0;
		while (got < sizeof(r)) {
			ssize_t n = read(c, r + got, sizeof(r) - got);
			if (n <= 0)
				_exit(2);
			got += (size_t)n;
		}
		if (r[0] != 'A' + i % 26)
			_exit(3);
	}
	if (write(c, "xy", 2) != 2 || write(c, "zw", 2) != 2)
		_exit(4);
	if (write(ctl, "p", 1) != 1)
		_exit(5);
	shutdown(c, SHUT_WR);
	char z;
	while (read(c, &z, 1) > 0)
		;
	close(c);
	_exit(0);
}

/* Wait for the one event on s (with the pipe's too when want is 2). */
static int wait_one(int ep, int want)
{
	struct epoll_event ev[8];
	int n = epoll_wait(ep, ev, 8, 10000);
	if (n != want)
		die("epoll_wait: events");
	return n;
}

static void reply(int s, int i)
{
	char b[MSG];
	memset(b, 'A' + i % 26, sizeof(b));
	if (send(s, b, sizeof(b), MSG_NOSIGNAL) != sizeof(b))
		die("send");
}

static void read_req(int s)
{
	char b[MSG];
	if (recv_full(s, b, sizeof(b)))
		die("recv");
}

int main(void)
{
	int pp[2];
	pid_t p;
	if (pipe(pp) < 0)
		die("pipe");
	int s = forked_peer_conn(peer, pp[1], pp[0], &p);
	set_nonblock(s);
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN, .data.fd = s };
	struct epoll_event e2 = { .events = EPOLLIN, .data.fd = pp[0] };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, s, &e) || epoll_ctl(ep, EPOLL_CTL_ADD, pp[0], &e2))
		die("epoll_ctl");
	for (int i = 0; i < ROUNDS; i++) {
		wait_one(ep, 1);
		if (i == ROUNDS - 10) {
			/* (past the 64th lone wait: the kernel's reads) */
			char b[MSG];
			int k = 0;
			R("peek 10 of the request", recv(s, b, 10, MSG_PEEK));
			R("FIONREAD", ioctl(s, FIONREAD, &k));
			say("  FIONREAD says %d", k);
			R("read 40", recv(s, b, 40, 0));
			R("read the rest", recv(s, b, sizeof(b), 0));
			say("  last byte '%c'", b[59]);
			R("nothing more", recv(s, b, sizeof(b), MSG_DONTWAIT));
		} else {
			read_req(s);
		}
		reply(s, i);
	}
	say("%d rounds answered", ROUNDS);
	/* Two more rounds, each wake-up with the socket alone; then the two
	 * messages and the pipe's byte in one wait (its events: two). */
	for (int i = ROUNDS; i < ROUNDS + 2; i++) {
		wait_one(ep, 1);
		read_req(s);
		reply(s, i);
	}
	char z;
	for (int k = 0; k < 1000; k++) {
		int n = 0;
		if (ioctl(s, FIONREAD, &n) == 0 && n >= 4 && wait_fd(pp[0], POLLIN, 0))
			break;
		msleep(5);
	}
	wait_one(ep, 2);
	R("pipe", read(pp[0], &z, 1));
	char b[8];
	R("read the two messages", recv(s, b, sizeof(b), 0));
	for (int k = 0; k < 1000 && !wait_fd(s, POLLIN, 10); k++)
		;
	R("the peer's end", recv(s, b, sizeof(b), 0));
	R("send after the end (the peer reads on)", send(s, "q", 1, MSG_NOSIGNAL));
	close(ep);
	close(s);
	int st;
	waitpid(p, &st, 0);
	say("peer %s", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");
	return 0;
}

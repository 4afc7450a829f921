/* engine_blocking_pp: a blocking ping-pong server with one connection (as
 * sockperf's): a blocking read of each request, one send of its reply.
 * Its reads that wait go to the kernel (a waiting reader), and after 64
 * rounds in a row of one read and one send the socket is handed to the
 * kernel for good (ringsock(7): alone_handovers).  Whatever the path, the
 * program sees what the kernel shows: each request intact, MSG_PEEK,
 * FIONREAD and a partial read, a MSG_WAITALL read across two of the
 * peer's writes, SO_RCVTIMEO's EAGAIN, then the peer's end (0) and a send
 * after it.  The peer is a forked process; it moves on only when told
 * (a pipe) after the rounds, so the transcript's order is fixed.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/ioctl.h>
#include <sys/time.h>
#include <sys/wait.h>

#define ROUNDS 100
#define MSG 100

/* The peer: ROUNDS requests, each after the reply to the one before;
 * then, when told, "xy" and "zw" in two writes; when told again, the end
 * of its output, and it reads on until ours. */
static void peer(int c, int cmd)
{
	char b[MSG], r[MSG];
	for (int i = 0; i < ROUNDS; i++) {
		memset(b, 'a' + i % 26, sizeof(b));
		if (write(c, b, sizeof(b)) != sizeof(b))
			_exit(1);
		if (read_full(c, r, 1) || r[0] != 'A' + i % 26)
			_exit(2);
	}
	wait_go(cmd);
	if (write(c, "xy", 2) != 2)
		_exit(3);
	msleep(20);
	if (write(c, "zw", 2) != 2)
		_exit(4);
	wait_go(cmd);
	shutdown(c, SHUT_WR);
	char z;
	while (read(c, &z, 1) > 0)
		;
	close(c);
	_exit(0);
}

static void read_req(int s, int i)
{
	char b[MSG];
	if (recv_full(s, b, sizeof(b)))
		die("recv");
	if (b[0] != 'a' + i % 26 || b[MSG - 1] != 'a' + i % 26)
		die("request");
}

int main(void)
{
	int cmd[2];
	pid_t p;
	if (pipe(cmd) < 0)
		die("pipe");
	int s = forked_peer_conn(peer, cmd[0], cmd[1], &p);
	for (int i = 0; i < ROUNDS; i++) {
		if (i == ROUNDS - 10) {
			/* (past the 64th round: the kernel's socket) */
			char b[MSG];
			int k = 0;
			R("peek 10 of the request", recv(s, b, 10, MSG_PEEK | MSG_WAITALL));
			R("FIONREAD", ioctl(s, FIONREAD, &k));
			say("  FIONREAD says %d", k);
			R("read 40", recv(s, b, 40, MSG_WAITALL));
			R("read the rest", recv(s, b, MSG - 40, MSG_WAITALL));
			say("  last byte '%c'", b[MSG - 41]);
			R("nothing more", recv(s, b, sizeof(b), MSG_DONTWAIT));
		} else {
			read_req(s, i);
		}
		char r = (char)('A' + i % 26);
		if (send(s, &r, 1, 0) != 1)
			die("send");
	}
	say("%d rounds answered", ROUNDS);
	char b[8];
	go(cmd[1]);
	R("MSG_WAITALL across two writes", recv(s, b, 4, MSG_WAITALL));
	show("  got", b, 4);
	struct timeval tv = { 0, 30000 };
	R("SO_RCVTIMEO 30 ms", setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	R("a read that times out", recv(s, b, sizeof(b), 0));
	tv.tv_usec = 0;
	R("no SO_RCVTIMEO", setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)));
	go(cmd[1]);
	R("the peer's end", recv(s, b, sizeof(b), 0));
	R("send after the end (the peer reads on)", send(s, "q", 1, MSG_NOSIGNAL));
	close(s);
	int st;
	waitpid(p, &st, 0);
	say("peer %s", WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");
	return 0;
}

/* Errors that happen before the engine first sees a socket are the
 * kernel's to report, at once: a nonblocking socket shut down (SHUT_WR)
 * before its first send, and one whose peer reset the connection before
 * its first send, with and without SIGPIPE ignored.
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"

static volatile sig_atomic_t pipes;
static void on_pipe(int sig)
{
	(void)sig;
	pipes++;
}

int main(void)
{
	signal(SIGPIPE, on_pipe);
	int c, s;
	nb_pair(&c, &s);
	R("shutdown(SHUT_WR) before any use", shutdown(c, SHUT_WR));
	R("send after own SHUT_WR", send(c, "x", 1, 0));
	R("send again, MSG_NOSIGNAL", send(c, "x", 1, MSG_NOSIGNAL));
	say("SIGPIPE count %d", (int)pipes);
	char b[4];
	R("peer sees EOF", recv(s, b, sizeof(b), 0));
	close(c);
	close(s);

	int c2, s2;
	nb_pair(&c2, &s2);
	struct linger lg = { 1, 0 };
	setsockopt(s2, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(s2); /* reset */
	msleep(50);
	R("send after the peer's reset", send(c2, "y", 1, 0));
	R("send again", send(c2, "y", 1, 0));
	say("SIGPIPE count %d", (int)pipes);
	R("recv after the reset", recv(c2, b, sizeof(b), 0));
	close(c2);
	return 0;
}

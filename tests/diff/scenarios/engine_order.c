/* engine_order: what a program did first reaches the kernel first, across
 * its sockets.  The program writes "x" on connection A (an armed socket
 * whose small sends the engine queues until the thread's next wait), then
 * acts on another descriptor straight through the kernel: the first send
 * of a new connection B, a send on a connected UDP socket, shutdown or
 * close of B.  (A has TCP_NODELAY: no Nagle delay.)  A peer process that sees that second act then looks at A
 * at once: without the library "x" is there (loopback delivers within the
 * send).  So a call that goes to the kernel first sends what the thread
 * queued before it.  The program makes no other call until the peer has
 * looked (it spins on shared memory: any wait would send the queue).
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>

enum { SEND_B, UDP_SEND, SHUTDOWN_B, CLOSE_B, CASES };
static const char *const names[CASES] = { "first send on B", "send on connected UDP", "shutdown(B, SHUT_WR)",
					  "close(B)" };

struct shared {
	atomic_int looked;
	char saw[32];
};

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The peer: A' and B' from the listener, U' bound before the fork. */
static void peer(int l, int u, struct shared *sh)
{
	int a = accept(l, NULL, NULL);
	if (a < 0)
		die("accept A");
	char b[64];
	for (int i = 0; i < 6; i++) { /* A is armed by reading, and has sent */
		if (send(a, "p", 1, 0) != 1 || recv(a, b, 1, MSG_WAITALL) != 1)
			die("peer arm");
	}
	for (int c = 0; c < CASES; c++) {
		int bb = -1;
		if (c != UDP_SEND && (bb = accept(l, NULL, NULL)) < 0)
			die("accept B");
		/* the second act */
		if (c == UDP_SEND) {
			if (!wait_fd(u, POLLIN, 10000) || recv(u, b, sizeof(b), 0) <= 0)
				die("peer udp");
		} else {
			if (!wait_fd(bb, POLLIN, 10000) || recv(bb, b, sizeof(b), 0) < 0)
				die("peer B");
		}
		/* then A, at once */
		ssize_t n = recv(a, b, sizeof(b), MSG_DONTWAIT);
		if (n > 0)
			snprintf(sh->saw, sizeof(sh->saw), "%.*s", (int)n, b);
		else
			snprintf(sh->saw, sizeof(sh->saw), "nothing (%s)", n < 0 ? scn_errname(errno) : "end");
		atomic_store(&sh->looked, c + 1);
		for (int64_t until = now_ms() + 10000; n <= 0; n = recv(a, b, sizeof(b), MSG_DONTWAIT))
			if (now_ms() > until || !wait_fd(a, POLLIN, 10000))
				die("A's byte never came");
		if (bb >= 0)
			close(bb);
	}
	_exit(0);
}

int main(void)
{
	alarm(60);
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		die("mmap");
	struct sockaddr_storage la;
	socklen_t lal;
	int l = tcp_listener(AF_INET, &la, &lal);
	struct sockaddr_in ua = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t ual = sizeof(ua);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	if (u < 0 || bind(u, (struct sockaddr *)&ua, sizeof(ua)) || getsockname(u, (struct sockaddr *)&ua, &ual))
		die("udp");
	fflush(stdout);
	pid_t pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		peer(l, u, sh);
	close(l);
	close(u);
	/* A: made after the fork (the engine may queue its sends) */
	int a = socket(AF_INET, SOCK_STREAM, 0);
	if (a < 0 || connect(a, (struct sockaddr *)&la, lal))
		die("connect A");
	set_nonblock(a);
	int one = 1; /* (no Nagle: each send leaves at once) */
	setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	char buf[16];
	for (int i = 0; i < 6; i++) {
		if (!wait_fd(a, POLLIN, 10000) || recv(a, buf, 1, 0) != 1 || send(a, "q", 1, 0) != 1)
			die("arm A");
	}
	int ud = socket(AF_INET, SOCK_DGRAM, 0);
	if (ud < 0 || connect(ud, (struct sockaddr *)&ua, sizeof(ua)))
		die("udp connect");
	R("a read on the UDP socket (it is the engine's from then on)", recv(ud, buf, 1, MSG_DONTWAIT));
	for (int c = 0; c < CASES; c++) {
		int b = -1;
		if (c != UDP_SEND) {
			b = socket(AF_INET, SOCK_STREAM, 0);
			if (b < 0 || connect(b, (struct sockaddr *)&la, lal))
				die("connect B");
			set_nonblock(b);
			/* (a read: B is the engine's, its first send still the kernel's) */
			R("a read on B", recv(b, buf, 1, 0));
		}
		R("send x on A", send(a, "x", 1, 0));
		switch (c) {
		case SEND_B:
			R("first send on B", send(b, "y", 1, 0));
			break;
		case UDP_SEND:
			R("send on connected UDP", send(ud, "u", 1, 0));
			break;
		case SHUTDOWN_B:
			R("shutdown(B, SHUT_WR)", shutdown(b, SHUT_WR));
			break;
		case CLOSE_B:
			R("close(B)", close(b));
			b = -1;
			break;
		}
		int64_t until = now_ms() + 20000;
		while (atomic_load(&sh->looked) != c + 1 && now_ms() < until)
			; /* no call: a wait would send the queue */
		say("%s, then the peer looked at A: %s", names[c], atomic_load(&sh->looked) == c + 1 ? sh->saw : "(no answer)");
		if (b >= 0)
			close(b);
	}
	reap("peer", pid);
	return 0;
}

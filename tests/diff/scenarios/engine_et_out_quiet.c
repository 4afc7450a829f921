/* Input is no output edge: an EPOLLOUT|EPOLLET registration of a socket
 * that only receives reports OUT once; the peer's data (read as it comes,
 * across many of the engine's receive completions, and past the end of a
 * receive capped at the socket's bound) wakes the kernel's waiters with
 * the input key, which makes no edge for a registration watching only
 * output.  With EPOLLIN|EPOLLOUT|EPOLLET each arrival is an edge with
 * both bits, as the kernel's.  (Fuzz seed 9600543, ARM_AFTER=0.)
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>

static char chunk[16384], got[16384];

static void run(const char *name, uint32_t events)
{
	say("-- %s", name);
	int c, s;
	nb_pair(&c, &s);
	int keep = dup(c); /* the peer stays the kernel's: its sends go at once */
	arm_by_reading(c, s); /* on the engine's receive in every mode */
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = events, .data.u64 = 0 };
	R("ADD", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	show_epoll("first wait", ep, 5000);
	show_epoll("nothing new", ep, 0);
	long total = 0;
	for (int i = 0; i < 40; i++) {
		fill_pattern(chunk, sizeof(chunk), (unsigned)i);
		if (send_all_nb(c, chunk, sizeof(chunk)) != (long)sizeof(chunk) ||
		    recv_all_nb(s, got, sizeof(got)) != (long)sizeof(got) || memcmp(chunk, got, sizeof(got)))
			die("transfer");
		total += (long)sizeof(got);
	}
	say("received %ld bytes", total);
	if (events & EPOLLIN) {
		show_epoll("after the input (read)", ep, 0);
		R("peer sends", send(c, "x", 1, 0));
		show_epoll("new input", ep, 5000);
		R("read", recv(s, got, sizeof(got), 0));
	} else {
		show_epoll("after the input", ep, 0);
	}
	show_epoll("again", ep, 0);
	close(ep);
	close(keep);
	close(c);
	close(s);
}

int main(void)
{
	run("OUT|ET", EPOLLOUT | EPOLLET);
	run("IN|OUT|ET", EPOLLIN | EPOLLOUT | EPOLLET);
	return 0;
}

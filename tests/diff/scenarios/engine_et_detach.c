/* An edge-triggered epoll registration whose socket leaves the engine
 * (here: the program asks about urgent data, POLLPRI) while input it
 * already reported is still unread: leaving is no event of the socket's,
 * so the next epoll_wait reports nothing, as the kernel's would; new
 * input afterwards is a new edge.  Once on a socket the engine served
 * (its input in the engine's queue), once on a new one that still reads
 * through the kernel (its input in the kernel's queue; read once before
 * the registration, so that a run arming at the first read, ARM_AFTER=1,
 * arms before it: a socket armed with reported input unread in the
 * kernel's queue still gets a second edge, see ringsock(7)).
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>

static void show_wait(const char *label, int ep, int ms)
{
	struct epoll_event ev[4];
	int n = epoll_wait(ep, ev, 4, ms);
	say("%s: epoll_wait = %d%s", label, n, n > 0 && (ev[0].events & EPOLLIN) ? " IN" : "");
}

static void run(const char *name, int armed)
{
	int c, s;
	nb_pair(&c, &s);
	if (armed) {
		arm_by_reading(c, s);
	} else {
		char x;
		send(c, "x", 1, 0);
		wait_fd(s, POLLIN, 5000);
		R("first read", recv(s, &x, 1, 0));
	}
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN | EPOLLET, .data.fd = s };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &e) < 0)
		die("epoll");
	send(c, "abcd", 4, 0);
	char l[64];
	snprintf(l, sizeof(l), "%s: data", name);
	show_wait(l, ep, 5000);
	char b[16];
	R("read 2 of 4", read(s, b, 2));
	snprintf(l, sizeof(l), "%s: nothing new", name);
	show_wait(l, ep, 0);
	struct pollfd p = { s, POLLIN | POLLPRI, 0 };
	int n = poll(&p, 1, 0);
	say("%s: poll IN|PRI = %d revents %#x", name, n, p.revents);
	snprintf(l, sizeof(l), "%s: after leaving the engine", name);
	show_wait(l, ep, 0);
	show_wait(l, ep, 0);
	send(c, "ef", 2, 0);
	snprintf(l, sizeof(l), "%s: new data", name);
	show_wait(l, ep, 5000);
	R("read the rest", recv_all_nb(s, b, 4));
	snprintf(l, sizeof(l), "%s: drained", name);
	show_wait(l, ep, 0);
	close(ep);
	close(c);
	close(s);
}

int main(void)
{
	run("engine-held input", 1);
	run("kernel-held input", 0);
	return 0;
}

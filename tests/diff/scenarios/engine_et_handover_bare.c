/* A hang-up seen by another thread while the socket is in hand-over, the
 * engine holding nothing.  Thread A serves a socket on its engine; the
 * peer and A shut down their sides: the socket is hung up.  A registers
 * it (EPOLLET alone: only ERR and HUP can come) in a set, so the
 * registration is the engine's.  The main thread waits on the set: the
 * kernel reports HUP at once.  Meanwhile A, a little later, runs its
 * engine's ring (a wait on another set), with nothing to print, then
 * blocks where the library cannot see (a read of a pipe); its own wait on
 * the set afterwards has nothing.  (Found by a review: the waiter's first
 * look starts the hand-over, which A's ring finishes; a look at a
 * detached socket holding nothing answered 0 without asking the kernel,
 * and the hand-over made no edge and no EPOLL_CTL_MOD: the HUP was lost.)
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <pthread.h>
#include <sys/epoll.h>

static int c, s, ep, go_a[2], ready_a[2];

static void *thread_a(void *arg)
{
	(void)arg;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	shutdown(c, SHUT_WR);
	shutdown(s, SHUT_WR);
	/* (the peer's FIN is in) */
	if (!(wait_fd(s, POLLRDHUP, 5000) & POLLRDHUP))
		die("no FIN");
	struct epoll_event e = { .events = EPOLLET, .data.u64 = 0 };
	R("A: ADD with EPOLLET alone", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	int other = epoll_create1(0);
	char x = 'r';
	if (write(ready_a[1], &x, 1) != 1)
		die("write");
	/* (the main thread's wait has looked at the socket) then A's ring
	 * runs, while that wait goes on: nothing printed */
	msleep(100);
	struct epoll_event ev[1];
	for (int i = 0; i < 20; i++) {
		epoll_wait(other, ev, 1, 0);
		msleep(10);
	}
	/* blocked where the library cannot see */
	if (read(go_a[0], &x, 1) != 1)
		die("read");
	show_epoll("A: nothing more", ep, 300);
	close(other);
	return NULL;
}

int main(void)
{
	if (pipe(go_a) || pipe(ready_a))
		die("pipe");
	ep = epoll_create1(0);
	pthread_t a;
	pthread_create(&a, NULL, thread_a, NULL);
	char x;
	if (read(ready_a[0], &x, 1) != 1)
		die("read");
	show_epoll("the hang-up, at once", ep, 3000);
	if (write(go_a[1], "g", 1) != 1)
		die("write");
	pthread_join(a, NULL);
	show_epoll("still nothing", ep, 0);
	char b[32];
	R("read the end", recv(s, b, sizeof(b), 0));
	show_epoll("nothing after reading", ep, 0);
	close(ep);
	close(c);
	close(s);
	return 0;
}

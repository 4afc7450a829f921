/* A hang-up seen by another thread while the socket is in hand-over, the
 * engine holding bytes.  Thread A serves a socket on its engine: the peer
 * sends 10 bytes (the engine reads them ahead) and shuts down its side, A
 * shuts down its own: the socket is hung up, 10 bytes unread.  A itself
 * registers the socket (EPOLLET alone: only ERR and HUP can come) in a
 * set, so the registration is the engine's, then blocks where the library
 * cannot see (a read of a pipe).  The main thread waits on the set: the
 * kernel reports HUP at once; A's own wait afterwards has nothing.  (Found
 * by a review: the waiter's first look at the socket starts its hand-over;
 * the next one, with the bytes held, answered IN only, which the
 * registration does not watch, and spent the edge, or left the
 * registration off the ready list: the waiter slept its whole timeout, and
 * the HUP came late, at A's wait, or never.)
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
#ifndef NOTHING_HELD
	send(c, "0123456789", 10, 0);
	wait_fd(s, POLLIN, 5000);
	/* (the engine's receive reads them ahead) */
	msleep(50);
#endif
	shutdown(c, SHUT_WR);
	shutdown(s, SHUT_WR);
	/* (the peer's FIN is in) */
	if (!(wait_fd(s, POLLRDHUP, 5000) & POLLRDHUP))
		die("no FIN");
	struct epoll_event e = { .events = EPOLLET, .data.u64 = 0 };
	R("A: ADD with EPOLLET alone", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	char x = 'r';
	if (write(ready_a[1], &x, 1) != 1)
		die("write");
#ifdef NOTHING_HELD
	/* (the main thread's wait has looked at the socket) then A's ring
	 * runs, while that wait goes on: nothing printed */
	int other = epoll_create1(0);
	msleep(100);
	struct epoll_event ev[1];
	for (int i = 0; i < 20; i++) {
		epoll_wait(other, ev, 1, 0);
		msleep(10);
	}
	close(other);
#endif
	/* blocked where the library cannot see */
	if (read(go_a[0], &x, 1) != 1)
		die("read");
	show_epoll("A: nothing more", ep, 300);
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
#ifndef NOTHING_HELD
	show("read the held bytes", b, R("read", recv(s, b, sizeof(b), 0)));
#endif
	R("read the end", recv(s, b, sizeof(b), 0));
	show_epoll("nothing after reading", ep, 0);
	close(ep);
	close(c);
	close(s);
	return 0;
}

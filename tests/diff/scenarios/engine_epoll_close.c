/* Epoll sets closed by another thread while the engine serves a member:
 * the owner thread keeps receiving a stream on an engine socket (each
 * receive completion walks the socket's epoll registrations), adds the
 * socket to a new epoll set again and again, and hands each set to a
 * second thread, which closes it.  Closing a set must not change the
 * socket's list of registrations behind the owner's back (the build with
 * ThreadSanitizer reports that race; a walk following a freed record can
 * put it on another set's ready list).  Every byte arrives, in order.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <pthread.h>
#include <sys/epoll.h>

#define TOTAL (8u << 20)
#define CHUNK 16384
#define SETS 1500

static int c, s;
static int hand[2]; /* set numbers to close, -1 to stop */

static void *sender(void *arg)
{
	(void)arg;
	static char buf[CHUNK];
	for (unsigned off = 0; off < TOTAL; off += CHUNK) {
		fill_pattern(buf, CHUNK, off);
		for (size_t done = 0; done < CHUNK;) {
			ssize_t r = send(c, buf + done, CHUNK - done, MSG_NOSIGNAL);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && errno == EAGAIN) {
				wait_fd(c, POLLOUT, 5000);
				continue;
			}
			if (r <= 0)
				return NULL;
			done += (size_t)r;
		}
	}
	return NULL;
}

static void *closer(void *arg)
{
	long *closed = arg;
	int fd;
	while (read_full(hand[0], &fd, sizeof(fd)) == 0 && fd >= 0)
		if (close(fd) == 0)
			(*closed)++;
	return NULL;
}

static void pass_new_set(void)
{
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.fd = s };
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) != 0)
		die("second set");
	if (write(hand[1], &ep, sizeof(ep)) != sizeof(ep))
		die("hand");
}

int main(void)
{
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	if (pipe(hand) != 0)
		die("pipe");
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s };
	R("epoll_ctl ADD", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));

	long closed = 0;
	pthread_t ts, tc;
	pthread_create(&tc, NULL, closer, &closed);
	pthread_create(&ts, NULL, sender, NULL);

	static char want[CHUNK], got_buf[65536];
	unsigned got = 0, bad = 0, sets = 0;
	while (got < TOTAL || sets < SETS) {
		if (sets < SETS) {
			pass_new_set();
			sets++;
		}
		if (got >= TOTAL)
			continue;
		struct epoll_event out;
		if (epoll_wait(ep, &out, 1, 10000) != 1) {
			say("epoll_wait: nothing for 10 s at %u bytes", got);
			break;
		}
		ssize_t r = recv(s, got_buf, sizeof(got_buf), 0);
		if (r == 0)
			break;
		if (r < 0) {
			if (errno != EAGAIN && errno != EINTR) {
				R("recv", r);
				break;
			}
			continue;
		}
		for (ssize_t i = 0; i < r; i++, got++) {
			if (got % CHUNK == 0)
				fill_pattern(want, CHUNK, got);
			bad += got_buf[i] != want[got % CHUNK];
		}
	}
	int stop = -1;
	if (write(hand[1], &stop, sizeof(stop)) != sizeof(stop))
		die("hand");
	pthread_join(tc, NULL);
	pthread_join(ts, NULL);
	say("received %u of %u bytes, %u not as sent", got, TOTAL, bad);
	say("sets made %u, closed by the other thread %ld", sets, closed);
	/* The socket still answers through the first set. */
	R("send", send(c, "end", 3, 0));
	struct epoll_event out;
	R("epoll_wait", epoll_wait(ep, &out, 1, 5000));
	char b[8];
	show("recv", b, recv(s, b, sizeof(b), 0));
	close(ep);
	close(c);
	close(s);
	return 0;
}

/* engine_udp_threads: a UDP socket the engine serves, used by more than
 * one thread, and flags the engine must serve from what it holds.  Each
 * case once hung or lost a datagram under the library:
 *  - thread A blocks in recv on its socket; thread B sends on the same
 *    socket (sends are the kernel's: the socket stays A's), then a peer
 *    sends A a datagram;
 *  - thread A blocks in recvfrom; thread B wakes it with
 *    shutdown(SHUT_RDWR) (ENOTCONN, and the reader returns 0);
 *  - the main thread registers a socket with epoll and a worker runs the
 *    loop (the registering thread never reads it);
 *  - recvmsg with MSG_CMSG_CLOEXEC while the engine holds the datagram;
 *  - posix_spawn while the engine holds datagrams (the child shares the
 *    parent's memory until exec: nothing of the engine's may change), then
 *    reads: each datagram once, then the kernel's;
 *  - the program sets up an io_uring of its own (syscall(2)): every socket
 *    leaves the engine, what it holds read first.
 * The sleeps only make the interesting order likely: what each call
 * returns does not depend on them.
 *
 * ENGINE_MIN_ACCELERATED=3 */
#include "../scn.h"
#include <pthread.h>
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/syscall.h>

extern char **environ;

static int fd, tx, ep;
static struct sockaddr_in a, p;

static int bound(struct sockaddr_in *addr, int type)
{
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(*addr);
	int s = socket(AF_INET, type, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&any, sizeof(any)) || getsockname(s, (struct sockaddr *)addr, &l))
		die("udp socket");
	return s;
}

static void *sends_on_it(void *x)
{
	(void)x;
	msleep(20);
	R("B: sendto on A's socket", sendto(fd, "reply", 5, 0, (struct sockaddr *)&p, sizeof(p)));
	msleep(20);
	sendto(tx, "two", 3, 0, (struct sockaddr *)&a, sizeof(a));
	return NULL;
}

/* B's result is reported by the main thread after the join: A's reader
 * wakes as soon as shutdown acts, so B's own line could come before or
 * after A's. */
static long shut_ret;
static int shut_errno;

static void *shuts_it(void *x)
{
	(void)x;
	msleep(20);
	shut_ret = shutdown(fd, SHUT_RDWR);
	shut_errno = errno;
	return NULL;
}

static void *epoll_worker(void *x)
{
	(void)x;
	sendto(tx, "hello", 5, 0, (struct sockaddr *)&a, sizeof(a));
	struct epoll_event ev;
	char buf[64];
	for (int i = 0; i < 1000; i++) {
		int n = epoll_wait(ep, &ev, 1, 2000);
		long r = recv(fd, buf, sizeof(buf), 0);
		if (r >= 0 || n <= 0) {
			say("worker: epoll_wait %d, recv %ld", n, r);
			return NULL;
		}
	}
	say("worker: woken 1000 times without a datagram");
	return NULL;
}

/* s holds one datagram the engine took before: read it, then one sent
 * now (the kernel's), then nothing. */
static void held_then_kernel(int s, const char *next)
{
	char buf[64];
	long n = R("recv (held)", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	show("got", buf, n);
	sendto(tx, next, strlen(next), 0, (struct sockaddr *)&a, sizeof(a));
	wait_fd(s, POLLIN, 2000);
	n = R("recv (the kernel's)", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	show("got", buf, n);
	R("recv nothing", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
}

int main(void)
{
	char buf[64];
	pthread_t t;

	/* ---- another thread sends on the socket A reads ---- */
	fd = bound(&a, SOCK_DGRAM);
	tx = bound(&p, SOCK_DGRAM);
	sendto(tx, "one", 3, 0, (struct sockaddr *)&a, sizeof(a));
	R("A: recv", recv(fd, buf, sizeof(buf), 0));
	pthread_create(&t, NULL, sends_on_it, NULL);
	long n = R("A: blocking recv", recv(fd, buf, sizeof(buf), 0));
	show("A got", buf, n);
	pthread_join(t, NULL);
	n = R("tx: recv the reply", recv(tx, buf, sizeof(buf), 0));
	show("tx got", buf, n);
	close(fd);

	/* ---- shutdown wakes a blocked reader ---- */
	fd = bound(&a, SOCK_DGRAM);
	sendto(tx, "one", 3, 0, (struct sockaddr *)&a, sizeof(a));
	struct sockaddr_storage from;
	socklen_t fl = sizeof(from);
	R("A: recvfrom", recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl));
	pthread_create(&t, NULL, shuts_it, NULL);
	for (int i = 0; i < 2; i++) {
		fl = sizeof(from);
		R("A: blocking recvfrom", recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl));
	}
	pthread_join(t, NULL);
	R("B: shutdown SHUT_RDWR", ({ errno = shut_errno; shut_ret; }));
	close(fd);

	/* ---- epoll registered by one thread, looped by another ---- */
	fd = bound(&a, SOCK_DGRAM | SOCK_NONBLOCK);
	ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	R("main: epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev));
	pthread_create(&t, NULL, epoll_worker, NULL);
	pthread_join(t, NULL);
	close(ep);
	close(fd);

	/* ---- MSG_CMSG_CLOEXEC with the datagram held ---- */
	fd = bound(&a, SOCK_DGRAM);
	R("recv (arms it)", recv(fd, buf, sizeof(buf), MSG_DONTWAIT));
	sendto(tx, "hi", 2, 0, (struct sockaddr *)&a, sizeof(a));
	wait_fd(fd, POLLIN, 2000);
	struct iovec v = { buf, sizeof(buf) };
	struct msghdr m = { .msg_iov = &v, .msg_iovlen = 1 };
	n = R("recvmsg MSG_CMSG_CLOEXEC|MSG_DONTWAIT", recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT));
	show("got", buf, n);
	sendto(tx, "again", 5, 0, (struct sockaddr *)&a, sizeof(a));
	wait_fd(fd, POLLIN, 2000);
	n = R("recvmsg MSG_CMSG_CLOEXEC", recvmsg(fd, &m, MSG_CMSG_CLOEXEC));
	show("got", buf, n);

	/* ---- posix_spawn with datagrams held ---- */
	sendto(tx, "s1", 2, 0, (struct sockaddr *)&a, sizeof(a));
	sendto(tx, "s2", 2, 0, (struct sockaddr *)&a, sizeof(a));
	wait_fd(fd, POLLIN, 2000);
	n = R("recv before the spawn", recv(fd, buf, sizeof(buf), 0));
	show("got", buf, n);
	pid_t kid;
	char *argv[] = { "true", NULL };
	R("posix_spawn", posix_spawnp(&kid, "true", NULL, NULL, argv, environ) == 0 ? 0 : -1);
	reap("spawned", kid);
	held_then_kernel(fd, "s3");

	/* ---- the program's own io_uring ---- */
	int g = bound(&a, SOCK_DGRAM);
	R("recv (arms it)", recv(g, buf, sizeof(buf), MSG_DONTWAIT));
	sendto(tx, "u1", 2, 0, (struct sockaddr *)&a, sizeof(a));
	sendto(tx, "u2", 2, 0, (struct sockaddr *)&a, sizeof(a));
	wait_fd(g, POLLIN, 2000);
	n = R("recv", recv(g, buf, sizeof(buf), 0));
	show("got", buf, n);
	char params[120];
	memset(params, 0, sizeof(params));
	long ring = syscall(SYS_io_uring_setup, 4, params);
	say("own io_uring %s", ring >= 0 ? "set up" : "refused");
	if (ring >= 0)
		close((int)ring);
	held_then_kernel(g, "u3");
	return 0;
}

/* poll/select over an engine socket that stays readable together with
 * kernel fds whose readiness changes between calls: the library answers
 * such calls without asking the kernel while the ring vouches for the
 * kernel fds (src/kwatch.c), so every change must still show in the very
 * next call: a pipe filled and drained, a pipe's write end filling up, a
 * listener getting a connection, a watched number closed and reused, a
 * number replaced by dup2, a regular file (which epoll refuses).  The
 * same for epoll_wait(0) on a set holding s and kernel fds (it skips the
 * kernel's epoll_wait while the ring's poll of the set is quiet): a pipe
 * filled and drained, a ready pipe added, one removed.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>

static int s; /* the engine socket, readable throughout */

/* One poll with timeout 0 of s and the kernel fds given; prints revents. */
static void look(const char *label, int fd1, short ev1, int fd2, short ev2)
{
	struct pollfd p[3] = { { s, POLLIN, 0 }, { fd1, ev1, 0 }, { fd2, ev2, 0 } };
	int n = poll(p, fd2 >= 0 ? 3 : 2, 0);
	say("%s: poll %d: s %#x fd1 %#x fd2 %#x", label, n, p[0].revents, p[1].revents,
	    fd2 >= 0 ? p[2].revents : 0);
}

/* The same through select (read set only). */
static void look_select(const char *label, int fd1)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(s, &r);
	FD_SET(fd1, &r);
	struct timeval tv = { 0, 0 };
	int n = select((s > fd1 ? s : fd1) + 1, &r, NULL, NULL, &tv);
	say("%s: select %d: s %d fd1 %d", label, n, FD_ISSET(s, &r) != 0, FD_ISSET(fd1, &r) != 0);
}

int main(void)
{
	int c;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	send(c, "data", 4, 0);
	wait_fd(s, POLLIN, 5000);

	/* A pipe filled and drained between calls, over more calls than the
	 * library answers in a row without the kernel. */
	int p[2];
	if (pipe(p) < 0)
		die("pipe");
	char b[256];
	for (int i = 0; i < 150; i++) {
		if (i % 10 == 3)
			write(p[1], "x", 1);
		if (i % 10 == 6)
			read(p[0], b, sizeof(b));
		char l[32];
		snprintf(l, sizeof(l), "pipe %d", i);
		if (i % 10 == 3 || i % 10 == 4 || i % 10 == 6 || i % 10 == 7 || i % 50 == 0)
			look(l, p[0], POLLIN, -1, 0);
		else if (i % 2)
			look_select(l, p[0]);
		else
			look(l, p[0], POLLIN, -1, 0);
	}

	/* The write end: full, then room again. */
	set_nonblock(p[1]);
	long filled = 0;
	memset(b, 'y', sizeof(b));
	for (;;) {
		ssize_t w = write(p[1], b, sizeof(b));
		if (w <= 0)
			break;
		filled += w;
	}
	say("pipe filled with %ld bytes", filled);
	for (int i = 0; i < 3; i++)
		look("full", p[0], POLLIN, p[1], POLLOUT);
	while (read(p[0], b, sizeof(b)) > 0 && (filled -= (long)sizeof(b)) > 8192)
		;
	look("drained", p[0], POLLIN, p[1], POLLOUT);
	set_nonblock(p[0]);
	while (read(p[0], b, sizeof(b)) > 0)
		;
	look("empty", p[0], POLLIN, p[1], POLLOUT);

	/* A listener: quiet, then a connection comes. */
	struct sockaddr_storage la;
	socklen_t ll = sizeof(la);
	int l = tcp_listener(AF_INET, &la, &ll);
	for (int i = 0; i < 3; i++)
		look("listener", l, POLLIN, -1, 0);
	int c2 = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(c2, (struct sockaddr *)&la, ll) < 0)
		die("connect");
	look("listener after connect", l, POLLIN, -1, 0);
	int a = accept(l, NULL, NULL);
	look("listener after accept", l, POLLIN, -1, 0);

	/* A watched number closed and given to a new, readable pipe. */
	int q[2];
	for (int i = 0; i < 3; i++)
		look("before close", p[0], POLLIN, -1, 0);
	int num = p[0];
	close(p[0]);
	if (pipe(q) < 0)
		die("pipe");
	if (q[0] != num)
		q[0] = dup2(q[0], num);
	say("new pipe read end is the old number: %d", q[0] == num);
	write(q[1], "z", 1);
	look("reused number", num, POLLIN, -1, 0);
	read(num, b, 1);
	look("reused number drained", num, POLLIN, -1, 0);

	/* A number replaced by dup2 with a readable pipe. */
	int r2[2];
	if (pipe(r2) < 0)
		die("pipe");
	write(r2[1], "w", 1);
	for (int i = 0; i < 3; i++)
		look("before dup2", num, POLLIN, -1, 0);
	dup2(r2[0], num);
	look("after dup2", num, POLLIN, -1, 0);
	read(num, b, 1);
	look("after dup2 drained", num, POLLIN, -1, 0);

	/* A regular file: always ready, and epoll refuses it. */
	FILE *f = tmpfile();
	if (!f)
		die("tmpfile");
	for (int i = 0; i < 3; i++)
		look("regular file", fileno(f), POLLIN | POLLOUT, num, POLLIN);
	write(r2[1], "v", 1);
	look("regular file, pipe ready", fileno(f), POLLIN | POLLOUT, num, POLLIN);

	/* A number replaced behind the library's back (a raw system call):
	 * the kernel is still asked often enough that the readiness shows
	 * within 100 calls. */
	read(num, b, sizeof(b));
	for (int i = 0; i < 3; i++)
		look("before raw close", num, POLLIN, -1, 0);
	int t[2];
	if (pipe(t) < 0)
		die("pipe");
	write(t[1], "u", 1);
	long rc;
	__asm__ volatile("syscall" : "=a"(rc) : "0"(SYS_dup2), "D"(t[0]), "S"(num) : "rcx", "r11", "memory");
	int seen = 0;
	for (int i = 0; i < 100 && !seen; i++) {
		struct pollfd pp[2] = { { s, POLLIN, 0 }, { num, POLLIN, 0 } };
		poll(pp, 2, 0);
		seen = (pp[1].revents & POLLIN) != 0;
	}
	say("raw dup2 %ld: readiness seen within 100 calls: %d", rc == num ? 0L : rc, seen);

	/* epoll_wait(0): s (level-triggered, readable) and a pipe. */
	int ep = epoll_create1(0);
	int e2[2], e3[2];
	if (ep < 0 || pipe(e2) < 0 || pipe(e3) < 0)
		die("epoll");
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s };
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev);
	ev.data.fd = e2[0];
	epoll_ctl(ep, EPOLL_CTL_ADD, e2[0], &ev);
	for (int i = 0; i < 150; i++) {
		if (i % 10 == 3)
			write(e2[1], "x", 1);
		if (i % 10 == 6)
			read(e2[0], b, sizeof(b));
		if (i == 100) { /* a ready pipe joins the set */
			write(e3[1], "q", 1);
			ev.data.fd = e3[0];
			epoll_ctl(ep, EPOLL_CTL_ADD, e3[0], &ev);
		}
		if (i == 120) /* and leaves it */
			epoll_ctl(ep, EPOLL_CTL_DEL, e3[0], NULL);
		struct epoll_event out[4];
		int n = epoll_wait(ep, out, 4, 0);
		int ins = 0, pipe2 = 0, pipe3 = 0;
		for (int j = 0; j < n; j++) {
			ins += out[j].data.fd == s;
			pipe2 += out[j].data.fd == e2[0];
			pipe3 += out[j].data.fd == e3[0];
		}
		say("epoll %d: %d: s %d pipe %d second pipe %d", i, n, ins, pipe2, pipe3);
	}
	close(ep);

	close(a);
	close(c2);
	close(l);
	close(c);
	close(s);
	return 0;
}

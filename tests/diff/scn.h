/* scn.h - helpers for differential scenarios.
 *
 * A scenario is a small program that exercises socket semantics and prints
 * a transcript: what each call returned, errno names, the bytes moved.  The
 * harness (run_diff.sh) runs it plain and under libringsock.so and requires
 * identical transcripts and exit status.  So: print only what the kernel
 * decides (never ports, pids, times or addresses), and make every
 * cross-process or cross-thread order explicit with a pipe.
 *
 * Add a scenario: drop tests/diff/scenarios/NAME.c with a main(); CMake
 * picks it up as the test diff.NAME.
 */
#ifndef SCN_H
#define SCN_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static inline const char *scn_errname(int e)
{
	switch (e) {
#define E(x) case x: return #x;
	E(EAGAIN) E(EINTR) E(EPIPE) E(ECONNRESET) E(ECONNREFUSED) E(EINPROGRESS) E(EBADF)
	E(EINVAL) E(ENOTCONN) E(EISCONN) E(ENOTSOCK) E(EALREADY) E(EADDRINUSE) E(EMSGSIZE)
	E(ETIMEDOUT) E(EFAULT) E(ENOENT) E(EACCES) E(EPERM) E(EDESTADDRREQ) E(EOPNOTSUPP)
	E(ENOSYS) E(ECHILD) E(ESPIPE) E(ENOTTY) E(EEXIST) E(ELOOP) E(ENOPROTOOPT) E(EAFNOSUPPORT)
	E(EPROTONOSUPPORT) E(ENOMEM) E(ENOBUFS) E(EADDRNOTAVAIL) E(ENETUNREACH) E(EHOSTUNREACH)
	E(ESOCKTNOSUPPORT) E(EPROTOTYPE) E(EMFILE) E(ENFILE) E(ESRCH) E(EIO) E(ENOEXEC)
#undef E
	default: {
		static char buf[32];
		snprintf(buf, sizeof(buf), "E%d", e);
		return buf;
	}
	}
}

/* printf + flush, so output order survives fork and exec. */
static inline void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* Print "label = result" or "label = -1 ERRNO"; evaluates to the result. */
#define R(label, expr) scn_report((label), ({ errno = 0; long r_ = (long)(expr); int e_ = errno; scn_save(e_); r_; }))
static int scn_last_errno;
static inline void scn_save(int e) { scn_last_errno = e; }
static inline long scn_report(const char *label, long r)
{
	if (r < 0)
		say("%s = %ld %s", label, r, scn_errname(scn_last_errno));
	else
		say("%s = %ld", label, r);
	errno = scn_last_errno;
	return r;
}

/* Like R, for calls returning a new descriptor: prints "fd", not its number. */
#define RFD(label, expr) scn_report_fd((label), ({ errno = 0; long r_ = (long)(expr); int e_ = errno; scn_save(e_); r_; }))
static inline int scn_report_fd(const char *label, long r)
{
	if (r < 0)
		say("%s = %ld %s", label, r, scn_errname(scn_last_errno));
	else
		say("%s = fd", label);
	errno = scn_last_errno;
	return (int)r;
}

static inline void die(const char *what)
{
	fprintf(stderr, "scenario setup failed: %s: %s\n", what, strerror(errno));
	exit(99);
}

/* Print the bytes as a short readable string (or a checksum if long). */
static inline uint32_t scn_sum(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}
static inline void show(const char *label, const void *buf, long n)
{
	if (n < 0) {
		say("%s: (none)", label);
		return;
	}
	if (n <= 64) {
		char tmp[3 * 64 + 1];
		size_t o = 0;
		const unsigned char *b = buf;
		for (long i = 0; i < n; i++)
			o += (size_t)sprintf(tmp + o, (b[i] >= 32 && b[i] < 127 && b[i] != '\\') ? "%c" : "\\%02x", b[i]);
		tmp[o] = 0;
		say("%s: %ld bytes \"%s\"", label, n, tmp);
	} else {
		say("%s: %ld bytes sum %08x", label, n, scn_sum(buf, (size_t)n));
	}
}

/* A listening TCP socket on loopback, any port.  family AF_INET or AF_INET6. */
static inline int tcp_listener(int family, struct sockaddr_storage *addr, socklen_t *alen)
{
	int l = socket(family, SOCK_STREAM, 0);
	if (l < 0)
		die("socket");
	int one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(addr, 0, sizeof(*addr));
	if (family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)addr;
		a->sin_family = AF_INET;
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*alen = sizeof(*a);
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)addr;
		a->sin6_family = AF_INET6;
		a->sin6_addr = in6addr_loopback;
		*alen = sizeof(*a);
	}
	if (bind(l, (struct sockaddr *)addr, *alen) || listen(l, 64) ||
	    getsockname(l, (struct sockaddr *)addr, alen))
		die("listen");
	return l;
}

/* A connected TCP pair over loopback: *c client, *s server side. */
static inline void tcp_pair_family(int family, int *c, int *s)
{
	struct sockaddr_storage a;
	socklen_t al;
	int l = tcp_listener(family, &a, &al);
	*c = socket(family, SOCK_STREAM, 0);
	if (*c < 0 || connect(*c, (struct sockaddr *)&a, al))
		die("connect");
	*s = accept(l, NULL, NULL);
	if (*s < 0)
		die("accept");
	close(l);
}
static inline void tcp_pair(int *c, int *s)
{
	tcp_pair_family(AF_INET, c, s);
}

/* Two UDP sockets bound on loopback; *b connected to *a when connect_b. */
static inline void udp_pair(int *a, int *b, struct sockaddr_in *aaddr, int connect_b)
{
	socklen_t l = sizeof(*aaddr);
	struct sockaddr_in any = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	*a = socket(AF_INET, SOCK_DGRAM, 0);
	*b = socket(AF_INET, SOCK_DGRAM, 0);
	if (*a < 0 || *b < 0 || bind(*a, (struct sockaddr *)&any, sizeof(any)) ||
	    bind(*b, (struct sockaddr *)&any, sizeof(any)) ||
	    getsockname(*a, (struct sockaddr *)aaddr, &l))
		die("udp");
	if (connect_b && connect(*b, (struct sockaddr *)aaddr, sizeof(*aaddr)))
		die("udp connect");
}

/* A UDP socket bound to an ephemeral port on 127.0.0.1. */
static inline int udp_bound(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in l = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (s < 0 || bind(s, (struct sockaddr *)&l, sizeof(l)))
		die("udp socket");
	return s;
}

static inline void msleep(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Wait for a child and print how it ended. */
static inline void reap(const char *label, pid_t pid)
{
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(st))
		say("%s exited %d", label, WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		say("%s killed by signal %d", label, WTERMSIG(st));
}

/* Read exactly n bytes (blocking; by recv or read): 0, or -1 at an
 * error or the end. */
static inline int full_io(int fd, void *buf, size_t n, int by_recv)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = by_recv ? recv(fd, (char *)buf + got, n - got, 0) : read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}
static inline int read_full(int fd, void *buf, size_t n)
{
	return full_io(fd, buf, n, 0);
}

/* recv until n bytes are in: 0, or -1 at an error or the end. */
static inline int recv_full(int fd, void *buf, size_t n)
{
	return full_io(fd, buf, n, 1);
}

/* Token passing between processes: wait_go blocks until go() is called. */
static inline void go(int fd)
{
	if (write(fd, "g", 1) != 1)
		die("go");
}
static inline void wait_go(int fd)
{
	char c;
	if (read_full(fd, &c, 1))
		die("wait_go");
}


/* ---- helpers for scenarios that run on the engine (nonblocking sockets) */

static inline void set_nonblock(int fd)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
}

/* A connected pair, both ends nonblocking. */
static inline void nb_pair(int *c, int *s)
{
	tcp_pair(c, s);
	set_nonblock(*c);
	set_nonblock(*s);
}

/* fork() with a connection made after it, one end in each process (a
 * socket open before a fork may be read by either process: under
 * ringsock it is the kernel's for good, so a scenario about the engine
 * connects after forking).  The child's end, connecting, is *s (*c -1);
 * the parent's, accepted, is *c (*s -1); blocking (fork_nb_pair: both
 * nonblocking, as nb_pair's).
 * Returns fork()'s value. */
static inline pid_t fork_pair(int *c, int *s)
{
	struct sockaddr_storage a;
	socklen_t al;
	int l = tcp_listener(AF_INET, &a, &al);
	pid_t p = fork();
	if (p < 0)
		die("fork");
	*c = *s = -1;
	if (p == 0) {
		close(l);
		*s = socket(AF_INET, SOCK_STREAM, 0);
		if (*s < 0 || connect(*s, (struct sockaddr *)&a, al))
			die("connect");
	} else {
		*c = accept(l, NULL, NULL);
		if (*c < 0)
			die("accept");
		close(l);
	}
	return p;
}
static inline pid_t fork_nb_pair(int *c, int *s)
{
	pid_t p = fork_pair(c, s);
	set_nonblock(p == 0 ? *s : *c);
	return p;
}

/* A connection with a forked peer (fork_pair): the child closes
 * parent_fd and runs peer(its end, child_fd), which must exit; the
 * parent closes child_fd and returns its end, the child in *pid.  Both
 * stop after 60 s (alarm). */
static inline int forked_peer_conn(void (*peer)(int c, int fd), int child_fd, int parent_fd, pid_t *pid)
{
	int c, s;
	pid_t p = fork_pair(&c, &s);
	alarm(60);
	if (p == 0) {
		close(parent_fd);
		peer(s, child_fd);
		_exit(0);
	}
	close(child_fd);
	*pid = p;
	return c;
}

/* poll one fd for ev; returns revents (0 on timeout). */
static inline int wait_fd(int fd, short ev, int ms)
{
	struct pollfd p = { fd, ev, 0 };
	int r;
	while ((r = poll(&p, 1, ms)) < 0 && errno == EINTR)
		;
	return r > 0 ? p.revents : 0;
}

/* Send all of buf on a nonblocking socket (polling for room). */
static inline long send_all_nb(int fd, const void *buf, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = send(fd, (const char *)buf + done, n - done, MSG_NOSIGNAL);
		if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			wait_fd(fd, POLLOUT, 5000);
			continue;
		}
		if (r < 0)
			return -1;
		done += (size_t)r;
	}
	return (long)done;
}

/* Receive until n bytes or end of stream (polling when empty). */
static inline long recv_all_nb(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, (char *)buf + got, n - got, 0);
		if (r == 0)
			break;
		if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (!wait_fd(fd, POLLIN, 10000))
				break;
			continue;
		}
		if (r < 0)
			return -1;
		got += (size_t)r;
	}
	return (long)got;
}

/* Read on s through the engine: the peer c sends a byte six times and s
 * reads each, so a new nonblocking socket that reads through the kernel
 * first (RINGSOCK_ARM_AFTER, 4 by default) is armed by the end. */
static inline void arm_by_reading(int c, int s)
{
	char buf[16];
	for (int i = 0; i < 6; i++) {
		send(c, "x", 1, 0);
		wait_fd(s, POLLIN, 5000);
		recv(s, buf, sizeof(buf), 0);
	}
}

/* An engine socket *s whose peer's reads are the kernel's: a connected
 * pair armed by reading, one send the peer reads, then the peer's end
 * duplicated (a second descriptor leaves it to the kernel).  Returns the
 * copy, blocking; the original is closed. */
static inline int engine_with_kernel_peer(int *s)
{
	int c;
	char b[64];
	nb_pair(&c, s);
	arm_by_reading(c, *s);
	R("send", send(*s, "first", 5, 0));
	wait_fd(c, POLLIN, 5000);
	show("peer reads", b, R("recv", recv(c, b, sizeof(b), 0)));
	int keep = dup(c);
	close(c);
	fcntl(keep, F_SETFL, fcntl(keep, F_GETFL) & ~O_NONBLOCK);
	return keep;
}

static inline void scn_on_bound(int sig)
{
	(void)sig;
}

/* For a blocking call that follows: a SIGALRM handler with SA_RESTART
 * runs 50 ms from now, during it, and a bound, SIGUSR1 without
 * SA_RESTART 3 s from now, ends it with EINTR if it still waits.  Under
 * TSan (SCN_SANITIZER_SIGNALS), which runs handlers itself at its
 * interceptors' safe points, not through the library's trampoline (the
 * library cannot tell it is in a handler), the handler is called here
 * instead, before the call (same transcript, no signal).  Returns the
 * bound's timer for handler_timers_off. */
static inline timer_t handler_timers(void (*on_alarm)(int))
{
	struct sigaction su = { 0 };
	su.sa_handler = scn_on_bound;
	sigemptyset(&su.sa_mask);
	R("sigaction USR1", sigaction(SIGUSR1, &su, NULL));
	timer_t bound;
	struct sigevent sev = { 0 };
	sev.sigev_notify = SIGEV_SIGNAL;
	sev.sigev_signo = SIGUSR1;
	R("bound timer", timer_create(CLOCK_MONOTONIC, &sev, &bound));
	struct itimerspec in3 = { { 0, 0 }, { 3, 0 } };
	R("in 3 s", timer_settime(bound, 0, &in3, NULL));
	struct sigaction sa = { 0 };
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	R("sigaction", sigaction(SIGALRM, &sa, NULL));
	if (getenv("SCN_SANITIZER_SIGNALS")) {
		R("timer", 0L);
		on_alarm(SIGALRM);
	} else {
		struct itimerval it = { { 0, 0 }, { 0, 50000 } };
		R("timer", setitimer(ITIMER_REAL, &it, NULL));
	}
	return bound;
}

static inline void handler_timers_off(timer_t bound)
{
	struct itimerspec off = { { 0, 0 }, { 0, 0 } };
	timer_settime(bound, 0, &off, NULL);
	timer_delete(bound);
}

/* epoll_wait(ep, ms) with up to 4 events, its result and each event's
 * flags printed. */
static inline void show_epoll(const char *label, int ep, int ms)
{
	struct epoll_event ev[4];
	int n = (int)R(label, epoll_wait(ep, ev, 4, ms));
	for (int i = 0; i < n; i++)
		say("  events %s%s%s%s%s%s", ev[i].events & EPOLLIN ? "IN " : "", ev[i].events & EPOLLPRI ? "PRI " : "",
		    ev[i].events & EPOLLOUT ? "OUT " : "", ev[i].events & EPOLLRDHUP ? "RDHUP " : "",
		    ev[i].events & EPOLLERR ? "ERR " : "", ev[i].events & EPOLLHUP ? "HUP" : "");
}

/* A thread's body (pthread_create, arg a struct scn_late): sends the
 * four bytes "late" on fd once thread tid sleeps in a call a wait can
 * sleep in (its current system call, /proc/self/task/TID/syscall: the
 * kernel's select, poll, ppoll, pselect6 or an io_uring_enter), looking
 * every millisecond: the wait is known to have slept, with nothing
 * timed. */
struct scn_late {
	pid_t tid;
	int fd;
};
static inline void *send_when_waiting(void *arg)
{
	const struct scn_late *l = arg;
	char path[64];
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)l->tid);
	for (;;) {
		long nr = -1;
		FILE *f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%ld", &nr) != 1)
				nr = -1;
			fclose(f);
		}
		if (nr == SYS_pselect6 || nr == SYS_ppoll || nr == SYS_io_uring_enter)
			break;
#ifdef SYS_select
		if (nr == SYS_select || nr == SYS_poll)
			break;
#endif
		usleep(1000);
	}
	send(l->fd, "late", 4, 0);
	return NULL;
}

/* Deterministic pattern bytes. */
static inline void fill_pattern(char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		b[i] = (char)(seed >> 16);
	}
}
#endif

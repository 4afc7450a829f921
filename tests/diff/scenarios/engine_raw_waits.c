/* Waits made through syscall(2) over an engine socket with data the
 * engine holds, read as the kernel's own calls are: ppoll, pselect6 and
 * select write back the time left (less than was given, whether the call
 * slept or answered at once; nothing for a zero timeout), select adds the
 * whole seconds of a negative tv_usec before it checks ({2, -1000000} is
 * valid), and epoll_pwait2, which a C library may not wrap, reports the
 * engine's data (a set the kernel alone answers would not: the engine took
 * the bytes out of the kernel's socket).
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>

#ifndef SYS_epoll_pwait2
#define SYS_epoll_pwait2 441
#endif

static int s, c;
static struct scn_late late; /* (the main thread, c) */


/* What was written back of a timeout of given_ns. */
static void left(const struct timespec *t, long long given_ns)
{
	long long ns = (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
	say("a valid timespec %d, time left below what was given %d, above it minus 1000 s %d",
	    t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < 1000000000, ns < given_ns,
	    ns > given_ns - 1000000000000LL);
}

static long raw_pselect(struct timespec *t)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(s, &r);
	long n = syscall(SYS_pselect6, s + 1, &r, NULL, NULL, t, NULL);
	say("readable %d", FD_ISSET(s, &r) != 0);
	return n;
}

int main(void)
{
	char buf[8];
	late.tid = (pid_t)syscall(SYS_gettid);
	nb_pair(&c, &s);
	late.fd = c;
	arm_by_reading(c, s);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s }, out[2];
	R("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));

	/* data held: every wait answers at once */
	send(c, "data", 4, 0);
	struct pollfd p = { s, POLLIN, 0 };
	struct timespec ts = { 86400, 0 };
	R("raw ppoll a day, ready", syscall(SYS_ppoll, &p, 1, &ts, NULL, 8));
	left(&ts, 86400000000000LL);
	ts = (struct timespec){ 0, 0 };
	R("raw ppoll 0, ready", syscall(SYS_ppoll, &p, 1, &ts, NULL, 8));
	say("left %ld.%09ld", (long)ts.tv_sec, ts.tv_nsec);
	ts = (struct timespec){ 86400, 0 };
	R("raw pselect6 a day, ready", raw_pselect(&ts));
	left(&ts, 86400000000000LL);
	R("raw epoll_pwait2 2 s, ready", syscall(SYS_epoll_pwait2, ep, out, 2, &(struct timespec){ 2, 0 }, NULL, 8));
#ifdef SYS_select
	fd_set r;
	FD_ZERO(&r);
	FD_SET(s, &r);
	struct timeval tv = { 86400, 0 };
	R("raw select a day, ready", syscall(SYS_select, s + 1, &r, NULL, NULL, &tv));
	ts = (struct timespec){ tv.tv_sec, tv.tv_usec * 1000 };
	left(&ts, 86400000000000LL);
	FD_ZERO(&r);
	FD_SET(s, &r);
	tv = (struct timeval){ 2, -1000000 };
	R("raw select {2, -1000000}, ready", syscall(SYS_select, s + 1, &r, NULL, NULL, &tv));
	say("left below 1 s %d", tv.tv_sec == 0 && tv.tv_usec >= 0);
	tv = (struct timeval){ 0, -1 };
	R("raw select {0, -1}", syscall(SYS_select, s + 1, &r, NULL, NULL, &tv));
#endif
	R("raw ppoll tv_nsec 1e9", syscall(SYS_ppoll, &p, 1, &(struct timespec){ 0, 1000000000 }, NULL, 8));
	/* a set of the kernel's alone: its EFAULT for a timeout it cannot
	 * read (the library must not read it first) */
	int pp[2];
	if (pipe(pp))
		die("pipe");
	struct pollfd kp = { pp[0], POLLIN, 0 };
	R("raw ppoll, a pipe, bad timeout pointer", syscall(SYS_ppoll, &kp, 1, (void *)8, NULL, 8));
	fd_set kr;
	FD_ZERO(&kr);
	FD_SET(pp[0], &kr);
	R("raw pselect6, a pipe, bad timeout pointer", syscall(SYS_pselect6, pp[0] + 1, &kr, NULL, NULL, (void *)8, NULL));
	close(pp[0]);
	close(pp[1]);
	R("raw epoll_pwait2 tv_nsec -1", syscall(SYS_epoll_pwait2, ep, out, 2, &(struct timespec){ 0, -1 }, NULL, 8));
	R("raw epoll_pwait2 sigsetsize 4", syscall(SYS_epoll_pwait2, ep, out, 2, NULL, &(sigset_t){ { 0 } }, 4));
	R("recv", recv(s, buf, sizeof(buf), 0));

	/* nothing held: it sleeps until data comes */
	pthread_t t;
	if (pthread_create(&t, NULL, send_when_waiting, &late))
		die("pthread_create");
	ts = (struct timespec){ 86400, 0 };
	R("raw ppoll a day, data comes while it sleeps", syscall(SYS_ppoll, &p, 1, &ts, NULL, 8));
	pthread_join(t, NULL);
	left(&ts, 86400000000000LL);
	R("raw epoll_pwait2 2 s, ready", syscall(SYS_epoll_pwait2, ep, out, 2, &(struct timespec){ 2, 0 }, NULL, 8));
	R("recv", recv(s, buf, sizeof(buf), 0));
	ts = (struct timespec){ 0, 200000 };
	R("raw pselect6 200 us, idle", raw_pselect(&ts));
	say("left %ld.%09ld", (long)ts.tv_sec, ts.tv_nsec);
	close(ep);
	close(c);
	close(s);
	return 0;
}

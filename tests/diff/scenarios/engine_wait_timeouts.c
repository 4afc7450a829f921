/* The timeouts of waits over an engine socket, read as the kernel reads
 * them: select's timeval written back with the time not slept (glibc's
 * select is pselect6, which counts from the call's start: less than it
 * was given, whether it slept or answered at once),
 * tv_usec of a second or more carried into seconds,
 * a negative field or a tv_nsec out of range EINVAL (select, pselect,
 * ppoll, epoll_pwait2), and timeouts finer than a millisecond expiring
 * with nothing ready.  (How long such a wait sleeps is not asserted:
 * integration/wait_precision.sh checks what the library asks the kernel
 * for.)
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/syscall.h>

static int s, c, ep; /* the engine socket, its peer, a set holding s */
static struct scn_late late; /* (the main thread, c) */


static int sel(struct timeval *tv, int *readable)
{
	fd_set r;
	FD_ZERO(&r);
	FD_SET(s, &r);
	int n = select(s + 1, &r, NULL, NULL, tv);
	*readable = FD_ISSET(s, &r) != 0;
	return n;
}

/* epoll_pwait2 (musl has none: epoll_pwait's milliseconds there) */
static int pwait2(struct epoll_event *out, const struct timespec *t)
{
#ifdef __GLIBC__
	return epoll_pwait2(ep, out, 2, t, NULL);
#else
	return t->tv_nsec >= 1000000000 || t->tv_nsec < 0 ? (errno = EINVAL, -1)
							    : epoll_pwait(ep, out, 2, (int)(t->tv_nsec / 1000000), NULL);
#endif
}

/* A thread with no ring of its own waits on the set (the kernel's
 * epoll_pwait2 or epoll_pwait, not a ring's sleep). */
static void *wait_elsewhere(void *arg)
{
	(void)arg;
	struct epoll_event out[2];
	R("epoll_pwait2 250 us, idle, another thread", pwait2(out, &(struct timespec){ 0, 250000 }));
	R("epoll_wait 3 ms, idle, another thread", epoll_wait(ep, out, 2, 3));
	return NULL;
}

/* What select wrote back of a timeout of given_us microseconds. */
static void left(int readable, const struct timeval *tv, long long given_us)
{
	long long us = (long long)tv->tv_sec * 1000000 + tv->tv_usec;
	say("readable %d, a valid timeval %d, time left below what was given %d, above it minus 1000 s %d",
	    readable, tv->tv_sec >= 0 && tv->tv_usec >= 0 && tv->tv_usec < 1000000, us < given_us,
	    us > given_us - 1000000000LL);
}

int main(void)
{
	int rd;
	late.tid = (pid_t)syscall(SYS_gettid);
	nb_pair(&c, &s);
	late.fd = c;
	arm_by_reading(c, s);
	ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s };
	R("epoll_ctl", epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev));

	/* nothing to read: sub-millisecond timeouts expire */
	struct timeval tv = { 0, 300 };
	R("select 300 us, idle", sel(&tv, &rd));
	say("readable %d, time left %ld.%06ld", rd, (long)tv.tv_sec, (long)tv.tv_usec);
	struct timespec ts = { 0, 200000 };
	struct pollfd p = { s, POLLIN, 0 };
	R("ppoll 200 us, idle", ppoll(&p, 1, &ts, NULL));
	fd_set r;
	FD_ZERO(&r);
	FD_SET(s, &r);
	R("pselect 150 us, idle", pselect(s + 1, &r, NULL, NULL, &(struct timespec){ 0, 150000 }, NULL));
	struct epoll_event out[2];
	R("epoll_pwait2 250 us, idle", pwait2(out, &(struct timespec){ 0, 250000 }));
	pthread_t t;
	if (pthread_create(&t, NULL, wait_elsewhere, NULL))
		die("pthread_create");
	pthread_join(t, NULL);

	/* data while it sleeps: the time left is written back.  (Timeouts
	 * of a day: "more than a day minus 1000 s left" holds for any run
	 * that ends before the test's own time limit.) */
	if (pthread_create(&t, NULL, send_when_waiting, &late))
		die("pthread_create");
	tv = (struct timeval){ 86400, 0 };
	R("select a day, data comes while it sleeps", sel(&tv, &rd));
	pthread_join(t, NULL);
	left(rd, &tv, 86400000000LL);
	char buf[8];
	R("recv", recv(s, buf, sizeof(buf), 0));

	/* something to read at once: less than was given all the same */
	send(c, "data", 4, 0);
	tv = (struct timeval){ 86400, 0 };
	R("select a day, ready", sel(&tv, &rd));
	left(rd, &tv, 86400000000LL);
	tv = (struct timeval){ 86398, 2500000 };
	R("select 86398 s + 2500000 us, ready", sel(&tv, &rd));
	left(rd, &tv, 86400500000LL); /* (the seconds carried out of tv_usec) */
	tv = (struct timeval){ 0, 0 };
	R("select 0, ready", sel(&tv, &rd));
	say("readable %d, time left %ld.%06ld", rd, (long)tv.tv_sec, (long)tv.tv_usec);

	/* what the kernel refuses */
	tv = (struct timeval){ 0, -1 };
	R("select tv_usec -1", sel(&tv, &rd));
	tv = (struct timeval){ -1, 0 };
	R("select tv_sec -1", sel(&tv, &rd));
	R("ppoll tv_nsec 1e9", ppoll(&p, 1, &(struct timespec){ 0, 1000000000 }, NULL));
	R("ppoll tv_sec -1", ppoll(&p, 1, &(struct timespec){ -1, 0 }, NULL));
	FD_ZERO(&r);
	FD_SET(s, &r);
	R("pselect tv_nsec -1", pselect(s + 1, &r, NULL, NULL, &(struct timespec){ 0, -1 }, NULL));
	R("epoll_pwait2 tv_nsec 1e9", pwait2(out, &(struct timespec){ 0, 1000000000 }));

	/* and still reads what was sent */
	R("recv", recv(s, buf, sizeof(buf), 0));
	close(ep);
	close(c);
	close(s);
	return 0;
}

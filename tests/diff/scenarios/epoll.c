/* epoll: LT, ET, ONESHOT and re-arm, EXCLUSIVE, RDHUP/HUP/ERR, one socket in
 * two epoll sets, epoll inside epoll, epoll_pwait and epoll_pwait2.
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <sys/epoll.h>

static void show_events(const char *label, int n, struct epoll_event *ev)
{
	/* Sort by data so the order the kernel returns them in is irrelevant. */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (ev[j].data.u64 < ev[i].data.u64) {
				struct epoll_event t = ev[i];
				ev[i] = ev[j];
				ev[j] = t;
			}
	for (int i = 0; i < n; i++)
		say("%s: tag %llu events%s%s%s%s%s", label, (unsigned long long)ev[i].data.u64,
		    ev[i].events & EPOLLIN ? " IN" : "", ev[i].events & EPOLLOUT ? " OUT" : "",
		    ev[i].events & EPOLLRDHUP ? " RDHUP" : "", ev[i].events & EPOLLHUP ? " HUP" : "",
		    ev[i].events & EPOLLERR ? " ERR" : "");
}

static void wait_show(const char *label, int ep, int timeout)
{
	struct epoll_event ev[8];
	long n = R(label, epoll_wait(ep, ev, 8, timeout));
	if (n > 0)
		show_events(label, (int)n, ev);
}

int main(void)
{
	int c, s;
	char buf[64];
	tcp_pair(&c, &s);

	int ep = RFD("epoll_create1", epoll_create1(EPOLL_CLOEXEC));
	RFD("epoll_create(1)", epoll_create(1));
	R("epoll_create(0)", epoll_create(0));
	struct epoll_event e = { .events = EPOLLIN, .data.u64 = 1 };
	R("ctl ADD LT", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	R("ctl ADD again", epoll_ctl(ep, EPOLL_CTL_ADD, s, &e));
	wait_show("LT empty", ep, 0);
	send(c, "12345678", 8, 0);
	msleep(20);
	wait_show("LT data", ep, 1000);
	recv(s, buf, 3, 0);
	wait_show("LT still data", ep, 1000);
	recv(s, buf, sizeof(buf), 0);
	wait_show("LT drained", ep, 0);

	/* ET */
	e.events = EPOLLIN | EPOLLET;
	e.data.u64 = 2;
	R("ctl MOD ET", epoll_ctl(ep, EPOLL_CTL_MOD, s, &e));
	send(c, "abc", 3, 0);
	msleep(20);
	wait_show("ET first", ep, 1000);
	wait_show("ET no new data", ep, 0);
	send(c, "def", 3, 0);
	msleep(20);
	wait_show("ET new data", ep, 1000);
	recv(s, buf, sizeof(buf), 0);

	/* ONESHOT */
	e.events = EPOLLIN | EPOLLONESHOT;
	e.data.u64 = 3;
	R("ctl MOD ONESHOT", epoll_ctl(ep, EPOLL_CTL_MOD, s, &e));
	send(c, "x", 1, 0);
	msleep(20);
	wait_show("ONESHOT fires", ep, 1000);
	wait_show("ONESHOT disarmed", ep, 0);
	R("ctl MOD re-arm", epoll_ctl(ep, EPOLL_CTL_MOD, s, &e));
	wait_show("ONESHOT re-armed", ep, 1000);
	recv(s, buf, sizeof(buf), 0);
	R("ctl DEL", epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL));
	R("ctl DEL again", epoll_ctl(ep, EPOLL_CTL_DEL, s, NULL));
	R("ctl MOD missing", epoll_ctl(ep, EPOLL_CTL_MOD, s, &e));
	R("ctl bad fd", epoll_ctl(ep, EPOLL_CTL_ADD, 9999, &e));
	R("ctl on non-epoll", epoll_ctl(s, EPOLL_CTL_ADD, c, &e));

	/* One socket in two epoll sets; epoll in epoll. */
	int ep2 = epoll_create1(0), outer = epoll_create1(0);
	e.events = EPOLLIN;
	e.data.u64 = 10;
	epoll_ctl(ep, EPOLL_CTL_ADD, s, &e);
	e.data.u64 = 20;
	R("same socket in second set", epoll_ctl(ep2, EPOLL_CTL_ADD, s, &e));
	e.data.u64 = 30;
	R("epoll in epoll", epoll_ctl(outer, EPOLL_CTL_ADD, ep, &e));
	wait_show("outer idle", outer, 0);
	send(c, "y", 1, 0);
	msleep(20);
	wait_show("set one", ep, 1000);
	wait_show("set two", ep2, 1000);
	wait_show("outer", outer, 1000);
	recv(s, buf, sizeof(buf), 0);
	wait_show("outer after drain", outer, 0);

	/* EXCLUSIVE, OUT, RDHUP, HUP/ERR */
	int ep3 = epoll_create1(0), ep4 = epoll_create1(0);
	e.events = EPOLLIN | EPOLLRDHUP | EPOLLEXCLUSIVE;
	e.data.u64 = 50;
	R("ctl ADD EXCLUSIVE with RDHUP", epoll_ctl(ep4, EPOLL_CTL_ADD, c, &e));
	e.events = EPOLLIN | EPOLLEXCLUSIVE;
	R("ctl ADD EXCLUSIVE", epoll_ctl(ep4, EPOLL_CTL_ADD, c, &e));
	R("ctl MOD on EXCLUSIVE", epoll_ctl(ep4, EPOLL_CTL_MOD, c, &e));
	e.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP;
	e.data.u64 = 40;
	R("ctl ADD IN|OUT|RDHUP", epoll_ctl(ep3, EPOLL_CTL_ADD, c, &e));
	wait_show("writable", ep3, 1000);
	shutdown(s, SHUT_WR);
	msleep(20);
	wait_show("peer SHUT_WR", ep3, 1000);
	struct linger lg = { 1, 0 };
	setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(s);
	msleep(20);
	wait_show("peer RST", ep3, 1000);
	wait_show("exclusive set after RST", ep4, 1000);

	/* pwait and pwait2 with a mask and timeouts */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	struct epoll_event ev[4];
	R("epoll_pwait timeout", epoll_pwait(ep2, ev, 4, 10, &mask));
#ifdef __GLIBC__
	struct timespec ts = { 0, 10000000 };
	long r = epoll_pwait2(ep2, ev, 4, &ts, &mask);
	say("epoll_pwait2 timeout = %ld%s", r, r < 0 && errno == ENOSYS ? " (ENOSYS)" : "");
#else
	say("epoll_pwait2: not in this libc");
#endif
	R("epoll_wait bad maxevents", epoll_wait(ep2, ev, 0, 0));
	R("epoll_wait on non-epoll", epoll_wait(c, ev, 4, 0));
	return 0;
}

/* kwatch.c - the kernel fds of this thread's poll/select sets, watched
 * through the ring, so that a wait whose engine sockets already have an
 * answer (or that must not sleep) need not ask the kernel about the rest.
 *
 * Each kernel fd a set asks about is registered in a private epoll set
 * (level-triggered, the events asked), and the ring keeps a one-shot poll
 * of that set armed (ring.c, RS_POLL_KW).  While that poll is armed,
 * submitted and has not fired, with nothing waiting in the ring, none of
 * the registered fds can be ready:
 *   - an fd registered while ready is put on the set's ready list, and
 *     arming the poll then completes it at once (as does a registration
 *     while the poll is armed);
 *   - an fd that becomes ready later wakes the set, which fires the poll
 *     (as task work, which IORING_SQ_TASKRUN shows before it is reaped).
 * So a wait whose kernel fds are all registered with the events it asks
 * answers them "not ready" without a system call.  The registrations are
 * by fd number: any close, dup2/dup3 onto or close_range of a registered
 * number (rs_kw_fd_gone) drops every ring's set, and the kernel is asked
 * anyway at least once every RS_KW_LOOK_EVERY calls, in case a number was
 * replaced behind our back (a raw system call).  epoll refuses some fds
 * (regular files): a set with one of them always asks the kernel.
 *
 * A poll that keeps firing before it answers anything (a busy kernel fd in
 * the set) would cost an arming each time: rs_ring_poll_arm_lazy arms it
 * again only after 2, 4, ... up to 64 looks at the kernel.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <poll.h>
#include <sys/epoll.h>

#include "engine_int.h"
#include "sys.h"

#define RS_KW_NEVER 0xffffffffu
#define RS_KW_LOOK_EVERY 64
#define RS_KW_FDS 65536 /* numbers above are not watched */

/* The events a registration can watch for (POLL* and EPOLL* share these
 * values); ERR and HUP are always watched. */
#define KW_EVENTS (POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM | POLLWRBAND | POLLRDHUP)

static atomic_uint kw_gen;                     /* bumped when a watched number goes */
static _Atomic uint64_t kw_bits[RS_KW_FDS / 64]; /* numbers registered by some ring */

void rs_kw_fd_gone(int fd)
{
	if (fd < 0 || fd >= RS_KW_FDS)
		return;
	uint64_t bit = 1ull << (fd & 63);
	if (atomic_load_explicit(&kw_bits[fd >> 6], memory_order_relaxed) & bit) {
		atomic_fetch_and(&kw_bits[fd >> 6], ~bit);
		atomic_fetch_add(&kw_gen, 1);
	}
}

void rs_kw_range_gone(unsigned first, unsigned last)
{
	for (unsigned w = first >> 6; w < RS_KW_FDS / 64 && w <= last >> 6; w++)
		if (atomic_load_explicit(&kw_bits[w], memory_order_relaxed))
			for (unsigned fd = w << 6; fd < (w + 1) << 6; fd++)
				if (fd >= first && fd <= last)
					rs_kw_fd_gone((int)fd);
}

static int find(const struct rs_kwatch *w, int fd)
{
	for (unsigned i = 0; i < w->n; i++)
		if (w->reg[i].fd == fd)
			return (int)i;
	return -1;
}

/* Drop the private set (a watched number went, or the ring goes). */
void rs_kw_reset(struct rs_ring *r)
{
	struct rs_kwatch *w = &r->kw;
	rs_ring_poll_cancel(r, RS_POLL_KW);
	if (w->have)
		rs_fdguard_release(w->epfd);
	w->have = 0;
	w->n = 0;
	w->skips = 0;
}

int rs_kw_vouches(struct rs_ring *r)
{
	struct rs_kwatch *w = &r->kw;
	return w->have && w->gen == atomic_load(&kw_gen) && w->skips < RS_KW_LOOK_EVERY &&
	       rs_ring_poll_quiet(r, RS_POLL_KW, w);
}

int rs_kw_covers(struct rs_ring *r, int fd, unsigned events)
{
	struct rs_kwatch *w = &r->kw;
	int j = find(w, fd);
	return j >= 0 && w->reg[j].events != RS_KW_NEVER && !(events & KW_EVENTS & ~w->reg[j].events);
}

void rs_kw_skipped(struct rs_ring *r)
{
	r->kw.skips++;
}

int rs_kw_quiet(struct rs_ring *r, const struct pollfd *k, unsigned long n)
{
	if (!rs_kw_vouches(r))
		return 0;
	for (unsigned long i = 0; i < n; i++)
		if (k[i].fd >= 0 && !rs_kw_covers(r, k[i].fd, (unsigned)k[i].events))
			return 0;
	rs_kw_skipped(r);
	return 1;
}

/* Register fd for events (and what it had); 0, or -1 if it cannot be. */
static int watch(struct rs_kwatch *w, int fd, uint32_t events)
{
	int j = find(w, fd);
	if (j >= 0 && w->reg[j].events == RS_KW_NEVER)
		return -1;
	if (j >= 0 && !(events & ~w->reg[j].events))
		return 0;
	if (j < 0 && (w->n == RS_KW_MAX || fd >= RS_KW_FDS))
		return -1;
	struct epoll_event ev = { .events = events | (j >= 0 ? w->reg[j].events : 0), .data.fd = fd };
	if (j < 0) {
		atomic_fetch_or(&kw_bits[fd >> 6], 1ull << (fd & 63));
		j = (int)w->n++;
		w->reg[j].fd = fd;
		w->reg[j].events = 0;
		if (rs_syscall(SYS_epoll_ctl, w->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			w->reg[j].events = RS_KW_NEVER; /* a regular file, or closed */
			return -1;
		}
	} else if (rs_syscall(SYS_epoll_ctl, w->epfd, EPOLL_CTL_MOD, fd, &ev) < 0) {
		w->reg[j].events = RS_KW_NEVER;
		return -1;
	}
	w->reg[j].events = ev.events;
	return 0;
}

void rs_kw_learn(struct rs_ring *r, const struct pollfd *k, unsigned long n)
{
	struct rs_kwatch *w = &r->kw;
	unsigned gen = atomic_load(&kw_gen);
	if (w->have && w->gen != gen)
		rs_kw_reset(r);
	if (!w->have) {
		if (w->no_set)
			return;
		long fd = rs_syscall(SYS_epoll_create1, EPOLL_CLOEXEC);
		int nfd = fd < 0 ? -1 : rs_fdguard_adopt((int)fd, &w->epfd);
		if (nfd >= 0 && !rs_fdguard_is_engine_slow(nfd)) {
			/* The engine's descriptor table is full: a set the program
			 * could close (and whose number it could get back) must
			 * not be ours; this ring asks the kernel every time. */
			rs_sys_close(nfd);
			nfd = -1;
		}
		if (nfd < 0) {
			w->no_set = 1;
			return;
		}
		w->have = 1;
		w->gen = gen;
	}
	w->skips = 0;
	for (unsigned long i = 0; i < n; i++)
		if (k[i].fd >= 0 && watch(w, k[i].fd, (unsigned)k[i].events & KW_EVENTS) < 0)
			return;
	rs_ring_poll_arm_lazy(r, RS_POLL_KW, w->epfd, w);
}

/* ep.c - epoll over engine sockets and kernel fds: epoll_wait
 * (epoll_ctl is epctl.c's).
 *
 * The application's epoll fd stays a real kernel epoll set.  Every socket
 * we track is registered in it with our own data (a "cookie": the address
 * of its registration record, epreg.c), and epoll_wait translates cookies
 * back to the application's data.  For a socket the engine serves the
 * kernel registration carries no events (EPOLLET only, so HUP/ERR edges
 * still wake us) and readiness comes from engine state instead: data
 * queued, end of stream, errors, send space.  Level-triggered,
 * edge-triggered and one-shot semantics are applied here for those
 * sockets, with a ready list per epoll set as the kernel keeps one.  The
 * waiting thread's ring eventfd sits in the set (edge-triggered) so that
 * engine completions wake the kernel wait.  In ring mode the ring keeps a
 * one-shot poll of the set: a wait sleeps in io_uring_enter, and a wait
 * that will not sleep skips the kernel's epoll_wait, while that poll has
 * not fired (nothing in the kernel's part of the set has stirred).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>

#include "engine.h"
#include "ep_int.h"
#include "sys.h"

/* The first events of a round whose order against the kernel's the wait
 * keeps (ep_order). */
#define RS_EP_ORDER 64

/* ---- engine side: called with the socket's owner lock held ---------------- */

/* Report ev for g in evs[0..n): one event per registration and wait, as
 * the kernel's.  A registration this round already reported (from engine
 * state, from the kernel's events, or both) gets the new bits in that
 * event.  Returns the new count.  Called with ep->lock held. */
static int report(struct epoll_event *evs, int n, struct rs_epreg *g, uint32_t round, uint32_t ev)
{
	if (g->seen == round && g->seen_at < n && evs[g->seen_at].data.u64 == g->data) {
		evs[g->seen_at].events |= ev;
		return n;
	}
	evs[n].events = ev;
	evs[n].data.u64 = g->data;
	g->seen = round;
	g->seen_at = n;
	return n + 1;
}

/* What the kernel says of g's socket t for events, through a descriptor
 * that is still this socket's (the registered number may have been closed
 * and reused for another socket; the registration follows the open
 * socket). */
static unsigned kernel_poll(const struct rs_epreg *g, struct rs_esock *t, uint32_t events)
{
	int pfd = g->fd;
	if (rs_fd_peek(pfd) != g->s)
		pfd = rs_fd_peek(t->fd) == g->s ? t->fd : -1;
	struct pollfd p = { pfd, (short)(events & 0xffff), 0 };
	if (pfd >= 0 && rs_syscall(SYS_poll, &p, 1, 0) == 1 && !(p.revents & POLLNVAL))
		return (unsigned)p.revents;
	return 0;
}

/* What g's socket is ready for now, from engine state, or 0: nothing to
 * report this time.  A socket another thread's ring serves goes into
 * foreign[0..*nforeign), its fd into fds (up to 8), to detach; one in
 * hand-over sets *transient (look again soon).  g goes back on the ready
 * list where it must be looked at again.  *whole: the answer is the
 * socket's whole state (this thread's engine socket, no hang-up of the
 * kernel's waiting for a receive to end; or a detached socket, the
 * kernel asked), so that nothing ready means an edge has nothing to
 * report.  Called with ep->lock held. */
static unsigned reg_ready(struct rs_ep *ep, struct rs_epreg *g, struct rs_ring *r, struct rs_sock **foreign,
			  int *nforeign, int *fds, int *transient, int *whole)
{
	*whole = 0;
	struct rs_esock *t = g->s ? atomic_load(&g->s->eng) : NULL;
	if (!t) {
		/* Never armed: the kernel reports it (its registration
		 * is the whole one) and has its own edge for a new or
		 * changed registration.  Ours is dropped, or arming
		 * later would report its state a second time (after a
		 * reset the kernel reported: IN|HUP again). */
		g->edge = 0;
		return 0;
	}
	struct rs_ring *o = rs_esock_owner(t);
	int mode = rs_esock_mode(t);
	if (o && o != r && mode == RS_ES_ARMED) {
		if (*nforeign < 8) {
			fds[*nforeign] = g->fd;
			foreign[(*nforeign)++] = g->s;
		}
		rs_epr_ready_push(ep, g); /* looked at again once detached */
		return 0;
	}
	unsigned ready;
	unsigned held;
	int engine = RS_LOAD(g->engine); /* (written under the ctl lock) */
	if (engine && o == r && mode == RS_ES_ARMED) {
		ready = rs_esock_readiness(t);
		/* (the kernel's reset or hang-up shows once the receive ends) */
		*whole = !(RS_LOAD(t->k_hup) && t->recv_armed);
	} else if ((held = rs_esock_held_events(t)) != 0) {
		/* held after detaching: bytes, or an error taken from the
		 * kernel, and what the kernel says of the socket meanwhile
		 * (EPOLLPRI, EPOLLOUT...), in the same event, as one kernel
		 * registration reports it.  For a registration still the
		 * engine's (the socket in hand-over), only when its edge
		 * stands for a reset or hang-up whose kernel event the engine
		 * took (kedge; otherwise that event is still the kernel's to
		 * report, and a poll here would report it twice), all but
		 * room, the engine's until it is done. */
		ready = (held & EPOLLIN ? EPOLLIN | EPOLLRDNORM : 0) | (held & EPOLLERR);
		if (!engine)
			ready |= kernel_poll(g, t, g->events);
		else if (g->kedge)
			ready |= kernel_poll(g, t, g->events & ~(uint32_t)(EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND));
		*whole = mode == RS_ES_DETACHED && !engine;
	} else if (mode == RS_ES_DETACHED && g->kedge) {
		/* Nothing held, but a reset or hang-up whose kernel event the
		 * engine took before the socket left it, and which no
		 * EPOLL_CTL_MOD at the detach had the kernel report again:
		 * the kernel's state is the answer. */
		ready = kernel_poll(g, t, g->events);
		*whole = !engine;
	} else {
		if (mode == RS_ES_DETACHING) {
			*transient = 1;
			rs_epr_ready_push(ep, g); /* the owner may still move data */
		}
		return 0;
	}
	if (mode == RS_ES_DETACHING)
		*transient = 1;
	return ready;
}

/* The ready list's events into evs[start..max); returns the new count.
 * start == 0 begins a round; start > 0 is a second look in the same wait
 * (rs_ep_wait), at what the kernel's events just pushed. */
static int collect(struct rs_ep *ep, struct rs_ring *r, struct epoll_event *evs, int start, int max,
		   struct rs_sock **foreign, int *nforeign, int *fds, int *transient, uint64_t *clk)
{
	int n = start;
	rs_mutex_lock(&ep->lock);
	struct rs_epreg *list = ep->ready_head, *keep = NULL, *keep_tail = NULL;
	RS_STORE(ep->ready_head, NULL);
	ep->ready_tail = NULL;
	uint32_t round = start ? ep->round : ++ep->round;
	while (list) {
		struct rs_epreg *g = list;
		list = g->ready_next;
		g->on_ready = 0;
		if (n >= max) {
			rs_epr_ready_push(ep, g);
			continue;
		}
		int whole;
		unsigned ev = reg_ready(ep, g, r, foreign, nforeign, fds, transient, &whole) &
			      (g->events | EPOLLERR | EPOLLHUP);
		int et = g->events & EPOLLET;
		if (!ev && whole)
			/* Nothing it watches is ready: the edge is spent, as
			 * the kernel's wake-up is when its poll of the item
			 * finds nothing (ep_send_events).  Only where the look
			 * saw the socket's whole state: in hand-over (bytes
			 * held, the kernel's state not asked) or with a
			 * hang-up the receive has yet to show, a pending edge
			 * would be lost.  A registration of an idle socket
			 * kept the edge of its EPOLL_CTL_ADD, and the next
			 * push for another reason (SO_RCVLOWAT set, seed
			 * 26202643) reported its state as a new edge. */
			g->edge = g->kedge = 0;
		if (!ev || g->disabled || (et && !g->edge))
			continue;
		int was = n;
		n = report(evs, n, g, round, ev);
		if (clk && n > was && was < RS_EP_ORDER)
			clk[was] = g->ready_clock;
		g->edge = g->kedge = 0;
		if (g->events & EPOLLONESHOT)
			g->disabled = 1;
		else if (!et) {
			/* level-triggered: look again next time */
			g->on_ready = 1;
			g->ready_next = NULL;
			if (keep_tail)
				keep_tail->ready_next = g;
			else
				keep = g;
			keep_tail = g;
		}
	}
	if (keep) {
		/* after anything pushed meanwhile, like the kernel's list */
		if (ep->ready_tail)
			ep->ready_tail->ready_next = keep;
		else
			RS_STORE(ep->ready_head, keep);
		ep->ready_tail = keep_tail;
	}
	rs_mutex_unlock(&ep->lock);
	return n;
}

/* One round of a wait: the state the steps below share. */
struct round {
	int n;                   /* events from engine state, at the head of evs */
	uint64_t *clk;           /* [RS_EP_ORDER]: when each became ready
				  * (rs_ready_clock; not zeroed: collect
				  * writes each one it reports) */
	int nforeign;            /* sockets other threads own, to detach */
	struct rs_sock *foreign[8];
	int ffd[8];
	int transient;           /* a socket in hand-over: look again soon */
	int fetch;               /* ask the kernel's set */
	int wake;                /* woken by the engine: what it brought is on
				  * the ready list */
};

/* RINGSOCK_WAIT=ring: block in io_uring_enter with the set itself polled
 * through the ring, so one system call both sends what is queued and
 * wakes on the next completion; the kernel's part of the set is fetched
 * only when the set became readable.  Only while this thread's ring will
 * bring something: receives armed, or sends to submit.  A set of kernel
 * fds, or of sockets that still read through the kernel (new ones), is
 * cheaper to wait on with epoll_wait itself (the ring's eventfd is in the
 * set, so the ring still wakes it).  RINGSOCK_WAIT=epoll sleeps in
 * epoll_wait whenever no receive is armed: with one, what it brings
 * reaches the ring only when the thread enters it (DEFER_TASKRUN), and
 * the kernel signals the ring's eventfd for that late (16 ms per wake-up
 * seen on 6.18: a ping-pong at 60 round trips a second), so the wait
 * sleeps in the ring then too. */
static int use_ring_mode(struct rs_ring *r)
{
	if (!r || !RS_LOAD(r->owned)) /* (only this thread gives it one) */
		return 0;
	int ring = rs_rt.cfg.v[RS_K_WAIT] == RS_WAIT_RING;
	rs_ring_lock(r);
	int m = r->owned != NULL && (r->nrecv || (ring && (r->txq || r->sq_sends)));
	rs_ring_unlock(r);
	return m;
}

/* The engine's part of a round, under this thread's ring lock: progress,
 * then the ready list.  1: look again at once. */
static int engine_round(struct rs_ep *ep, int epfd, struct rs_ring *r, struct epoll_event *evs, int max,
			int ring_mode, int block, struct round *rd)
{
	rs_ring_lock(r);
	int sleepy = ring_mode && block, entered = 0;
	if (sleepy) {
		/* completions only: what the program queued goes out with the
		 * sleep, or before returning */
		rs_ring_poll_arm(r, RS_POLL_EP, epfd, ep);
		if (r->sq_recvs) {
			/* A receive not yet submitted (a socket armed since,
			 * when an epoll set registered it, or taking its input
			 * back from the kernel) has not looked at the kernel's
			 * queue: until it runs the engine would report no
			 * input the kernel holds, and an edge reported now
			 * (the registration's first) would lack it.  It runs
			 * inline at submission when the kernel has data. */
			rs_ring_progress(r);
			entered = 1;
		} else {
			entered = rs_ring_catch_up(r);
		}
	} else {
		rs_ring_progress(r);
		/* Submitted with the next call's progress; from then on a call
		 * that will not sleep skips the kernel's epoll_wait until the
		 * set has something. */
		if (ring_mode)
			rs_ring_poll_arm_lazy(r, RS_POLL_EP, epfd, ep);
	}
	rd->n = collect(ep, r, evs, 0, max, rd->foreign, &rd->nforeign, rd->ffd, &rd->transient, rd->clk);
	if (sleepy && !entered && (rd->n || rd->nforeign))
		rs_ring_submit(r);
	if (ring_mode) {
		/* A poll armed and not fired: the set has had nothing since it
		 * was armed (a one-shot poll completes at once if the set is
		 * readable when armed). */
		rd->fetch = sleepy ? rs_ring_poll_needed(r, RS_POLL_EP, ep) : !rs_ring_poll_quiet(r, RS_POLL_EP, ep);
	}
	if (!rd->n && block && !rd->nforeign) {
		rs_epr_ring_in(ep, r);
		if (ring_mode) {
			if (rs_ring_has_completions(r)) {
				rs_ring_unlock(r);
				return 1;
			}
		} else {
			rs_ring_evfd_quiet(r, 0);
			if (rs_ring_has_work(r) || rs_ring_stale_look(r)) {
				rs_ring_evfd_quiet(r, 1);
				rs_ring_unlock(r);
				return 1;
			}
		}
	}
	rs_ring_unlock(r);
	return 0;
}

/* Nothing of the engine's to look at this round: this thread's ring
 * serves no socket (so nothing of a socket's is in flight in it: a
 * socket leaves it only then), has nothing to do, and the set's ready
 * list is empty.  The kernel's set answers alone, and need not watch the
 * ring's eventfd: nothing can come through the ring meanwhile that this
 * wait must report or act on (what does, an owned socket's completion,
 * needs an owned socket; only this thread gives its ring one, so the
 * ring is looked at without its lock; the ready list's head, written
 * under the set's lock with atomic stores, is read without it: what
 * another thread pushes after the look is the next wait's, as it would
 * be after a look under the lock). */
static int kernel_only(struct rs_ep *ep, struct rs_ring *r)
{
	return !RS_LOAD(r->owned) && !rs_ring_has_work(r) && !RS_LOAD(ep->ready_head);
}

/* A kernel report for g's socket t, with what the engine holds for it:
 * the kernel's mask lacks the bytes the engine read ahead and the error
 * its receive took (the kernel's sk_err is cleared by the read that
 * returns it), which the kernel path would still report. */
static uint32_t with_held(const struct rs_epreg *g, struct rs_esock *t, uint32_t events)
{
	unsigned held = rs_esock_held_events(t);
	if (held & EPOLLIN)
		events |= (EPOLLIN | EPOLLRDNORM) & g->events;
	return events | (held & EPOLLERR);
}

/* A kernel event for a registration in engine mode: an ERR/HUP edge, room
 * in a full send buffer, or a bulk reader's input.  Returns the event to
 * report (0: none); the engine's own answer comes from its ready list. */
static uint32_t engine_sock_event(struct rs_ep *ep, struct rs_epreg *g, uint32_t events)
{
	struct rs_esock *kt = g->s ? atomic_load(&g->s->eng) : NULL;
	if (kt && (events & (EPOLLERR | EPOLLHUP))) {
		/* a reset or hang-up: engine readiness asks the kernel about
		 * it from now on */
		rs_esock_kernel_hup(kt, events);
		if (!rs_epr_kernel_input(g)) {
			rs_mutex_lock(&ep->lock);
			g->edge = 1;
			g->kedge = 1; /* (taken from the kernel: see reg_ready) */
			rs_epr_ready_push(ep, g);
			rs_mutex_unlock(&ep->lock);
		}
	}
	if ((events & EPOLLOUT) && kt && RS_LOAD(kt->kfull)) {
		/* the kernel's buffer has room again */
		RS_STORE(kt->kfull, 0);
		rs_mutex_lock(&ep->lock);
		g->edge = 1;
		rs_epr_ready_push(ep, g);
		rs_mutex_unlock(&ep->lock);
	}
	if ((events & EPOLLOUT) && !(g->kev & EPOLLET)) {
		/* level-triggered room: watched no longer */
		rs_mutex_lock(&rs_ep_ctl_lock);
		rs_epr_sync(g);
		rs_mutex_unlock(&rs_ep_ctl_lock);
	}
	uint32_t kev_out = events & EPOLLOUT;
	events &= ~(uint32_t)(EPOLLOUT | EPOLLWRNORM | EPOLLWRBAND);
	/* (one-shot: the engine's half of this round's report may have
	 * disabled it; the kernel's half joins it) */
	if (!rs_epr_kernel_input(g) || (g->disabled && g->seen != ep->round))
		return 0;
	/* A bulk reader's input, reported by the kernel; an edge carries the
	 * whole mask, as the kernel's does, with writability as the engine
	 * has it. */
	events &= g->events | EPOLLHUP | EPOLLERR;
	if ((g->events & (EPOLLET | EPOLLOUT)) == (EPOLLET | EPOLLOUT) && (events || kev_out) && kt &&
	    rs_esock_writable(kt))
		events |= EPOLLOUT;
	/* (an edge of room alone too: the bytes the engine holds are the
	 * kernel's queue on the kernel path, which its edge reports) */
	if (events && kt)
		events = with_held(g, kt, events);
	if (events && (g->events & EPOLLONESHOT))
		g->disabled = 1;
	return events;
}

/* A kernel event for a registration of a socket the kernel serves (never
 * armed, or detached): with what the engine still holds for it.  0: not
 * reported. */
static int kernel_sock_event(struct rs_ep *ep, struct rs_epreg *g, uint32_t *ev)
{
	if (g->disabled && g->seen != ep->round)
		return 0; /* one-shot, fired from engine state: the kernel's
			   * registration still has ERR/HUP */
	uint32_t events = *ev;
	struct rs_esock *t = g->s ? atomic_load(&g->s->eng) : NULL;
	if (t && rs_esock_mode(t) == RS_ES_DETACHED)
		events = with_held(g, t, events);
	if (g->events & EPOLLONESHOT)
		g->disabled = 1; /* as the kernel's registration now is, should
				  * the engine take the socket */
	*ev = events;
	return 1;
}

/* A kernel event reports the socket's input end (EPOLLRDHUP) to the
 * program through g (ep->lock held): that was the peer's FIN's edge for g
 * (unless the program shut the socket down for reading itself). */
static void end_reported(struct rs_epreg *g, uint32_t ev)
{
	if ((ev & EPOLLRDHUP) && g->s && !RS_LOAD(g->s->shut_rd))
		g->end_told = 1;
}

/* Translate the kernel's k entries after the round's n engine events:
 * cookies back to the application's data, engine sockets' edges into
 * engine readiness.  Returns the events in evs. */
static int translate(struct rs_ep *ep, struct epoll_event *evs, long k, struct round *rd)
{
	int n = rd->n, out = n;
	for (long i = 0; i < k; i++) {
		struct epoll_event e = evs[n + i];
		struct rs_epreg *g = rs_epr_cookie(ep, e.data.u64);
		if (!g) {
			/* Not a cookie: an fd the engine does not track. */
			evs[out++] = e;
			continue;
		}
		if (g->ring) {
			rd->wake = 1;
			continue;
		}
		if (RS_LOAD(g->engine)) { /* (written under the ctl lock) */
			rd->wake = 1; /* HUP/ERR edge of an engine socket */
			e.events = engine_sock_event(ep, g, e.events);
			if (!e.events)
				continue;
			rs_mutex_lock(&ep->lock);
			end_reported(g, e.events);
			out = report(evs, out, g, ep->round, e.events);
			rs_mutex_unlock(&ep->lock);
			continue;
		}
		uint32_t ev = e.events;
		if (!kernel_sock_event(ep, g, &ev))
			continue;
		/* (also reported from engine state this round: merged) */
		rs_mutex_lock(&ep->lock);
		end_reported(g, ev);
		out = report(evs, out, g, ep->round, ev);
		rs_mutex_unlock(&ep->lock);
	}
	return out;
}

/* The kernel's events of this wait (evs[rd->n..out)) after the engine's
 * (evs[0..rd->n)), as collected.  The kernel reports in the order things
 * became ready; so where the ring says when the kernel's set became
 * readable (its poll fired at rs_ready_clock f), the engine's events that
 * became ready after that go after the kernel's: a peer's end the kernel
 * saw first is not reported after bytes the engine received later.  (f 0:
 * not known, the order stays.) */
static void ep_order(struct epoll_event *evs, const struct round *rd, int out, uint64_t f)
{
	if (!f || rd->n > RS_EP_ORDER)
		return;
	struct epoll_event late[RS_EP_ORDER];
	int nl = 0, w = 0;
	for (int i = 0; i < rd->n; i++) {
		if (rd->clk[i] > f)
			late[nl++] = evs[i];
		else
			evs[w++] = evs[i];
	}
	if (!nl)
		return;
	memmove(evs + w, evs + rd->n, (size_t)(out - rd->n) * sizeof(*evs));
	memcpy(evs + w + (out - rd->n), late, (size_t)nl * sizeof(*evs));
}

/* A blocking wait of this thread's returned out of max events: count the
 * wakes that had one socket to serve (see struct rs_ring: alone).  A
 * count of calls, never a clock: a loop with one connection (a ping-pong
 * peer, one request at a time) gets there on its 64th wait, every run. */
#define RS_ALONE_WAKES 64
static void count_wake(struct rs_ring *r, int out, int max)
{
	if (out == 1 && max > 1) {
		if (r->lone_wakes < RS_ALONE_WAKES && ++r->lone_wakes == RS_ALONE_WAKES)
			RS_STORE(r->alone, 1);
	} else if (out > 1) {
		r->lone_wakes = 0;
		if (r->alone)
			RS_STORE(r->alone, 0);
	}
}

/* How long this round may wait (ns, -1: no bound): not at all with events
 * in hand, what is left of the caller's timeout, 10 ms while a socket is
 * in hand-over or the ring may hide work. */
static int64_t round_timeout(struct rs_ring *r, int ring_mode, int64_t timeout_ns, int64_t *deadline,
			     struct round *rd)
{
	int64_t t_ns = rs_wait_left(rd->n ? 0 : timeout_ns, timeout_ns, deadline);
	if (r && RS_LOAD(r->tr_stale) && !ring_mode)
		rd->transient = 1; /* work the ring may hide: look again soon */
	if (rd->transient && (t_ns < 0 || t_ns > RS_WAIT_SLICE_NS)) {
		t_ns = RS_WAIT_SLICE_NS; /* a socket in hand-over: look again soon */
		rd->wake = 1;
	}
	return t_ns;
}

/* The kernel's epoll_pwait of ms milliseconds (blocking: a cancellation
 * point, like libc's); with no signal mask, epoll_wait, as the C library
 * makes it where the kernel has it (not on AArch64; where a seccomp
 * filter refuses it (EPERM), epoll_pwait from then on): it skips the
 * kernel's signal-mask steps. */
static long kernel_epoll(int epfd, struct epoll_event *evs, int max, long ms, const sigset_t *ss, int blocking)
{
#ifdef SYS_epoll_wait
	static int no_wait;
	if (!ss && !RS_LOAD(no_wait)) {
		long k = blocking ? rs_blocking_syscall(SYS_epoll_wait, epfd, (long)evs, max, ms, 0, 0)
				  : rs_syscall(SYS_epoll_wait, epfd, evs, max, ms);
		if (k != -ENOSYS && k != -EPERM)
			return k;
		RS_STORE(no_wait, 1);
	}
#endif
	return blocking ? rs_blocking_syscall(SYS_epoll_pwait, epfd, (long)evs, max, ms, (long)ss, 8)
			: rs_syscall(SYS_epoll_pwait, epfd, evs, max, ms, ss, 8);
}

/* The kernel's wait on the set for t_ns (-1: no bound): kernel_epoll in
 * whole milliseconds, epoll_pwait2 for a timeout finer than that (where
 * it is missing, before 5.11, or refused, by a seccomp filter that
 * predates it (EPERM): the milliseconds rounded up, as a program's own
 * epoll_wait would ask). */
static long kernel_wait(int epfd, struct epoll_event *evs, int max, int64_t t_ns, const sigset_t *ss)
{
	static int no_pwait2;
	if (t_ns > 0 && t_ns % 1000000 && !RS_LOAD(no_pwait2)) {
		struct timespec ts = rs_ns_timespec(t_ns);
		long k = rs_blocking_syscall(SYS_epoll_pwait2, epfd, (long)evs, max, (long)&ts, (long)ss, 8);
		if (k != -ENOSYS && k != -EPERM)
			return k;
		RS_STORE(no_pwait2, 1);
	}
	int64_t ms = t_ns < 0 ? -1 : (t_ns + 999999) / 1000000;
	return kernel_epoll(epfd, evs, max, ms > INT32_MAX ? -1 : (long)ms, ss, 1);
}

/* Nothing anywhere: sleep in the ring, the set polled by it, submitting
 * what is queued in the same system call.  Not holding the lock: another
 * thread may take it and reap meanwhile; it wakes us through the set (it
 * writes our eventfd, which is in it).  A handler that ran during a call
 * that submitted is reported by sig.c, not the kernel.  Returns 0 (look
 * again), -ETIME (slept t_ns) or -EINTR (a handler ran). */
static int sleep_in_ring(struct rs_ep *ep, struct rs_ring *r, int64_t t_ns, const sigset_t *ss)
{
	rs_ring_lock(r);
	if (rs_ring_has_completions(r) || rs_ring_poll_needed(r, RS_POLL_EP, ep)) {
		rs_ring_unlock(r);
		return 0;
	}
	rs_sig_clear();
	int e = rs_ring_sleep(r, t_ns, ss);
	if (e == -EINTR || rs_sig_take())
		return -EINTR;
	return e == -ETIME ? -ETIME : 0;
}

/* The round's events: the engine's rd->n at the head of evs, the kernel's
 * k after them, translated, with what the kernel's events pushed on the
 * ready list, in the order things became ready.  Returns their count. */
static int round_events(struct rs_ep *ep, struct rs_ring *r, struct epoll_event *evs, int max, long k,
			struct round *rd)
{
	int out = translate(ep, evs, k, rd);
	/* when the kernel's set became readable, if the ring saw it */
	uint64_t fired = 0;
	if (r && rd->fetch) {
		rs_ring_lock(r);
		fired = rs_ring_poll_take_fired(r, RS_POLL_EP, ep);
		rs_ring_unlock(r);
	}
	if (out > 0 && rd->wake && out < max) {
		/* What the kernel's events pushed on the ready list (an engine
		 * socket's ERR/HUP edge) belongs to this wait: the kernel
		 * reports it with the rest, in the registration's one event.
		 * (Sockets of other threads found now are looked at by the
		 * next wait.) */
		struct rs_sock *f2[8];
		int fd2[8], nf2 = 0, tr2 = 0;
		if (r)
			rs_ring_lock(r);
		out = collect(ep, r, evs, out, max, f2, &nf2, fd2, &tr2, NULL);
		if (r)
			rs_ring_unlock(r);
	}
	if (out > 0 || !rd->wake) {
		if (!rd->fetch) /* answered without asking the kernel */
			rs_stat_add(RS_C_CALLS_NOSYS, 1);
		else if (out > rd->n && rd->n > 0)
			ep_order(evs, rd, out, fired);
	}
	return out;
}

int rs_ep_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms, const struct timespec *tmo,
	       const sigset_t *ss)
{
	struct rs_ep *ep = rs_ep_get(epfd, 0);
	struct rs_ring *r = rs_ring_tls;
	rs_ring_round_end(r); /* (a wait call: rs_ring_may_queue) */
	if (!ep) {
		if (r && rs_ring_has_work(r)) {
			rs_ring_lock(r);
			rs_ring_progress(r);
			rs_ring_unlock(r);
		}
		return (int)RS_PASS;
	}
	int64_t timeout_ns = tmo ? rs_timeout_ns(tmo) : rs_ms_ns(timeout_ms);
	if (timeout_ns == RS_TMO_INVALID || max <= 0 || max > (int)(INT32_MAX / sizeof(struct epoll_event)))
		return -EINVAL;
	int64_t deadline = -1; /* read from the clock when the call first sleeps */
	int ring_mode = use_ring_mode(r);
	int looked_again = 0;
	uint64_t clk[RS_EP_ORDER];
	for (;;) {
		struct round rd; /* (its arrays are read only up to nforeign) */
		rd.n = rd.nforeign = rd.transient = rd.wake = 0;
		rd.fetch = 1;
		rd.clk = clk;
		int block = timeout_ns != 0;
		if (r) {
			if ((ring_mode || !kernel_only(ep, r)) &&
			    engine_round(ep, epfd, r, evs, max, ring_mode, block, &rd))
				continue;
		} else {
			/* No ring here: sockets of other threads in this set. */
			rd.n = collect(ep, NULL, evs, 0, max, rd.foreign, &rd.nforeign, rd.ffd, &rd.transient, NULL);
		}
		for (int i = 0; i < rd.nforeign; i++)
			rs_sock_before_kernel(rd.foreign[i], rd.ffd[i], RINGSOCK_PT_THREAD);
		if (rd.nforeign) {
			if (r)
				rs_ring_evfd_quiet(r, 1);
			continue;
		}
		int n = rd.n;
		int64_t t_ns = round_timeout(r, ring_mode, timeout_ns, &deadline, &rd);
		long k = 0;
		int sleeps = !ring_mode && t_ns != 0;
		if (sleeps)
			rs_sig_clear();
		if (rd.fetch && sleeps)
			k = kernel_wait(epfd, evs + n, max - n, t_ns, ss);
		else if (rd.fetch)
			k = kernel_epoll(epfd, evs + n, max - n, 0, ss, 0);
		if (k == -EINTR && sleeps && !rs_sig_take() && !rs_sig_untracked_any()) {
			/* No handler ran: the kernel cut the sleep for io_uring task
			 * work of this thread, which the program must not see. */
			if (r)
				rs_ring_evfd_quiet(r, 1);
			continue;
		}
		if (r && !ring_mode)
			rs_ring_evfd_quiet(r, 1);
		if (ring_mode && !k && !n && block) {
			int e = sleep_in_ring(ep, r, t_ns, ss);
			if (e == -EINTR)
				return -EINTR;
			if (e == -ETIME && (!rd.wake || (deadline >= 0 && rs_now_ns() >= deadline)))
				return 0;
			continue;
		}
		if (k < 0)
			return n ? n : (int)k;
		int out = round_events(ep, r, evs, max, k, &rd);
		if (out > 0 || !rd.wake) {
			if (r && timeout_ns != 0)
				count_wake(r, out, max);
			return out;
		}
		/* Woken by a completion, an ERR/HUP edge of an engine socket or
		 * a ring's eventfd: what it brought is on the ready list now.  A
		 * poll with no timeout looks once more. */
		if (timeout_ns == 0 && looked_again++)
			return 0;
		if (deadline >= 0 && rs_now_ns() >= deadline)
			return 0;
	}
}


/* Unit tests for the socket core's state transitions (src/sock.c), on real
 * io_uring rings (each thread's, made by ring.c as the engine makes them):
 * arming, detaching on the owner's thread and from another, finishing a
 * detach (only once the kind says nothing is in flight), passive, close
 * while armed (on the owner's thread and another's), while detaching and
 * once detached, a close with another descriptor still open, thread exit
 * (ring gone, for an armed socket and a closing one) and the fork child.
 *
 * The sockets are of a test kind ("fk", a struct rs_kind_ops of its own
 * registered for SOCK_STREAM): its receive is a real multishot poll on the
 * socket through the ring (started and cancelled with sock.c's receive
 * bookkeeping, its completions dispatched by ring.c to the kind), and its
 * hooks count their calls.  So every change of state the test sees is
 * sock.c's, and the kind's part is only what its table says.  The thread
 * exit hook does what engine.c's does (rs_esock_ring_gone for every socket
 * the ring owns). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "engine_int.h"

/* The engine's fault hook (engine_int.h): none here. */
int ringsock_test_fault(int site)
{
	(void)site;
	return 0;
}

/* ---- the test kind ------------------------------------------------------------ */

struct fk {
	struct rs_esock e;
	int holds;   /* holds_nothing says 0 while set */
	int fd_free; /* close_fd_free's answer */
	int gone_nowait; /* ring_gone gives up at once (as TCP's does after
			  * 10 s), its receive still in flight */
};

static struct {
	int process_detach, leave_ring, flush_direct, ring_gone, fork_child;
	int close_own, close_unread, drop_held, destroy;
	struct rs_ring *unread_ring;  /* close_unread's r */
	struct rs_esock *destroyed;   /* the last socket destroyed */
	int mode_at_close_own;        /* e's mode when close_own ran */
	int ring_gone_bad;            /* ring_gone found a socket neither
				       * DETACHING nor closing */
} n;

static const struct rs_kind_ops fk_ops;

static struct rs_esock *fk_arm(struct rs_sock *s, int fd)
{
	struct rs_ring *r;
	struct fk *k = rs_esock_new(s, fd, &fk_ops, sizeof(*k), &r);
	if (!k)
		return NULL;
	rs_ring_lock(r);
	if (rs_esock_install(r, &k->e) < 0) {
		free(k);
		return NULL;
	}
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	assert_non_null(sqe);
	io_uring_prep_poll_multishot(sqe, fd, POLLIN);
	rs_esock_recv_started(r, &k->e, sqe);
	return &k->e;
}

static int fk_arm_when_watched(struct rs_sock *s)
{
	(void)s;
	return 1;
}

/* The receive ends with a completion without F_MORE (its cancel, or the
 * poll's end); the cancel has one of its own. */
static void fk_complete(struct rs_ring *r, struct rs_esock *e, int op, struct io_uring_cqe *c)
{
	if (op == RS_UD_RECV && !(c->flags & IORING_CQE_F_MORE)) {
		e->recv_armed = 0;
		r->nrecv--;
		e->ops_inflight--;
	} else if (op == RS_UD_CANCEL) {
		e->ops_inflight--;
	}
	rs_esock_maybe_finish(r, e);
}

static void fk_nop_r(struct rs_ring *r, struct rs_esock *e)
{
	(void)r;
	(void)e;
}

static void fk_nop(struct rs_esock *e)
{
	(void)e;
}

static void fk_process_detach(struct rs_ring *r, struct rs_esock *e)
{
	n.process_detach++;
	rs_esock_cancel_recv(r, e);
	rs_esock_maybe_finish(r, e);
}

static int recv_gone(void *arg)
{
	return !((struct rs_esock *)arg)->recv_armed;
}

struct gone_arg {
	struct rs_ring *r;
	struct rs_esock *e;
};

static int left_or_ended(void *arg)
{
	struct gone_arg *g = arg;
	return g->r->owned != g->e || !g->e->recv_armed;
}

static void fk_ring_gone(struct rs_ring *r, struct rs_esock *e)
{
	n.ring_gone++;
	if (e->mode != RS_ES_DETACHING && !e->closing)
		n.ring_gone_bad++;
	if (((struct fk *)e)->gone_nowait)
		return;
	rs_esock_cancel_recv(r, e);
	struct gone_arg g = { r, e };
	rs_ring_wait(r, left_or_ended, &g, 10000);
}

static int fk_detach_done(struct rs_esock *e)
{
	return !e->recv_armed;
}

static void fk_leave_ring(struct rs_ring *r, struct rs_esock *e)
{
	(void)r;
	(void)e;
	n.leave_ring++;
}

static void fk_fork_child(struct rs_esock *e)
{
	(void)e;
	n.fork_child++;
}

static int fk_zero(struct rs_esock *e)
{
	(void)e;
	return 0;
}

static size_t fk_flush_direct(struct rs_esock *e)
{
	(void)e;
	n.flush_direct++;
	return 0;
}

static void fk_destroy(struct rs_esock *e)
{
	n.destroy++;
	n.destroyed = e;
}

static unsigned fk_events(struct rs_esock *e)
{
	(void)e;
	return 0;
}

static int fk_close_fd_free(struct rs_esock *e)
{
	return ((struct fk *)e)->fd_free;
}

static void fk_close_own(struct rs_ring *r, struct rs_esock *e)
{
	n.close_own++;
	n.mode_at_close_own = e->mode;
	rs_esock_cancel_recv(r, e);
	rs_ring_wait(r, recv_gone, e, 5000);
}

static void fk_close_unread(struct rs_ring *r, struct rs_esock *e, int fd)
{
	(void)e;
	(void)fd;
	n.close_unread++;
	n.unread_ring = r;
}

static void fk_drop_held(struct rs_esock *e)
{
	(void)e;
	n.drop_held++;
}

static int fk_holds_nothing(struct rs_esock *e)
{
	return !((struct fk *)e)->holds;
}

static const struct rs_kind_ops fk_ops = {
	.name = "fk",
	.rx_group = RS_BGID_TCP,
	.arm = fk_arm,
	.arm_when_watched = fk_arm_when_watched,
	.complete = fk_complete,
	.submit_recv = fk_nop_r,
	.submit_tx = fk_nop_r,
	.process_detach = fk_process_detach,
	.drain_ended = fk_nop_r,
	.flush_queued = fk_nop_r,
	.ring_gone = fk_ring_gone,
	.detach_done = fk_detach_done,
	.leave_ring = fk_leave_ring,
	.spawn_prepare = fk_nop,
	.fork_prepare = fk_nop,
	.fork_child = fk_fork_child,
	.tx_pending = fk_zero,
	.flush_direct = fk_flush_direct,
	.sync_tx = fk_nop,
	.close_fd_free = fk_close_fd_free,
	.close_own = fk_close_own,
	.close_unread = fk_close_unread,
	.drop_held = fk_drop_held,
	.holds_nothing = fk_holds_nothing,
	.destroy = fk_destroy,
	.readiness = fk_events,
	.held_events = fk_events,
	.kernel_input = fk_zero,
};

/* ---- the engine, as engine.c starts it, with the test kind ------------------ */

/* engine.c's thread exit: every socket the ring owns leaves it. */
static void thread_exit(void *arg)
{
	struct rs_ring *r = arg;
	if (!r || r != rs_ring_tls)
		return;
	rs_ring_lock(r);
	while (r->owned)
		rs_esock_ring_gone(r, r->owned);
	rs_ring_teardown(r);
	rs_ring_unlock(r);
}

static int refused;

static int group_setup(void **state)
{
	(void)state;
	assert_int_equal(rs_config_parse(&rs_rt.cfg, NULL, NULL, NULL), 0);
	rs_rt.pid = getpid();
	rs_esock_kind(SOCK_STREAM, &fk_ops);
	assert_int_equal(rs_ring_init(thread_exit, NULL), 0);
	rs_engine_on = 1;
	if (!rs_ring_get())
		refused = 1; /* io_uring (DEFER_TASKRUN) refused by the kernel */
	return 0;
}

#define SKIP_IF_REFUSED() \
	do { \
		if (refused) { \
			print_message("io_uring refused by the kernel\n"); \
			skip(); \
		} \
	} while (0)

struct sk {
	int sv[2];
	struct rs_sock *s; /* the record of sv[0] (one reference) */
};

static void sk_open(struct sk *k)
{
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, k->sv), 0);
	assert_int_equal(rs_fd_track(k->sv[0], AF_UNIX, SOCK_STREAM, 0), 0);
	k->s = rs_fd_get(k->sv[0]);
	assert_non_null(k->s);
	assert_int_equal(atomic_load(&k->s->nfds), 1);
}

static void sk_close(struct sk *k)
{
	rs_fd_forget(k->sv[0]);
	rs_sock_put(k->s);
	close(k->sv[0]);
	close(k->sv[1]);
}

static int setup(void **state)
{
	(void)state;
	memset(&n, 0, sizeof(n));
	return 0;
}

static int on_owned(struct rs_ring *r, struct rs_esock *e)
{
	for (struct rs_esock *x = r->owned; x; x = x->next)
		if (x == e)
			return 1;
	return 0;
}

static struct rs_esock *arm(struct sk *k)
{
	struct rs_esock *e = rs_esock_enter(k->s, k->sv[0], 1);
	assert_non_null(e);
	return e;
}

static int no_owner(void *arg)
{
	return RS_LOAD(((struct rs_esock *)arg)->owner) == NULL;
}

static int destroyed(void *arg)
{
	return n.destroyed == arg;
}

/* ---- arming ------------------------------------------------------------------- */

/* The first call arms the socket on this thread's ring: ARMED, owned and
 * on the ring's list, published in the record, its receive in flight; the
 * owner's next call finds it as it is (no detach). */
static void test_arm(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk k;
	sk_open(&k);
	struct rs_ring *r = rs_ring_tls;
	unsigned nrecv = r->nrecv;
	struct rs_esock *e = arm(&k);
	assert_int_equal(e->mode, RS_ES_ARMED);
	assert_ptr_equal(e->owner, r);
	assert_ptr_equal(rs_esock_held_ring(), r);
	assert_true(on_owned(r, e));
	assert_ptr_equal(atomic_load(&k.s->eng), e);
	assert_true(e->recv_armed);
	assert_int_equal(e->ops_inflight, 1);
	assert_int_equal(r->nrecv, nrecv + 1);
	assert_int_equal(e->fd, k.sv[0]);
	rs_esock_unlock(e);
	struct rs_esock *again = rs_esock_enter(k.s, k.sv[0], 0);
	assert_ptr_equal(again, e);
	assert_int_equal(e->mode, RS_ES_ARMED);
	assert_int_equal(n.flush_direct, 0);
	/* not passive while armed, whatever the kind holds */
	rs_esock_maybe_passive(e);
	assert_false(e->passive);
	rs_esock_unlock(e);
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_ptr_equal(n.destroyed, e);
	sk_close(&k);
}

/* ---- detaching ---------------------------------------------------------------- */

/* On the owner's thread: ARMED -> DETACHING (the kind cancels its receive)
 * -> DETACHED once the receive ended, the socket off the ring (the kind's
 * leave_ring) and guarded by its mutex; then passive once the kind holds
 * nothing, and only then. */
static void test_detach_own(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk k;
	sk_open(&k);
	struct rs_ring *r = rs_ring_tls;
	struct rs_esock *e = arm(&k);
	struct fk *f = (struct fk *)e;
	unsigned nrecv = r->nrecv;
	rs_esock_detach_self(e, RINGSOCK_PT_OPTION);
	assert_int_equal(n.process_detach, 1);
	assert_int_equal(e->mode, RS_ES_DETACHED);
	assert_null(e->owner);
	assert_false(on_owned(r, e));
	assert_false(e->recv_armed);
	assert_int_equal(e->ops_inflight, 0);
	assert_int_equal(r->nrecv, nrecv - 1);
	assert_int_equal(n.leave_ring, 1);
	assert_false(e->passive);
	rs_esock_unlock(e); /* (r's lock: held when it was entered) */
	/* now the socket's own mutex guards it */
	e = rs_esock_enter(k.s, k.sv[0], 0);
	assert_null(rs_esock_held_ring());
	f->holds = 1;
	rs_esock_maybe_passive(e);
	assert_false(e->passive);
	f->holds = 0;
	rs_esock_maybe_passive(e);
	assert_true(e->passive);
	rs_esock_unlock(e);
	assert_int_equal(n.destroy, 0);
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_ptr_equal(n.destroyed, e);
	sk_close(&k);
}

struct other {
	struct sk *k;
	int close;               /* 1: the other thread closes it */
	int mode;                /* e's mode as it saw it */
	int on_detach;
	struct rs_esock *e;
};

static void *other_thread(void *arg)
{
	struct other *o = arg;
	if (o->close) {
		rs_esock_close(o->k->s, o->k->sv[0]);
		o->mode = o->e->mode;
		o->on_detach = o->e->on_detach;
		return NULL;
	}
	struct rs_esock *e = rs_esock_enter(o->k->s, o->k->sv[0], 0);
	o->e = e;
	o->mode = e->mode;
	o->on_detach = e->on_detach;
	rs_esock_unlock(e);
	return NULL;
}

static void run_other(struct other *o)
{
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, other_thread, o), 0);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* From another thread: its call takes the socket over (DETACHING: sends
 * written out there, the owner told through its detach list) but the
 * socket stays on the owner's ring; the owner's rs_esock_maybe_finish does
 * not finish it while the receive is in flight; the owner's next round
 * cancels it and finishes: DETACHED, owner NULL. */
static void test_detach_other(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk k;
	sk_open(&k);
	struct rs_ring *r = rs_ring_tls;
	struct rs_esock *e = arm(&k);
	rs_esock_unlock(e);
	struct other o = { .k = &k };
	run_other(&o);
	assert_ptr_equal(o.e, e);
	assert_int_equal(o.mode, RS_ES_DETACHING);
	assert_true(o.on_detach);
	assert_int_equal(n.flush_direct, 1);
	rs_ring_lock(r);
	assert_ptr_equal(e->owner, r);
	assert_true(on_owned(r, e));
	rs_esock_maybe_finish(r, e); /* the receive is in flight: not yet */
	assert_int_equal(e->mode, RS_ES_DETACHING);
	assert_ptr_equal(e->owner, r);
	assert_int_equal(rs_ring_wait(r, no_owner, e, 5000), 0);
	assert_int_equal(n.process_detach, 1);
	assert_int_equal(e->mode, RS_ES_DETACHED);
	assert_false(on_owned(r, e));
	assert_false(e->recv_armed);
	assert_int_equal(n.leave_ring, 1);
	rs_ring_unlock(r);
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_ptr_equal(n.destroyed, e);
	sk_close(&k);
}

/* ---- close -------------------------------------------------------------------- */

/* Armed, closed on the owner's thread: the kind's close_own (receive
 * ended, ARMED still), close_unread (this ring) and drop_held, then freed
 * at once (off the ring, leave_ring), the record no longer names it. */
static void test_close_armed_own(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk k;
	sk_open(&k);
	struct rs_ring *r = rs_ring_tls;
	struct rs_esock *e = arm(&k);
	rs_esock_unlock(e);
	unsigned nrecv = r->nrecv;
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_int_equal(n.close_own, 1);
	assert_int_equal(n.mode_at_close_own, RS_ES_ARMED);
	assert_int_equal(n.close_unread, 1);
	assert_ptr_equal(n.unread_ring, r);
	assert_int_equal(n.drop_held, 1);
	assert_int_equal(n.leave_ring, 1);
	assert_ptr_equal(n.destroyed, e);
	assert_null(atomic_load(&k.s->eng));
	assert_false(on_owned(r, e));
	assert_int_equal(r->nrecv, nrecv - 1);
	assert_int_equal(n.process_detach, 0);
	sk_close(&k);
}

/* Armed on this thread, closed by another: it detaches the socket and asks
 * the owner (close_unread with the owner's ring, not close_own: the
 * receive is the owner's to cancel); the socket is closing, fd -1, still
 * on the owner's ring, not freed; the owner's next round cancels the
 * receive, and the socket is freed then. */
static void test_close_armed_other(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk k;
	sk_open(&k);
	struct rs_ring *r = rs_ring_tls;
	struct rs_esock *e = arm(&k);
	rs_esock_unlock(e);
	struct other o = { .k = &k, .close = 1, .e = e };
	run_other(&o);
	assert_int_equal(n.close_own, 0);
	assert_int_equal(n.close_unread, 1);
	assert_ptr_equal(n.unread_ring, r);
	assert_int_equal(n.drop_held, 1);
	assert_true(o.on_detach);
	assert_int_equal(n.destroy, 0);
	assert_null(atomic_load(&k.s->eng));
	rs_ring_lock(r);
	assert_true(e->closing);
	assert_int_equal(e->fd, -1);
	assert_true(on_owned(r, e));
	assert_int_equal(rs_ring_wait(r, destroyed, e, 5000), 0);
	assert_int_equal(n.process_detach, 1);
	assert_int_equal(n.leave_ring, 1);
	rs_ring_unlock(r);
	sk_close(&k);
}

/* Detaching (another thread took it over), closed on the owner's thread:
 * close_own's wait lets the owner finish the detach meanwhile (DETACHED,
 * owner NULL), and the socket is freed before close returns. */
static void test_close_detaching(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk k;
	sk_open(&k);
	struct rs_ring *r = rs_ring_tls;
	struct rs_esock *e = arm(&k);
	rs_esock_unlock(e);
	struct other o = { .k = &k };
	run_other(&o);
	assert_int_equal(o.mode, RS_ES_DETACHING);
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_int_equal(n.close_own, 1);
	assert_int_equal(n.mode_at_close_own, RS_ES_DETACHING);
	assert_int_equal(n.process_detach, 1);
	assert_ptr_equal(n.destroyed, e);
	assert_false(on_owned(r, e));
	sk_close(&k);
}

/* Detached (no owner), closed: no close_own, close_unread without a
 * ring, freed at once under the socket's mutex. */
static void test_close_detached(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk k;
	sk_open(&k);
	struct rs_esock *e = arm(&k);
	rs_esock_detach_self(e, RINGSOCK_PT_OPTION);
	rs_esock_unlock(e);
	assert_null(e->owner);
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_int_equal(n.close_own, 0);
	assert_int_equal(n.close_unread, 1);
	assert_null(n.unread_ring);
	assert_int_equal(n.drop_held, 1);
	assert_ptr_equal(n.destroyed, e);
	assert_int_equal(n.leave_ring, 1); /* (the detach's, not again) */
	sk_close(&k);
}

/* Another descriptor keeps the socket open: closing one changes no state;
 * a detached socket lets go of the closed number when its kind says it
 * may (close_fd_free), and keeps it when not. */
static void test_close_dup(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk k;
	sk_open(&k);
	int d = dup(k.sv[0]);
	assert_true(d >= 0);
	rs_fd_dup(k.sv[0], d);
	assert_int_equal(atomic_load(&k.s->nfds), 2);
	struct rs_esock *e = arm(&k); /* (armed before the dup's call) */
	rs_esock_unlock(e);
	assert_int_equal(rs_esock_close(k.s, d), 0);
	assert_int_equal(e->mode, RS_ES_ARMED);
	assert_ptr_equal(atomic_load(&k.s->eng), e);
	assert_int_equal(n.drop_held + n.close_unread + n.destroy, 0);
	e = rs_esock_enter(k.s, k.sv[0], 0);
	rs_esock_detach_self(e, RINGSOCK_PT_OPTION);
	rs_esock_unlock(e);
	((struct fk *)e)->fd_free = 0;
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_int_equal(e->fd, k.sv[0]);
	((struct fk *)e)->fd_free = 1;
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_int_equal(e->fd, -1);
	assert_int_equal(e->mode, RS_ES_DETACHED);
	assert_false(e->closing);
	assert_int_equal(n.destroy, 0);
	rs_fd_forget(d);
	close(d);
	assert_int_equal(atomic_load(&k.s->nfds), 1);
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_ptr_equal(n.destroyed, e);
	sk_close(&k);
}

/* ---- thread exit, fork ------------------------------------------------------------ */

struct exiting {
	struct sk *armed, *closed, *stuck;
	struct rs_esock *ea, *ec, *es;
	pthread_barrier_t b;
};

static void *exiting_thread(void *arg)
{
	struct exiting *x = arg;
	x->ea = rs_esock_enter(x->armed->s, x->armed->sv[0], 1);
	rs_esock_unlock(x->ea);
	x->ec = rs_esock_enter(x->closed->s, x->closed->sv[0], 1);
	rs_esock_unlock(x->ec);
	x->es = rs_esock_enter(x->stuck->s, x->stuck->sv[0], 1);
	((struct fk *)x->es)->gone_nowait = 1;
	rs_esock_unlock(x->es);
	pthread_barrier_wait(&x->b); /* armed */
	pthread_barrier_wait(&x->b); /* the main thread closed one */
	return NULL; /* the ring goes (thread_exit) */
}

/* The owner thread exits: an armed socket becomes DETACHING, the kind's
 * ring_gone ends its receive, and it is DETACHED with no owner; one whose
 * kind's ring_gone gave up with its receive in flight is DETACHED by the
 * core all the same (the ring's teardown ends the receive); a socket
 * another thread closed meanwhile (closing, still on the ring) is freed. */
static void test_ring_gone(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk a, c, st;
	sk_open(&a);
	sk_open(&c);
	sk_open(&st);
	struct exiting x = { .armed = &a, .closed = &c, .stuck = &st };
	pthread_barrier_init(&x.b, NULL, 2);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, exiting_thread, &x), 0);
	pthread_barrier_wait(&x.b);
	struct rs_ring *r = RS_LOAD(x.ea->owner);
	assert_non_null(r);
	assert_ptr_not_equal(r, rs_ring_tls);
	assert_int_equal(rs_esock_close(c.s, c.sv[0]), 0); /* closing, on r */
	assert_int_equal(n.destroy, 0);
	assert_int_equal(x.ec->mode, RS_ES_DETACHING);
	pthread_barrier_wait(&x.b);
	assert_int_equal(pthread_join(th, NULL), 0);
	pthread_barrier_destroy(&x.b);
	assert_ptr_equal(n.destroyed, x.ec);
	assert_int_equal(n.destroy, 1);
	struct rs_esock *e = x.ea;
	assert_true(n.ring_gone >= 2);
	assert_int_equal(n.ring_gone_bad, 0);
	assert_int_equal(x.es->mode, RS_ES_DETACHED);
	assert_null(x.es->owner);
	assert_int_equal(e->mode, RS_ES_DETACHED);
	assert_null(e->owner);
	assert_false(e->recv_armed);
	assert_false(e->closing);
	assert_int_equal(e->ops_inflight, 0);
	assert_null(r->owned);
	assert_int_equal(rs_esock_close(a.s, a.sv[0]), 0);
	assert_ptr_equal(n.destroyed, e);
	assert_int_equal(rs_esock_close(st.s, st.sv[0]), 0);
	assert_ptr_equal(n.destroyed, x.es);
	sk_close(&a);
	sk_close(&c);
	sk_close(&st);
}

/* In a fork child (a real fork): an armed socket is DETACHED at once, off
 * the parent's ring (whose receive is not the child's), nothing in flight,
 * on no list, the kind's fork_child called.  The child checks and reports
 * through its exit status (a bit per failed check). */
static void test_fork_child(void **state)
{
	(void)state;
	SKIP_IF_REFUSED();
	struct sk k;
	sk_open(&k);
	struct rs_ring *r = rs_ring_tls;
	struct rs_esock *e = arm(&k);
	rs_esock_unlock(e);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned nrecv = r->nrecv;
		rs_ring_lock(r); /* (as fork's prepare handler holds every ring's) */
		rs_esock_fork_child(e);
		int bad = 0;
		bad |= (e->mode != RS_ES_DETACHED) << 0;
		bad |= (e->owner != NULL) << 1;
		bad |= on_owned(r, e) << 2;
		bad |= (e->recv_armed || e->recv_cancel) << 3;
		bad |= (e->ops_inflight != 0) << 4;
		bad |= (r->nrecv != nrecv - 1) << 5;
		bad |= (n.fork_child != 1) << 6;
		bad |= (e->on_txq | e->on_rearm | e->on_detach | e->on_draining) << 7;
		_exit(bad);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	/* the parent's socket is as it was */
	assert_int_equal(e->mode, RS_ES_ARMED);
	assert_ptr_equal(e->owner, r);
	assert_int_equal(rs_esock_close(k.s, k.sv[0]), 0);
	assert_ptr_equal(n.destroyed, e);
	sk_close(&k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_arm, setup),
		cmocka_unit_test_setup(test_detach_own, setup),
		cmocka_unit_test_setup(test_detach_other, setup),
		cmocka_unit_test_setup(test_close_armed_own, setup),
		cmocka_unit_test_setup(test_close_armed_other, setup),
		cmocka_unit_test_setup(test_close_detaching, setup),
		cmocka_unit_test_setup(test_close_detached, setup),
		cmocka_unit_test_setup(test_close_dup, setup),
		cmocka_unit_test_setup(test_ring_gone, setup),
		cmocka_unit_test_setup(test_fork_child, setup),
	};
	return cmocka_run_group_tests(tests, group_setup, NULL);
}

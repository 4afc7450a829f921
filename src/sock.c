/* sock.c - the socket core: what every kind of engine socket shares.
 *
 * Locking and entering a socket (its owner ring's lock while it is owned,
 * its own mutex after), arming through the kind registered for the
 * socket's type, every change of a socket's state (detaching by the owner,
 * or by another thread that holds the owner's lock and hands the rest to
 * it; finishing a detach; passive; close; thread exit; the fork child),
 * calling the kind's hooks for what only it knows, the list of every
 * engine socket that fork walks, pass-through reasons, and freeing.  The states
 * and which lock guards which field: types.h, struct rs_esock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "engine_int.h"
#include "sys.h"

static rs_lock socks_lock = RS_LOCK_INIT;
static struct rs_esock *socks; /* every engine socket, for fork (all_next) */
int rs_pub_due; /* the engine took a socket in this call: publish.c's copy at its end */

/* The lock that guards the socket entered last; remembered for the unlock. */
static RS_TLS struct rs_ring *held_ring;

static const struct rs_kind_ops *kinds[2]; /* SOCK_STREAM, SOCK_DGRAM */

static const struct rs_kind_ops **kind_slot(int type)
{
	return type == SOCK_STREAM ? &kinds[0] : type == SOCK_DGRAM ? &kinds[1] : NULL;
}

const struct rs_kind_ops *rs_esock_kind_of(int type)
{
	const struct rs_kind_ops **k = kind_slot(type);
	return k ? *k : NULL;
}

int rs_esock_kind_known(int type)
{
	const struct rs_kind_ops **k = kind_slot(type);
	return k && *k;
}

void rs_esock_kind(int type, const struct rs_kind_ops *ops)
{
	const struct rs_kind_ops **k = kind_slot(type);
	if (k)
		*k = ops;
}

/* ---- locking ------------------------------------------------------------------ */

static void lock_e(struct rs_esock *e)
{
	for (;;) {
		struct rs_ring *o = __atomic_load_n(&e->owner, __ATOMIC_ACQUIRE);
		if (o) {
			rs_ring_lock(o);
			if (__atomic_load_n(&e->owner, __ATOMIC_ACQUIRE) == o) {
				held_ring = o;
				return;
			}
			rs_ring_unlock(o);
			continue;
		}
		rs_mutex_lock(&e->mu);
		if (!__atomic_load_n(&e->owner, __ATOMIC_ACQUIRE)) {
			held_ring = NULL;
			return;
		}
		rs_mutex_unlock(&e->mu);
	}
}

void rs_esock_unlock(struct rs_esock *e)
{
	rs_assert_esock_locked(e);
	if (held_ring)
		rs_ring_unlock(held_ring);
	else
		rs_mutex_unlock(&e->mu);
}

struct rs_ring *rs_esock_held_ring(void)
{
	return held_ring;
}

/* ---- socket buffer sizes ------------------------------------------------------- */

size_t rs_sysctl_field(const char *path, int field, size_t def)
{
	char buf[64] = { 0 };
	long fd = rs_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return def;
	long n = rs_syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	rs_sys_close((int)fd);
	if (n <= 0)
		return def;
	char *p = buf;
	unsigned long v = strtoul(p, &p, 10);
	for (int i = 0; i < field; i++)
		v = strtoul(p, &p, 10);
	return v >= 4096 ? v : def;
}

uint32_t rs_sockbuf_bytes(int v)
{
	return v > 0 ? (uint32_t)(v < INT_MAX / 2 ? v : INT_MAX / 2) * 2 : 4608;
}

/* ---- arming -------------------------------------------------------------------- */

void *rs_esock_new(struct rs_sock *s, int fd, const struct rs_kind_ops *ops, size_t size, struct rs_ring **rp)
{
	struct rs_ring *r = *rp = rs_ring_get();
	if (!r) {
		/* io_uring refused for this thread (kernel.io_uring_disabled,
		 * seccomp, limits): the kernel serves the socket, and says why */
		rs_sock_passthrough(s, RINGSOCK_PT_NO_IO_URING);
		return NULL;
	}
	struct rs_esock *e = calloc(1, size);
	if (e)
		rs_esock_init(e, ops, s, fd);
	return e;
}

void rs_esock_init(struct rs_esock *e, const struct rs_kind_ops *ops, struct rs_sock *s, int fd)
{
	rs_lock_init(&e->mu);
	e->ops = ops;
	e->fd = fd;
	e->slot = -1;
	e->sock = s;
	atomic_fetch_add(&s->refs, 1);
	RS_STORE(e->mode, RS_ES_ARMED);
	RS_STORE(rs_pub_due, 1); /* (`ringsock stat`'s copy, at the call's end) */
}

void rs_esock_uninit(struct rs_esock *e)
{
	atomic_fetch_sub(&e->sock->refs, 1);
}

int rs_sock_blocking_kernel(struct rs_sock *s)
{
	if (s->nonblock || rs_rt.cfg.v[RS_K_BLOCKING] != RS_BLOCKING_KERNEL)
		return 0;
	/* counted once; it may become nonblocking later */
	rs_sock_count_passthrough(s, RINGSOCK_PT_BLOCKING);
	s->pt_counted = 0;
	s->pt_counted_blocking = 1;
	return 1;
}

int rs_esock_install(struct rs_ring *r, struct rs_esock *e)
{
	struct rs_sock *s = e->sock;
	/* Owned before it is published: a racing thread that finds it locks
	 * this ring and waits for us. */
	__atomic_store_n(&e->owner, r, __ATOMIC_RELEASE);
	struct rs_esock *expect = NULL;
	int refuse;
	if ((refuse = __atomic_load_n(&rs_engine_refuse, __ATOMIC_ACQUIRE)) != 0 ||
	    !atomic_compare_exchange_strong(&s->eng, &expect, e)) {
		/* Lost a race with another thread arming it, or with
		 * rs_esock_refuse_all (which walks the rings under their locks). */
		if (refuse)
			rs_sock_passthrough(s, refuse);
		rs_ring_unlock(r);
		rs_esock_uninit(e);
		return -1;
	}
	rs_ring_own(r, e);
	rs_esock_register(e);
	s->pt_counted = 1;
	rs_stat_add(RS_C_SOCKETS_ACCELERATED, 1);
	return 0;
}

/* ---- the list of every engine socket ------------------------------------------ */

void rs_esock_register(struct rs_esock *e)
{
	held_ring = e->owner; /* (arm returns it locked) */
	rs_mutex_lock(&socks_lock);
	e->all_next = socks;
	if (socks)
		socks->all_prev = e;
	socks = e;
	rs_mutex_unlock(&socks_lock);
}

void rs_esock_free(struct rs_esock *e)
{
	if (rs_unlikely(__atomic_load_n(&rs_dying, __ATOMIC_RELAXED)))
		return; /* no free() now (engine.c, die_flush) */
	rs_mutex_lock(&socks_lock);
	if (e->all_prev)
		e->all_prev->all_next = e->all_next;
	else if (socks == e)
		socks = e->all_next;
	if (e->all_next)
		e->all_next->all_prev = e->all_prev;
	rs_mutex_unlock(&socks_lock);
	if (e->drain)
		rs_drain_release(e->drain);
	e->ops->destroy(e);
	rs_sock_put(e->sock);
	free(e);
}

void rs_esock_fork_prepare_detached(void)
{
	rs_mutex_lock(&socks_lock);
	for (struct rs_esock *e = socks; e; e = e->all_next)
		if (!e->owner) {
			rs_mutex_lock(&e->mu);
			e->ops->fork_prepare(e);
			rs_mutex_unlock(&e->mu);
		}
	/* socks_lock stays held across fork */
}

void rs_esock_fork_release_detached(int child)
{
	if (child)
		rs_lock_init(&socks_lock);
	else
		rs_mutex_unlock(&socks_lock);
}

/* ---- detaching -------------------------------------------------------------------- */

static void start_detach(struct rs_esock *e, int reason)
{
	if (e->mode != RS_ES_ARMED)
		return;
	RS_STORE(e->mode, RS_ES_DETACHING);
	rs_sock_count_passthrough(e->sock, reason);
	rs_stat_add(RS_C_DETACHED, 1);
}

/* ---- the receive's bookkeeping ---------------------------------------------------- */

void rs_esock_recv_started(struct rs_ring *r, struct rs_esock *e, struct io_uring_sqe *sqe)
{
	io_uring_sqe_set_data64(sqe, RS_UD(e, RS_UD_RECV));
	e->recv_armed = 1;
	r->nrecv++;
	r->sq_recvs++;
	e->recv_cancel = 0;
	e->ops_inflight++;
	if (rs_fault(RS_FAULT_CANCEL))
		rs_esock_cancel_recv(r, e);
}

void rs_esock_cancel_recv(struct rs_ring *r, struct rs_esock *e)
{
	if (!e->recv_armed || e->recv_cancel)
		return;
	struct io_uring_sqe *sqe = rs_ring_sqe(r);
	if (!sqe) {
		/* no room in the SQ: the next round tries again (and a wait
		 * for the receive to end makes rounds) */
		rs_ring_detach_add(r, e);
		return;
	}
	io_uring_prep_cancel64(sqe, RS_UD(e, RS_UD_RECV), 0);
	io_uring_sqe_set_data64(sqe, RS_UD(e, RS_UD_CANCEL));
	e->recv_cancel = 1;
	e->ops_inflight++;
}

/* ---- the lifecycle's transitions ----------------------------------------------- */

/* e leaves r, closed and with nothing in flight (r locked). */
static void leave_ring(struct rs_ring *r, struct rs_esock *e)
{
	if (e->ops->leave_ring)
		e->ops->leave_ring(r, e);
	rs_ring_forget(r, e);
	rs_ring_slot_drop(r, e, r == rs_ring_tls);
	rs_ring_disown(r, e);
	__atomic_store_n(&e->owner, NULL, __ATOMIC_RELEASE);
}

void rs_esock_finalize_detach(struct rs_ring *r, struct rs_esock *e)
{
	if (e->ops->leave_ring)
		e->ops->leave_ring(r, e);
	rs_ring_forget(r, e);
	rs_ring_slot_drop(r, e, r == rs_ring_tls);
	rs_mutex_lock(&e->mu);
	rs_ring_disown(r, e);
	RS_STORE(e->mode, RS_ES_DETACHED);
	__atomic_store_n(&e->owner, NULL, __ATOMIC_RELEASE);
	rs_mutex_unlock(&e->mu);
	rs_ep_sock_detached(e);
}

void rs_esock_maybe_finish(struct rs_ring *r, struct rs_esock *e)
{
	if (e->mode == RS_ES_DETACHING && e->owner == r && e->ops->detach_done(e))
		rs_esock_finalize_detach(r, e);
	if (e->closing && !e->ops_inflight && e->owner == NULL) {
		rs_esock_free(e);
	} else if (e->closing && !e->ops_inflight && e->owner == r && !e->recv_armed) {
		leave_ring(r, e);
		rs_esock_free(e);
	}
}

void rs_esock_ring_gone(struct rs_ring *r, struct rs_esock *e)
{
	if (e->mode == RS_ES_ARMED && !e->closing) {
		RS_STORE(e->mode, RS_ES_DETACHING);
		rs_sock_count_passthrough(e->sock, RINGSOCK_PT_THREAD);
	}
	e->ops->ring_gone(r, e);
	if (r->owned != e)
		return; /* (freed or finished meanwhile: thread exit takes them in order) */
	if (e->closing) {
		leave_ring(r, e);
		rs_esock_free(e);
		return;
	}
	rs_esock_finalize_detach(r, e);
}

void rs_esock_fork_child(struct rs_esock *e)
{
	struct rs_ring *r = e->owner;
	if (r) {
		rs_ring_disown(r, e);
		if (e->recv_armed)
			r->nrecv--;
	}
	e->owner = NULL;
	e->slot = -1; /* (the parent's ring's table) */
	rs_lock_init(&e->mu);
	RS_STORE(e->mode, RS_ES_DETACHED);
	e->recv_armed = e->recv_cancel = 0;
	e->on_txq = e->on_rearm = e->on_detach = e->on_draining = 0;
	e->ops_inflight = 0;
	e->drain = NULL; /* the parent's drain thread sends it */
	if (e->ops->fork_child)
		e->ops->fork_child(e);
	rs_sock_count_passthrough(e->sock, RINGSOCK_PT_FORK);
}

/* Detached and holding nothing for the program (the kind says what that
 * is): from now on the kernel serves it alone (the passive flag, set for
 * good). */
void rs_esock_maybe_passive(struct rs_esock *e)
{
	if (e->mode == RS_ES_DETACHED && !e->passive && e->ops->holds_nothing(e))
		__atomic_store_n(&e->passive, 1, __ATOMIC_RELEASE);
}

/* A kind that waits at close for a sleeping owner (close_waits_owner):
 * the socket is served by another thread's ring, whose receive holds the
 * file (and so the port) until that thread cancels it: entering handed
 * the socket over and woke it.  If it sleeps in its ring, it does so at
 * once; wait for that (up to a second), so the port is free when close
 * returns, as without us.  (A thread blocked elsewhere cancels when it
 * next runs.)  Returns e entered again, or NULL (gone meanwhile). */
static struct rs_esock *close_wait_owner(struct rs_sock *s, int fd, struct rs_esock *e)
{
	for (int i = 0; i < 20000 && atomic_load(&s->nfds) == 1; i++) {
		struct rs_ring *o = e->owner;
		if (!o || o == rs_ring_tls || !e->recv_armed || !RS_LOAD(o->sleeping))
			break;
		rs_esock_unlock(e);
		rs_sys_nap(50000);
		e = rs_esock_enter(s, fd, 0);
		if (!e)
			return NULL;
	}
	return e;
}

/* The program closes fd, a descriptor of s, before the real close (no
 * lock held).  While another descriptor keeps the socket open nothing
 * changes but the number the engine uses.  The last one: the socket
 * leaves the epoll sets; on its owner's thread its receive ends and its
 * sends go first (the kind's close_own waits); on another thread's ring,
 * that thread ends them when it next runs (woken).  What the engine held
 * for the program goes (close_unread says first what that means to the
 * peer), the socket is closing (fd -1), and it is freed once nothing of
 * it is in flight: at once when it has no owner, else on the owner's ring
 * (rs_esock_maybe_finish). */
int rs_esock_close(struct rs_sock *s, int fd)
{
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return 0;
	if (e->ops->close_waits_owner && !(e = close_wait_owner(s, fd, e)))
		return 0;
	if (e->ops->close_flush)
		e->ops->close_flush(e);
	if (atomic_load(&s->nfds) > 1) {
		/* Another descriptor keeps the socket open; this number is
		 * about to be the application's again (rs_esock_enter takes the
		 * next caller's). */
		if (e->fd == fd && e->mode == RS_ES_DETACHED && e->ops->close_fd_free(e))
			e->fd = -1;
		rs_esock_unlock(e);
		return 0;
	}
	atomic_store(&s->eng, NULL);
	struct rs_ring *r = e->owner;
	rs_ep_sock_gone(e);
	if (r && r == rs_ring_tls)
		e->ops->close_own(r, e);
	if (e->ops->close_unread)
		e->ops->close_unread(r, e, fd);
	if (r && r != rs_ring_tls)
		rs_esock_detach_on(r, e); /* its owner cancels the receive next time it runs */
	e->ops->drop_held(e);
	e->closing = 1;
	e->fd = -1; /* the number is the application's again */
	if (e->drain) {
		/* the job finishes by itself */
		if (r)
			rs_ring_draining_del(r, e);
		rs_drain_release(e->drain);
		e->drain = NULL;
	}
	struct rs_ring *held = held_ring;
	if (!r) {
		rs_mutex_unlock(&e->mu);
		rs_esock_free(e);
		return 0;
	}
	rs_esock_maybe_finish(r, e); /* may free e */
	rs_ring_unlock(held);
	return 0;
}

void rs_esock_detach_on(struct rs_ring *r, struct rs_esock *e)
{
	rs_ring_detach_add(r, e);
	rs_ring_kick(r); /* it may sleep in an epoll set or poll with its ring */
}

/* Another thread holds the owner's lock and wants the socket: what the
 * owner's ring completed is taken, accepted sends are written here, and
 * the owner finishes the detach (cancels its receive) when it next runs. */
static void detach_remote(struct rs_esock *e, int reason)
{
	struct rs_ring *o = e->owner;
	rs_ring_reap(o);
	start_detach(e, reason);
	e->ops->flush_direct(e);
	rs_esock_detach_on(o, e);
}

static int detached_cond(void *arg)
{
	struct rs_esock *e = arg;
	return e->owner == NULL || e->mode == RS_ES_DETACHED;
}

void rs_esock_detach_self(struct rs_esock *e, int reason)
{
	if (e->mode == RS_ES_DETACHED)
		return;
	struct rs_ring *r = e->owner;
	if (r != rs_ring_tls) {
		detach_remote(e, reason);
		return;
	}
	start_detach(e, reason);
	e->ops->process_detach(r, e);
	rs_ring_wait(r, detached_cond, e, -1);
	/* Still hold r's lock; the caller's unlock releases it. */
}

/* Every socket armed on r leaves the engine (r's lock held): the program
 * has a way to reach them that the engine cannot see. */
void rs_esock_leave_all(struct rs_ring *r, int reason)
{
	for (;;) {
		struct rs_esock *e = r->owned;
		while (e && (e->mode != RS_ES_ARMED || e->closing))
			e = e->next;
		if (!e)
			return;
		/* (the owner waits here until e is off the ring, so the walk
		 * starts again from the head) */
		rs_esock_detach_self(e, reason);
	}
}

void rs_esock_refuse_all(int reason)
{
	if (!rs_engine_on)
		return;
	int expect = 0;
	if (!__atomic_compare_exchange_n(&rs_engine_refuse, &expect, reason, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return; /* done once */
	rs_info("the program has an io_uring of its own: its sockets leave the engine");
	for (struct rs_ring *r = rs_rings_lock(); r; r = r->all_next) {
		if (!rs_ring_lock_live(r))
			continue;
		rs_esock_leave_all(r, reason);
		rs_ring_unlock(r);
	}
	rs_rings_unlock();
}

/* ---- entering ------------------------------------------------------------------ */

struct rs_esock *rs_esock_enter(struct rs_sock *s, int fd, int do_arm)
{
	struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
	if (!e) {
		if (!do_arm || s->no_engine || !rs_engine_on || rs_in_handler)
			return NULL; /* (a handler's call: arming allocates) */
		/* Before the engine reads ahead: an io_uring the program made
		 * with its own system calls could wait for these bytes
		 * (foreign.c).  Every arm looks (held_ring names the lock
		 * of the socket entered last, held or not: it said nothing
		 * here, and the look was skipped after a thread's first
		 * arm); not with an engine lock held, as in a handler's
		 * call that interrupted the engine: the next arm looks.  The
		 * look takes foreign.c's locks: a handler that runs meanwhile
		 * leaves the engine alone (rs_nosig_enter), or its own arm
		 * would wait for them on this very thread. */
		int foreign = 0;
		if (!rs_lock_depth) {
			rs_nosig_enter();
			foreign = rs_foreign_uring_found();
			rs_nosig_leave();
		}
		if (rs_unlikely(foreign == RS_FOREIGN_UNKNOWN))
			return NULL; /* (maybe later) */
		if (rs_unlikely(foreign))
			rs_esock_refuse_all(RINGSOCK_PT_URING);
		int refuse = __atomic_load_n(&rs_engine_refuse, __ATOMIC_ACQUIRE);
		if (refuse) {
			rs_sock_passthrough(s, refuse);
			return NULL;
		}
		const struct rs_kind_ops **k = kind_slot(s->type);
		if (!k || !*k) {
			rs_sock_passthrough(s, RINGSOCK_PT_UDP); /* (the only other type) */
			return NULL;
		}
		e = (*k)->arm(s, fd);
		if (e)
			return e;
		/* Another thread armed it first (rs_esock_install lost the
		 * race): that thread's receive may already hold data the
		 * kernel's queue no longer has, so this call is that socket's
		 * too, not the kernel's.  (Passing it to the kernel gave a
		 * second reader a sender's later datagram before the earlier
		 * ones the first reader's receive took: the two-reader seq test
		 * under CPU load.) */
		e = atomic_load_explicit(&s->eng, memory_order_acquire);
		if (!e)
			return NULL;
	}
	lock_e(e);
	if (held_ring && held_ring != rs_ring_tls && e->mode == RS_ES_ARMED)
		detach_remote(e, RINGSOCK_PT_THREAD);
	/* A detached socket may be reached through a dup of the descriptor it
	 * was armed on, which may be closed (and its number reused): the
	 * engine's own calls for it go through the caller's descriptor. */
	if (fd >= 0 && e->fd != fd && e->mode != RS_ES_ARMED && !e->closing)
		e->fd = fd;
	return e;
}

struct rs_esock *rs_esock_enter_watched(struct rs_sock *s, int fd)
{
	const struct rs_kind_ops **k = kind_slot(s->type);
	return rs_esock_enter(s, fd, k && *k && (*k)->arm_when_watched(s));
}

/* For a change of s->regs by any thread (epoll_ctl DEL): the socket's
 * lock, which every walk of them holds (epreg.c sock_look), taken without
 * detaching the socket from its owner as entering it would. */
struct rs_esock *rs_esock_lock_sock(struct rs_sock *s)
{
	struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
	if (e)
		lock_e(e);
	return e;
}

struct rs_esock *rs_esock_enter_served(struct rs_sock *s, int fd)
{
	/* (passive is set for good: no lock needed to see it) */
	struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
	if (e && rs_esock_passive(e))
		return NULL;
	e = rs_esock_enter(s, fd, 1);
	if (e && rs_esock_passive(e)) {
		rs_esock_unlock(e);
		return NULL;
	}
	return e;
}

/* What the socket's kind reports, and ERR while an error a call kept for
 * the next one (a reset after a partial MSG_WAITALL read: rs_keep_error)
 * is pending: the kernel's poll shows the socket's error until a call
 * takes it. */
unsigned rs_esock_readiness(struct rs_esock *e)
{
	unsigned ev = e->ops->readiness(e);
	if (__atomic_load_n(&e->sock->err_kept, __ATOMIC_RELAXED))
		ev |= EPOLLERR;
	return ev;
}

/* What the engine holds for a socket the kernel may serve now (a hint,
 * read without the lock): the kind's (input, an error its receive took;
 * nothing once passive), and ERR for an error a call kept for the next
 * one (rs_keep_error, passive or not), as the kernel's poll shows it
 * until a call takes it. */
unsigned rs_esock_held_events(struct rs_esock *e)
{
	unsigned ev = rs_esock_passive(e) ? 0 : e->ops->held_events(e);
	if (__atomic_load_n(&e->sock->err_kept, __ATOMIC_RELAXED))
		ev |= EPOLLERR;
	return ev;
}

/* Whether e can take a send now, as its readiness says (locks e). */
int rs_esock_writable(struct rs_esock *e)
{
	lock_e(e);
	int w = e->mode == RS_ES_ARMED && (e->ops->readiness(e) & EPOLLOUT);
	rs_esock_unlock(e);
	return w;
}

/* sockcall.c - the program's calls on an engine socket, through its
 * kind's table (preload/ never asks a socket's kind): the receive and
 * send families, FIONREAD, SO_ERROR, shutdown, what the kernel's own calls
 * need first (rs_sock_before_kernel), urgent data, and the errors a call
 * keeps for the next one.  Below it the socket core (sock.c: entering,
 * the states); above it preload/.
 */
#include <errno.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "engine_int.h"
#include "sys.h"

/* ---- calls the kernel makes ------------------------------------------------------ */

void rs_sock_before_kernel(struct rs_sock *s, int fd, int detach_reason)
{
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return;
	if (detach_reason >= 0 && e->mode == RS_ES_ARMED)
		rs_esock_detach_self(e, detach_reason);
	else
		e->ops->sync_tx(e);
	rs_esock_unlock(e);
}

/* ---- errors kept for the next call --------------------------------------------- */

/* A blocking call that moved bytes then met an error (a reset) returns
 * the bytes; the kernel keeps such an error for the next call, but our
 * continuation's own kernel call has taken it: keep it for that call. */
void rs_keep_error(struct rs_sock *s, size_t done, ssize_t r)
{
	if (!done || r >= 0)
		return;
	switch (-r) { /* the socket's pending (asynchronous) errors only */
	case ECONNRESET: case ETIMEDOUT: case ECONNREFUSED: case EHOSTUNREACH:
	case ENETUNREACH: case ENETDOWN: case EHOSTDOWN:
		__atomic_store_n(&s->err_kept, (int)-r, __ATOMIC_RELAXED);
	}
}

/* The error keep_error kept, for this call (0: none). */
int rs_kept_error(struct rs_sock *s)
{
	if (!__atomic_load_n(&s->err_kept, __ATOMIC_RELAXED))
		return 0;
	return __atomic_exchange_n(&s->err_kept, 0, __ATOMIC_RELAXED);
}

/* ---- the program's calls, through the kind ------------------------------------ */

static const struct rs_kind_ops *kind_of(struct rs_sock *s)
{
	return rs_esock_kind_of(s->type);
}

ssize_t rs_sock_recv(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
		     struct rs_dgram_from *f)
{
	const struct rs_kind_ops *k = kind_of(s);
	flags &= ~MSG_CMSG_CLOEXEC; /* (what the engine holds carries no control messages) */
	ssize_t r = k ? k->recv_call(s, fd, iov, n, flags, f) : RS_PASS;
	if (r == RS_PASS)
		rs_ring_flush_own_tx(); /* (the kernel's read: it may wait) */
	return r;
}

ssize_t rs_sock_send(struct rs_sock *s, int fd, const struct rs_send *m)
{
	const struct rs_kind_ops *k = kind_of(s);
	ssize_t r = k ? k->send_call(s, fd, m) : RS_PASS;
	if (r == RS_PASS)
		rs_ring_flush_own_tx();
	return r;
}

int rs_sock_recvmmsg(struct rs_sock *s, int fd, struct mmsghdr *vec, unsigned vlen, int flags,
		     struct timespec *tmo)
{
	const struct rs_kind_ops *k = kind_of(s);
	if (!k || !k->recvmmsg_call || !vec) {
		rs_sock_before_kernel(s, fd, RINGSOCK_PT_OPTION);
		return (int)RS_PASS;
	}
	int r = k->recvmmsg_call(s, fd, vec, vlen, flags, tmo);
	if (r == (int)RS_PASS)
		rs_ring_flush_own_tx();
	return r;
}

void rs_sock_after_send(struct rs_sock *s, int fd, ssize_t r, int err, const void *name, socklen_t namelen)
{
	const struct rs_kind_ops *k = kind_of(s);
	if (k && k->after_send && atomic_load_explicit(&s->eng, memory_order_relaxed))
		k->after_send(s, fd, r, err, name, namelen);
}

void rs_sock_before_connect(struct rs_sock *s, int fd)
{
	const struct rs_kind_ops *k = kind_of(s);
	if (k && k->before_connect)
		k->before_connect(s, fd);
}

int rs_sock_fionread(struct rs_sock *s, int fd, int *out)
{
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return (int)RS_PASS;
	int r = rs_esock_passive(e) ? (int)RS_PASS : e->ops->fionread(e, out);
	rs_esock_unlock(e);
	return r;
}

size_t rs_sock_held(struct rs_sock *s, int fd)
{
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return 0;
	size_t n = rs_esock_passive(e) ? 0 : e->ops->held(e);
	rs_esock_unlock(e);
	return n;
}

int rs_sock_so_error(struct rs_sock *s, int fd)
{
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return 0;
	/* (first an error a call kept for the next one) */
	int err = rs_kept_error(s);
	if (!err && !rs_esock_passive(e))
		err = e->ops->so_error(e);
	rs_esock_unlock(e);
	return err;
}

int rs_sock_shutdown(struct rs_sock *s, int fd, int how)
{
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return (int)RS_PASS;
	int r = rs_esock_passive(e) ? (int)RS_PASS : e->ops->shutdown(e, how);
	rs_esock_unlock(e);
	return r;
}

/* The program set SO_RCVLOWAT (the kernel took it). */
void rs_sock_lowat_set(struct rs_sock *s, int fd)
{
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return;
	if (e->ops->lowat_set && !rs_esock_passive(e))
		e->ops->lowat_set(e);
	rs_esock_unlock(e);
}

/* As the kernel's SO_SNDBUF wakes the socket's writers when it is
 * writable (an OUT edge for an edge-triggered registration). */
void rs_sock_sndbuf_set(struct rs_sock *s, int fd)
{
	struct rs_esock *e = rs_esock_enter(s, fd, 0);
	if (!e)
		return;
	if (e->mode == RS_ES_ARMED && (e->ops->readiness(e) & EPOLLOUT))
		rs_ep_sock_output(e);
	rs_esock_unlock(e);
}

int rs_sock_kernel_lowat(struct rs_sock *s, int lowat)
{
	struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
	return e && e->ops->kernel_lowat ? e->ops->kernel_lowat(e, lowat) : lowat;
}

void rs_sock_urgent(struct rs_sock *s, int fd)
{
	s->urgent = 1;
	rs_sock_before_kernel(s, fd, RINGSOCK_PT_URGENT);
	rs_sock_passthrough(s, RINGSOCK_PT_URGENT);
}

/* epctl.c - epoll_ctl over engine sockets and kernel fds: ADD, MOD and
 * DEL of a registration (epreg.c's records, cookies in the kernel's set),
 * closing a set, and the sockets of a set nested in another (they leave
 * the engine).  A registration's list on its socket changes with the
 * socket's lock held (lock_regs), then rs_ep_ctl_lock (ep_int.h).  The
 * waits are ep.c's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "engine.h"
#include "ep_int.h"
#include "sys.h"

/* The registration is new or changed: report its readiness at the next
 * wait, as the kernel does (ctl lock held). */
static void edge_now(struct rs_ep *ep, struct rs_epreg *g)
{
	rs_mutex_lock(&ep->lock);
	g->edge = 1;
	rs_epr_ready_push(ep, g);
	rs_mutex_unlock(&ep->lock);
}

/* EPOLL_CTL_ADD (ctl lock held). */
static long reg_add(struct rs_ep *ep, int fd, struct rs_sock *s, struct rs_epreg *g, struct epoll_event *ev)
{
	if (g && g->s != s) {
		/* Left over from an fd closed behind our back. */
		rs_epr_byfd_set(ep, fd, NULL);
		g = NULL;
	}
	if (g)
		return -EEXIST;
	g = rs_epr_alloc();
	if (!g)
		return -ENOMEM;
	g->ep = ep;
	g->s = s;
	g->fd = fd;
	g->events = ev->events;
	g->data = ev->data.u64;
	g->engine = rs_epr_engine_mode(s);
	long e = rs_epr_ctl(g, EPOLL_CTL_ADD, rs_epr_kernel_events(g));
	if (e < 0 || rs_epr_byfd_set(ep, fd, g) < 0) {
		if (e >= 0)
			rs_epr_real_ctl(ep->epfd, EPOLL_CTL_DEL, fd, 0, 0);
		rs_epr_free(g);
		return e < 0 ? e : -ENOMEM;
	}
	g->sock_next = s->regs;
	s->regs = g;
	edge_now(ep, g);
	return 0;
}

/* EPOLL_CTL_MOD (ctl lock held). */
static long reg_mod(struct rs_ep *ep, int fd, struct rs_sock *s, struct rs_epreg *g, struct epoll_event *ev)
{
	if (!g || g->s != s)
		return rs_epr_real_ctl(ep->epfd, EPOLL_CTL_MOD, fd, ev->events, ev->data.u64);
	uint32_t old_ev = g->events;
	uint64_t old_data = g->data;
	g->events = ev->events;
	g->data = ev->data.u64;
	long e = rs_epr_ctl(g, EPOLL_CTL_MOD, rs_epr_kernel_events(g));
	if (e < 0) {
		g->events = old_ev;
		g->data = old_data;
		return e;
	}
	rs_mutex_lock(&ep->lock);
	g->disabled = 0;
	g->end_told = 0;
	g->kedge = 0; /* (the kernel polls anew) */
	g->edge = 1;
	rs_epr_ready_push(ep, g);
	rs_mutex_unlock(&ep->lock);
	return 0;
}

/* EPOLL_CTL_DEL (ctl lock held). */
static long reg_del(struct rs_ep *ep, int fd, struct rs_sock *s, struct rs_epreg *g)
{
	long e = rs_epr_real_ctl(ep->epfd, EPOLL_CTL_DEL, fd, 0, 0);
	if (g && g->s == s && (e == 0 || e == -ENOENT)) {
		rs_epr_byfd_set(ep, fd, NULL);
		struct rs_epreg **pp = &s->regs;
		while (*pp && *pp != g)
			pp = &(*pp)->sock_next;
		if (*pp)
			*pp = g->sock_next;
		rs_mutex_lock(&ep->lock);
		rs_epr_ready_unlink(ep, g);
		rs_mutex_unlock(&ep->lock);
		rs_epr_free(g);
	}
	return e;
}

/* To change s->regs from any thread: the socket's lock (every walk of
 * them holds it: epreg.c sock_look), without taking the socket over, then
 * rs_ep_ctl_lock.  Returns the socket's engine state to unlock after the
 * ctl lock (NULL: not armed; arming takes the ctl lock to look at the
 * registrations, so it waits for this change). */
static struct rs_esock *lock_regs(struct rs_sock *s)
{
	struct rs_esock *t = rs_esock_lock_sock(s);
	rs_mutex_lock(&rs_ep_ctl_lock);
	while (!t && atomic_load(&s->eng)) {
		/* armed meanwhile by another thread */
		rs_mutex_unlock(&rs_ep_ctl_lock);
		t = rs_esock_lock_sock(s);
		rs_mutex_lock(&rs_ep_ctl_lock);
	}
	return t;
}

/* The set epfd is closed: each socket's registration leaves the socket's
 * list, then the rest goes. */
void rs_ep_close(int epfd)
{
	struct rs_ep *ep = rs_epr_detach_set(epfd);
	if (!ep)
		return;
	/* (Under the ctl lock only: a socket's lock would be taken through
	 * its engine state, which a close of that socket on another thread
	 * may free meanwhile.  So the registrations stay on their sockets'
	 * lists, marked gone, for the sockets' own changes to free: see
	 * ep_int.h.) */
	rs_mutex_lock(&rs_ep_ctl_lock);
	for (unsigned fd = 0; fd < ep->nbyfd; fd++)
		rs_epr_set_gone(ep, (int)fd);
	rs_mutex_unlock(&rs_ep_ctl_lock);
	rs_epr_free_set(ep);
}

/* epoll_ctl for a socket of a kind the engine serves. */
static int ctl_sock(struct rs_ep *ep, int op, int fd, struct rs_sock *s, struct epoll_event *ev)
{
	if (op != EPOLL_CTL_DEL && !ev)
		return -EFAULT;
	if (op == EPOLL_CTL_ADD && ((ev->events & EPOLLEXCLUSIVE) || ep->nested))
		rs_sock_before_kernel(s, fd, RINGSOCK_PT_EPOLL), rs_sock_passthrough(s, RINGSOCK_PT_EPOLL);
	/* Every change of the socket's registrations holds its lock, as the
	 * engine's walks of them do: ADD and MOD enter it (armed here if its
	 * kind wants a socket armed once a wait watches it); DEL only locks
	 * it, wherever it is served. */
	struct rs_esock *t = NULL;
	if (op == EPOLL_CTL_DEL) {
		t = lock_regs(s);
	} else {
		if (!s->no_engine)
			t = rs_esock_enter_watched(s, fd);
		rs_mutex_lock(&rs_ep_ctl_lock);
	}
	/* (Both locks held, or none needed: the socket was never armed, and
	 * arming walks the registrations under the ctl lock first.) */
	if (t || !atomic_load(&s->eng))
		rs_epr_prune(s);
	struct rs_epreg *g = rs_epr_byfd_get(ep, fd);
	long e = op == EPOLL_CTL_ADD ? reg_add(ep, fd, s, g, ev)
		 : op == EPOLL_CTL_MOD ? reg_mod(ep, fd, s, g, ev)
				       : reg_del(ep, fd, s, g);
	rs_mutex_unlock(&rs_ep_ctl_lock);
	if (t)
		rs_esock_unlock(t);
	return (int)e;
}

int rs_ep_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct rs_sock *s = rs_fd_peek(fd);
	if (s && rs_engine_on && rs_esock_kind_known(s->type)) {
		struct rs_ep *ep = rs_ep_get(epfd, 1);
		if (ep)
			return ctl_sock(ep, op, fd, s, ev);
	}
	/* An epoll set inside another one cannot see engine readiness. */
	if (op == EPOLL_CTL_ADD && rs_engine_on)
		rs_ep_demote_nested(fd);
	return RS_PASS;
}

/* The set epfd is watched from outside (nested epoll, poll, select): its
 * kernel readiness must be the whole truth, so engine sockets in it go
 * back to the kernel path. */
void rs_ep_demote_nested(int epfd)
{
	struct rs_ep *ep = rs_ep_get(epfd, 0);
	if (!ep)
		return;
	ep->nested = 1;
	for (;;) {
		struct rs_sock *victim = NULL;
		int vfd = -1;
		rs_mutex_lock(&rs_ep_ctl_lock);
		for (unsigned fd = 0; fd < ep->nbyfd && !victim; fd++) {
			struct rs_epreg *g = ep->byfd[fd];
			if (g && g->s && rs_epr_engine_mode(g->s)) {
				victim = g->s;
				vfd = (int)fd;
			}
		}
		rs_mutex_unlock(&rs_ep_ctl_lock);
		if (!victim)
			return;
		rs_sock_before_kernel(victim, vfd, RINGSOCK_PT_EPOLL);
		if (rs_epr_engine_mode(victim))
			return; /* could not detach now; give up rather than spin */
	}
}

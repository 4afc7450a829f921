/* ep.c - epoll over engine sockets and kernel fds.
 *
 * The application's epoll fd stays a real kernel epoll set.  Every TCP
 * socket we track is registered in it with our own data (a "cookie": the
 * address of its registration record here), and epoll_wait translates
 * cookies back to the application's data.  For a socket the engine serves
 * the kernel registration carries no events (EPOLLET only, so HUP/ERR
 * edges still wake us) and readiness comes from engine state instead:
 * data queued, end of stream, errors, send space.  Level-triggered,
 * edge-triggered and one-shot semantics are applied here for those
 * sockets, with a ready list per epoll set as the kernel keeps one.  The
 * waiting thread's ring eventfd sits in the set (edge-triggered) so that
 * engine completions wake the kernel wait.
 *
 * Registration records live in a type-stable arena, so a cookie from the
 * kernel can be validated before use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <time.h>

#include <poll.h>

#include "engine.h"
#include "sys.h"

#define EPREG_MAGIC 0x72657065u /* "rsep" */
#define EP_MAX_FD 65536
#define ARENA_REGS (1u << 20)
#define RS_EP_RINGS 16

struct rs_epreg {
	uint32_t magic;
	int fd;
	struct rs_ep *ep;
	struct rs_sock *s;       /* NULL for a ring eventfd */
	struct rs_ring *ring;    /* eventfd registrations */
	uint32_t events;         /* the application's, with EPOLLET/ONESHOT */
	uint32_t seen;           /* epoll_wait round that reported it */
	uint64_t data;           /* the application's */
	struct rs_epreg *sock_next; /* s->regs */
	union {
		struct rs_epreg *ready_next;
		struct rs_epreg *free_next; /* once freed */
	};
	uint8_t on_ready, edge, disabled, engine;
	uint8_t kout;            /* the kernel watches EPOLLOUT (engine socket) */
	uint32_t kev;            /* the events the kernel watches for it now */
};

struct rs_ep {
	int epfd;
	pthread_mutex_t lock;    /* ready list, byfd */
	struct rs_epreg **byfd;
	unsigned nbyfd;
	struct rs_epreg *ready_head, *ready_tail;
	struct rs_epreg *rings[RS_EP_RINGS]; /* ring eventfd registrations */
	int nested;              /* watched from outside: no engine sockets */
	int pid;                 /* the process that made this record: in a
				  * fork child the kernel set is shared with
				  * the parent, whose registrations it holds */
	uint32_t round;
};

static struct rs_ep *_Atomic eps[EP_MAX_FD];
static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER; /* registrations */
static struct rs_epreg *arena;
static atomic_uint arena_next;
static struct rs_epreg *free_regs;

static struct rs_epreg *reg_alloc(void)
{
	if (!arena) {
		void *m = mmap(NULL, (size_t)ARENA_REGS * sizeof(struct rs_epreg), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (m == MAP_FAILED)
			return NULL;
		arena = m;
	}
	struct rs_epreg *g = free_regs;
	if (g) {
		free_regs = g->free_next;
	} else {
		unsigned i = atomic_fetch_add(&arena_next, 1);
		if (i >= ARENA_REGS)
			return NULL;
		g = &arena[i];
	}
	memset(g, 0, sizeof(*g));
	g->magic = EPREG_MAGIC;
	return g;
}

static void reg_free(struct rs_epreg *g)
{
	g->magic = 0;
	g->free_next = free_regs;
	free_regs = g;
}

static struct rs_epreg *cookie_reg(struct rs_ep *ep, uint64_t data)
{
	struct rs_epreg *g = (struct rs_epreg *)(uintptr_t)data;
	if (!arena || g < arena || g >= arena + ARENA_REGS ||
	    ((uintptr_t)g - (uintptr_t)arena) % sizeof(*g))
		return NULL;
	if (g->magic != EPREG_MAGIC || g->ep != ep)
		return NULL;
	return g;
}

static struct rs_ep *ep_get(int epfd, int create)
{
	if (epfd < 0 || epfd >= EP_MAX_FD)
		return NULL;
	struct rs_ep *ep = atomic_load(&eps[epfd]);
	if (ep || !create)
		return ep;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->epfd = epfd;
	ep->pid = rs_rt.pid;
	pthread_mutex_init(&ep->lock, NULL);
	struct rs_ep *expect = NULL;
	if (!atomic_compare_exchange_strong(&eps[epfd], &expect, ep)) {
		free(ep);
		return expect;
	}
	return ep;
}

int rs_ep_known(int epfd)
{
	return ep_get(epfd, 0) != NULL;
}

static int byfd_set(struct rs_ep *ep, int fd, struct rs_epreg *g)
{
	if ((unsigned)fd >= ep->nbyfd) {
		unsigned n = ep->nbyfd ? ep->nbyfd : 64;
		while (n <= (unsigned)fd)
			n *= 2;
		struct rs_epreg **b = realloc(ep->byfd, n * sizeof(*b));
		if (!b)
			return -ENOMEM;
		memset(b + ep->nbyfd, 0, (n - ep->nbyfd) * sizeof(*b));
		ep->byfd = b;
		ep->nbyfd = n;
	}
	ep->byfd[fd] = g;
	return 0;
}

static struct rs_epreg *byfd_get(struct rs_ep *ep, int fd)
{
	return (unsigned)fd < ep->nbyfd ? ep->byfd[fd] : NULL;
}

/* Ready list (ep->lock held). */
static void ready_push(struct rs_ep *ep, struct rs_epreg *g)
{
	if (g->on_ready)
		return;
	g->on_ready = 1;
	g->ready_next = NULL;
	if (ep->ready_tail)
		ep->ready_tail->ready_next = g;
	else
		ep->ready_head = g;
	ep->ready_tail = g;
}

static void ready_unlink_all(struct rs_ep *ep, struct rs_epreg *g)
{
	if (!g->on_ready)
		return;
	struct rs_epreg **pp = &ep->ready_head, *prev = NULL;
	while (*pp && *pp != g) {
		prev = *pp;
		pp = &(*pp)->ready_next;
	}
	if (*pp) {
		*pp = g->ready_next;
		if (ep->ready_tail == g)
			ep->ready_tail = prev;
	}
	g->on_ready = 0;
}

static int rx_direct(struct rs_epreg *g)
{
	struct rs_tcp *t = g->s ? atomic_load(&g->s->eng) : NULL;
	return t && rs_tcp_kernel_input(t);
}

/* What the kernel watches for a registration: everything for a socket the
 * engine does not serve; for an engine socket only HUP/ERR edges, plus
 * input for a bulk reader whose input stays in the kernel.  EPOLLOUT is
 * added once the kernel's send buffer was seen full (kfull): its edges then
 * tell when the socket can take data again.  Not before: watched from the
 * start, every new socket's first edge (it is writable) would cost the
 * next epoll_wait a trip to the kernel's set for nothing. */
static uint32_t kernel_events(struct rs_epreg *g)
{
	if (!g->engine)
		return g->events;
	struct rs_tcp *t = g->s ? atomic_load(&g->s->eng) : NULL;
	if (t && RS_LOAD(t->kfull))
		g->kout = 1;
	uint32_t out = g->kout ? EPOLLOUT : 0;
	if (rx_direct(g)) {
		uint32_t in = g->events & (EPOLLIN | EPOLLRDNORM | EPOLLRDHUP | EPOLLPRI | EPOLLET | EPOLLONESHOT);
		if (!(g->events & EPOLLOUT))
			return in;
		if (g->events & EPOLLET) /* the kernel's edges carry its whole
					  * mask: OUT is translated on the way out */
			return in | EPOLLOUT;
		/* Level-triggered input: EPOLLET for the room edges would make
		 * the input edge-triggered too.  EPOLLOUT is watched (level)
		 * only while the buffer is full; its first report drops it. */
		return in | (t && RS_LOAD(t->kfull) ? EPOLLOUT : 0);
	}
	return EPOLLET | out;
}

static long real_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };
	return rs_syscall(SYS_epoll_ctl, epfd, op, fd, &ev);
}

/* ADD or MOD of a socket's registration, the cookie as data. */
static long reg_ctl(struct rs_epreg *g, int op, uint32_t events)
{
	long e = real_ctl(g->ep->epfd, op, g->fd, events, (uint64_t)(uintptr_t)g);
	if (e == 0)
		g->kev = events;
	return e;
}

/* Make the kernel watch what kernel_events says, unless it watches that
 * already, or that plus EPOLLOUT edges (harmless: an engine socket's
 * EPOLLOUT from the kernel only says its buffer has room). */
static void reg_sync(struct rs_epreg *g)
{
	uint32_t want = kernel_events(g);
	if (g->kev == want)
		return;
	if ((g->kev & EPOLLET) && (g->kev & EPOLLOUT) && !(want & EPOLLOUT) && g->engine &&
	    (g->kev & ~(uint32_t)EPOLLOUT) == want) {
		g->kout = 1;
		return;
	}
	reg_ctl(g, EPOLL_CTL_MOD, want);
}

static int engine_mode(struct rs_sock *s)
{
	struct rs_tcp *t = atomic_load(&s->eng);
	return t && t->mode == RS_TM_ARMED;
}

/* epoll_ctl for a tracked TCP socket fd. */
static int ctl_sock(struct rs_ep *ep, int op, int fd, struct rs_sock *s, struct epoll_event *ev)
{
	uint32_t events = ev ? ev->events : 0;
	if (op != EPOLL_CTL_DEL && !ev)
		return -EFAULT;
	if (op == EPOLL_CTL_ADD && ((events & EPOLLEXCLUSIVE) || ep->nested))
		rs_tcp_before_kernel(s, fd, RINGSOCK_PT_EPOLL), rs_tcp_passthrough(s, RINGSOCK_PT_EPOLL);
	/* Arm it here when it can be served (this thread will wait for it);
	 * a new nonblocking socket, which reads through the kernel first
	 * anyway (RINGSOCK_ARM_AFTER), at its first read or send instead, so
	 * an idle connection costs no engine state. */
	struct rs_tcp *t = NULL;
	if (op != EPOLL_CTL_DEL && !s->no_engine)
		t = rs_tcp_enter(s, fd, !(s->nonblock && rs_rt.cfg.v[RS_K_ARM_AFTER]));
	rs_mutex_lock(&ctl_lock);
	struct rs_epreg *g = byfd_get(ep, fd);
	long e;
	switch (op) {
	case EPOLL_CTL_ADD:
		if (g && g->s != s) {
			/* Left over from an fd closed behind our back. */
			byfd_set(ep, fd, NULL);
			g = NULL;
		}
		if (g) {
			e = -EEXIST;
			break;
		}
		g = reg_alloc();
		if (!g) {
			e = -ENOMEM;
			break;
		}
		g->ep = ep;
		g->s = s;
		g->fd = fd;
		g->events = events;
		g->data = ev->data.u64;
		g->engine = engine_mode(s);
		e = reg_ctl(g, op, kernel_events(g));
		if (e < 0 || byfd_set(ep, fd, g) < 0) {
			if (e >= 0)
				real_ctl(ep->epfd, EPOLL_CTL_DEL, fd, 0, 0);
			reg_free(g);
			e = e < 0 ? e : -ENOMEM;
			break;
		}
		g->sock_next = s->regs;
		s->regs = g;
		rs_mutex_lock(&ep->lock);
		g->edge = 1;
		ready_push(ep, g);
		rs_mutex_unlock(&ep->lock);
		break;
	case EPOLL_CTL_MOD:
		if (!g || g->s != s) {
			e = real_ctl(ep->epfd, op, fd, events, ev->data.u64);
			break;
		}
		{
			uint32_t old_ev = g->events;
			uint64_t old_data = g->data;
			g->events = events;
			g->data = ev->data.u64;
			e = reg_ctl(g, op, kernel_events(g));
			if (e < 0) {
				g->events = old_ev;
				g->data = old_data;
				break;
			}
		}
		rs_mutex_lock(&ep->lock);
		g->disabled = 0;
		g->edge = 1;
		ready_push(ep, g);
		rs_mutex_unlock(&ep->lock);
		break;
	default: /* DEL */
		e = real_ctl(ep->epfd, op, fd, 0, 0);
		if (g && g->s == s && (e == 0 || e == -ENOENT)) {
			byfd_set(ep, fd, NULL);
			struct rs_epreg **pp = &s->regs;
			while (*pp && *pp != g)
				pp = &(*pp)->sock_next;
			if (*pp)
				*pp = g->sock_next;
			rs_mutex_lock(&ep->lock);
			ready_unlink_all(ep, g);
			rs_mutex_unlock(&ep->lock);
			reg_free(g);
		}
		break;
	}
	rs_mutex_unlock(&ctl_lock);
	if (t)
		rs_tcp_unlock(t);
	return (int)e;
}

int rs_ep_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct rs_sock *s = rs_fd_peek(fd);
	if (s && s->type == SOCK_STREAM && rs_engine_on) {
		struct rs_ep *ep = ep_get(epfd, 1);
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
	struct rs_ep *ep = ep_get(epfd, 0);
	if (!ep)
		return;
	ep->nested = 1;
	for (;;) {
		struct rs_sock *victim = NULL;
		int vfd = -1;
		rs_mutex_lock(&ctl_lock);
		for (unsigned fd = 0; fd < ep->nbyfd && !victim; fd++) {
			struct rs_epreg *g = ep->byfd[fd];
			if (g && g->s && engine_mode(g->s)) {
				victim = g->s;
				vfd = (int)fd;
			}
		}
		rs_mutex_unlock(&ctl_lock);
		if (!victim)
			return;
		rs_tcp_before_kernel(victim, vfd, RINGSOCK_PT_EPOLL);
		if (engine_mode(victim))
			return; /* could not detach now; give up rather than spin */
	}
}

/* ---- engine side: called with the socket's owner lock held ---------------- */

void rs_ep_sock_changed(struct rs_tcp *t)
{
	for (struct rs_epreg *g = t->sock->regs; g; g = g->sock_next) {
		rs_mutex_lock(&g->ep->lock);
		g->edge = 1;
		ready_push(g->ep, g);
		rs_mutex_unlock(&g->ep->lock);
	}
}

void rs_ep_sock_armed(struct rs_tcp *t)
{
	rs_mutex_lock(&ctl_lock);
	for (struct rs_epreg *g = t->sock->regs; g; g = g->sock_next) {
		g->engine = 1;
		reg_sync(g);
	}
	rs_mutex_unlock(&ctl_lock);
	rs_ep_sock_changed(t);
}

void rs_ep_sock_rx_direct(struct rs_tcp *t)
{
	rs_mutex_lock(&ctl_lock);
	for (struct rs_epreg *g = t->sock->regs; g; g = g->sock_next)
		if (g->engine)
			reg_sync(g);
	rs_mutex_unlock(&ctl_lock);
}

/* The kernel's send buffer was found full: have the kernel report when it
 * has room (once per registration; later edges come only after a fill). */
void rs_ep_sock_kfull(struct rs_tcp *t)
{
	rs_mutex_lock(&ctl_lock);
	for (struct rs_epreg *g = t->sock->regs; g; g = g->sock_next)
		if (g->engine && !g->kout)
			reg_sync(g);
	rs_mutex_unlock(&ctl_lock);
}

void rs_ep_sock_detached(struct rs_tcp *t)
{
	rs_mutex_lock(&ctl_lock);
	for (struct rs_epreg *g = t->sock->regs; g; g = g->sock_next) {
		g->engine = 0;
		uint32_t ev = g->disabled ? (g->events & ~(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI))
					  : g->events;
		reg_ctl(g, EPOLL_CTL_MOD, ev);
	}
	rs_mutex_unlock(&ctl_lock);
	rs_ep_sock_changed(t);
}

/* Drop every registration of s; del: remove them from the kernel sets too,
 * except from a set this process inherited from its parent: the file is
 * the parent's too, so the kernel keeps its registration there when the
 * child closes its descriptor (the child has no operations in flight that
 * would keep the file open). */
static void forget_regs(struct rs_sock *s, int del)
{
	rs_mutex_lock(&ctl_lock);
	while (s->regs) {
		struct rs_epreg *g = s->regs;
		s->regs = g->sock_next;
		/* (Only through a number that still names this socket: closed
		 * after a dup, it may name another file now, whose registration
		 * the kernel would drop instead.) */
		if (del && g->ep->pid == rs_rt.pid && rs_fd_peek(g->fd) == s)
			real_ctl(g->ep->epfd, EPOLL_CTL_DEL, g->fd, 0, 0);
		if (byfd_get(g->ep, g->fd) == g)
			byfd_set(g->ep, g->fd, NULL);
		rs_mutex_lock(&g->ep->lock);
		ready_unlink_all(g->ep, g);
		rs_mutex_unlock(&g->ep->lock);
		reg_free(g);
	}
	rs_mutex_unlock(&ctl_lock);
}

/* The socket's last fd is being closed: the kernel would drop it from every
 * set when the file goes; our in-flight operations may keep the file a
 * little longer, so remove it now. */
void rs_ep_sock_gone(struct rs_tcp *t)
{
	forget_regs(t->sock, 1);
}

/* A tracked socket never armed is closed: forget its registrations (the
 * kernel drops them with the file). */
void rs_ep_forget_sock(struct rs_sock *s)
{
	if (s->regs)
		forget_regs(s, 0);
}

void rs_ep_close(int epfd)
{
	struct rs_ep *ep = ep_get(epfd, 0);
	if (!ep)
		return;
	atomic_store(&eps[epfd], NULL);
	rs_mutex_lock(&ctl_lock);
	rs_mutex_lock(&ep->lock); /* a freed registration's link is reused */
	while (ep->ready_head)
		ready_unlink_all(ep, ep->ready_head);
	rs_mutex_unlock(&ep->lock);
	for (unsigned fd = 0; fd < ep->nbyfd; fd++) {
		struct rs_epreg *g = ep->byfd[fd];
		if (!g)
			continue;
		struct rs_epreg **pp = &g->s->regs;
		while (*pp && *pp != g)
			pp = &(*pp)->sock_next;
		if (*pp)
			*pp = g->sock_next;
		reg_free(g);
	}
	for (int i = 0; i < RS_EP_RINGS; i++)
		if (ep->rings[i])
			reg_free(ep->rings[i]);
	rs_mutex_unlock(&ctl_lock);
	free(ep->byfd);
	pthread_mutex_destroy(&ep->lock);
	/* ep itself is leaked on purpose: another thread may be inside
	 * rs_ep_wait on it (closing an epoll fd in use is the app's race). */
}

/* ---- the wait --------------------------------------------------------------- */

/* Make sure ring r's eventfd wakes waits on ep. */
static void ensure_ring_in(struct rs_ep *ep, struct rs_ring *r)
{
	int free_slot = -1;
	rs_mutex_lock(&ctl_lock);
	for (int i = 0; i < RS_EP_RINGS; i++) {
		struct rs_epreg *g = ep->rings[i];
		if (g && g->ring == r && g->fd == r->evfd) {
			rs_mutex_unlock(&ctl_lock);
			return;
		}
		if (g && g->ring == r) { /* the ring was reused by a new thread */
			reg_free(g);
			ep->rings[i] = NULL;
			g = NULL;
		}
		if (!g && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0) { /* recycle: the oldest registration */
		free_slot = 0;
		real_ctl(ep->epfd, EPOLL_CTL_DEL, ep->rings[0]->fd, 0, 0);
		reg_free(ep->rings[0]);
	}
	struct rs_epreg *g = reg_alloc();
	if (g) {
		g->ep = ep;
		g->ring = r;
		g->fd = r->evfd;
		if (real_ctl(ep->epfd, EPOLL_CTL_ADD, r->evfd, EPOLLIN | EPOLLET, (uint64_t)(uintptr_t)g) < 0 &&
		    real_ctl(ep->epfd, EPOLL_CTL_MOD, r->evfd, EPOLLIN | EPOLLET, (uint64_t)(uintptr_t)g) < 0) {
			reg_free(g);
			g = NULL;
		}
	}
	ep->rings[free_slot] = g;
	rs_mutex_unlock(&ctl_lock);
}

/* Engine readiness of the set's engine sockets owned by r (r locked).
 * Sockets owned by another thread are collected in foreign[] to be
 * detached once no ring lock is held. */
static int collect(struct rs_ep *ep, struct rs_ring *r, struct epoll_event *evs, int max,
		   struct rs_sock **foreign, int *nforeign, int *fds, int *transient)
{
	int n = 0;
	rs_mutex_lock(&ep->lock);
	struct rs_epreg *list = ep->ready_head, *keep = NULL, *keep_tail = NULL;
	ep->ready_head = ep->ready_tail = NULL;
	uint32_t round = ++ep->round;
	while (list) {
		struct rs_epreg *g = list;
		list = g->ready_next;
		g->on_ready = 0;
		if (n >= max) {
			ready_push(ep, g);
			continue;
		}
		struct rs_tcp *t = g->s ? atomic_load(&g->s->eng) : NULL;
		if (!t)
			continue;
		struct rs_ring *o = RS_LOAD(t->owner);
		int mode = RS_LOAD(t->mode);
		if (o && o != r && mode == RS_TM_ARMED) {
			if (*nforeign < 8) {
				fds[*nforeign] = g->fd;
				foreign[(*nforeign)++] = g->s;
			}
			ready_push(ep, g); /* looked at again once detached */
			continue;
		}
		unsigned ready;
		if (g->engine && o == r && mode == RS_TM_ARMED) {
			ready = rs_tcp_readiness(t);
		} else if (!rs_tcp_passive(t) && (rs_tcp_has_input(t) || rs_tcp_has_error(t))) {
			/* held after detaching: bytes, or an error taken from the
			 * kernel */
			ready = (rs_tcp_has_input(t) ? EPOLLIN | EPOLLRDNORM : 0) |
				(rs_tcp_has_error(t) ? EPOLLERR : 0);
			if (!g->engine) {
				/* and what the kernel says of the socket meanwhile
				 * (EPOLLPRI, EPOLLOUT...), in the same event, as one
				 * kernel registration reports it */
				struct pollfd p = { g->fd, (short)(g->events & 0xffff), 0 };
				if (rs_syscall(SYS_poll, &p, 1, 0) == 1 && !(p.revents & POLLNVAL))
					ready |= (unsigned)p.revents;
			}
		} else {
			if (mode == RS_TM_DETACHING) {
				*transient = 1;
				ready_push(ep, g); /* the owner may still move data */
			}
			continue;
		}
		if (mode == RS_TM_DETACHING)
			*transient = 1;
		unsigned ev = ready & (g->events | EPOLLERR | EPOLLHUP);
		int et = g->events & EPOLLET;
		if (!ev || g->disabled || (et && !g->edge))
			continue;
		evs[n].events = ev;
		evs[n].data.u64 = g->data;
		n++;
		g->seen = round;
		g->edge = 0;
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
			ep->ready_head = keep;
		ep->ready_tail = keep_tail;
	}
	rs_mutex_unlock(&ep->lock);
	return n;
}

int rs_ep_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms, const sigset_t *ss,
	       const struct timespec *tmo)
{
	struct rs_ep *ep = ep_get(epfd, 0);
	struct rs_ring *r = rs_ring_tls;
	if (!ep) {
		if (r && rs_ring_has_work(r)) {
			rs_ring_lock(r);
			rs_ring_progress(r);
			rs_ring_unlock(r);
		}
		return (int)RS_PASS;
	}
	if (max <= 0 || max > (int)(INT32_MAX / sizeof(struct epoll_event)))
		return -EINVAL;
	int64_t deadline = -1;
	if (tmo)
		timeout_ms = (int)(tmo->tv_sec * 1000 + tmo->tv_nsec / 1000000) +
			     (tmo->tv_nsec % 1000000 ? 1 : 0);
	if (timeout_ms > 0)
		deadline = rs_now_ns() + (int64_t)timeout_ms * 1000000;
	/* RINGSOCK_WAIT=ring: block in io_uring_enter with the set itself
	 * polled through the ring, so one system call both sends what is queued
	 * and wakes on the next completion; the kernel's part of the set is
	 * fetched only when the set became readable. */
	int ring_mode = 0;
	if (r && rs_rt.cfg.v[RS_K_WAIT] == RS_WAIT_RING) {
		/* only while this thread's ring will bring something: receives
		 * armed, or sends to submit.  A set of kernel fds, or of sockets
		 * that still read through the kernel (new ones), is cheaper to
		 * wait on with epoll_wait itself (the ring's eventfd is in the
		 * set, so the ring still wakes it). */
		rs_ring_lock(r);
		ring_mode = r->owned != NULL && (r->nrecv || r->txq || r->sq_sends);
		rs_ring_unlock(r);
	}
	int looked_again = 0;
	for (;;) {
		int n = 0, nforeign = 0, wake = 0, transient = 0;
		struct rs_sock *foreign[8];
		int ffd[8];
		int block = timeout_ms != 0;
		int fetch = 1; /* ask the kernel's set */
		if (r) {
			rs_ring_lock(r);
			int sleepy = ring_mode && block, entered = 0;
			if (sleepy) {
				/* completions only: what the program queued goes out
				 * with the sleep below, or before returning */
				rs_ring_poll_arm(r, epfd, ep);
				entered = rs_ring_catch_up(r);
			} else {
				rs_ring_progress(r);
			}
			n = collect(ep, r, evs, max, foreign, &nforeign, ffd, &transient);
			if (sleepy && !entered && (n || nforeign))
				rs_ring_submit(r);
			if (ring_mode) {
				/* A poll armed and not fired: the set has had nothing
				 * since it was armed (a one-shot poll completes at once
				 * if the set is readable when armed). */
				fetch = rs_ring_poll_needed(r, ep);
			}
			if (!n && block && !nforeign) {
				ensure_ring_in(ep, r);
				if (ring_mode) {
					if (rs_ring_has_completions(r)) {
						rs_ring_unlock(r);
						continue;
					}
				} else {
					rs_ring_evfd_quiet(r, 0);
					if (rs_ring_has_work(r)) {
						rs_ring_evfd_quiet(r, 1);
						rs_ring_unlock(r);
						continue;
					}
				}
			}
			rs_ring_unlock(r);
		} else {
			/* No ring here: sockets of other threads in this set. */
			n = collect(ep, NULL, evs, max, foreign, &nforeign, ffd, &transient);
		}
		for (int i = 0; i < nforeign; i++)
			rs_tcp_before_kernel(foreign[i], ffd[i], RINGSOCK_PT_THREAD);
		if (nforeign) {
			if (r)
				rs_ring_evfd_quiet(r, 1);
			continue;
		}
		int t_ms = n ? 0 : timeout_ms;
		if (t_ms > 0 && deadline >= 0) {
			int64_t left = deadline - rs_now_ns();
			t_ms = left <= 0 ? 0 : (int)((left + 999999) / 1000000);
		}
		if (r && RS_LOAD(r->tr_stale) && !ring_mode)
			transient = 1; /* work the ring may hide: look again soon */
		if (transient && (t_ms < 0 || t_ms > 10)) {
			t_ms = 10; /* a socket in hand-over: look again soon */
			wake = 1;
		}
		long k = 0;
		int sleeps = !ring_mode && t_ms != 0;
		if (sleeps)
			rs_sig_clear();
		if (fetch && sleeps) /* a cancellation point, like libc's */
			k = rs_blocking_syscall(SYS_epoll_pwait, epfd, (long)(evs + n), max - n, t_ms, (long)ss, 8);
		else if (fetch)
			k = rs_syscall(SYS_epoll_pwait, epfd, evs + n, max - n, 0, ss, 8);
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
			/* Nothing anywhere: sleep in the ring, the set polled by it,
			 * submitting what is queued in the same system call.  Not
			 * holding the lock: another thread may take it and reap
			 * meanwhile; it wakes us through the set (it writes our
			 * eventfd, which is in it).  A handler that ran during a
			 * call that submitted is reported by sig.c, not the kernel. */
			rs_ring_lock(r);
			if (rs_ring_has_completions(r) || rs_ring_poll_needed(r, ep)) {
				rs_ring_unlock(r);
				continue;
			}
			rs_sig_clear();
			int e = rs_ring_sleep(r, t_ms, ss);
			if (e == -EINTR || rs_sig_take())
				return -EINTR;
			if (e == -ETIME && (!wake || (deadline >= 0 && rs_now_ns() >= deadline)))
				return 0;
			continue;
		}
		if (k < 0)
			return n ? n : (int)k;
		/* Translate the kernel's entries. */
		int out = n;
		for (long i = 0; i < k; i++) {
			struct epoll_event e = evs[n + i];
			struct rs_epreg *g = cookie_reg(ep, e.data.u64);
			if (!g) {
				/* Not a cookie: an fd the engine does not track. */
				evs[out++] = e;
				continue;
			}
			if (g->ring) {
				wake = 1;
				continue;
			}
			if (g->engine) {
				wake = 1; /* HUP/ERR edge of an engine socket */
				struct rs_tcp *kt = g->s ? atomic_load(&g->s->eng) : NULL;
				if (kt && (e.events & (EPOLLERR | EPOLLHUP))) {
					/* a reset or hang-up: engine readiness asks
					 * the kernel about it from now on */
					rs_tcp_kernel_hup(kt, e.events);
					if (!rx_direct(g)) {
						rs_mutex_lock(&ep->lock);
						g->edge = 1;
						ready_push(ep, g);
						rs_mutex_unlock(&ep->lock);
					}
				}
				if ((e.events & EPOLLOUT) && kt && RS_LOAD(kt->kfull)) {
					/* the kernel's buffer has room again */
					RS_STORE(kt->kfull, 0);
					rs_mutex_lock(&ep->lock);
					g->edge = 1;
					ready_push(ep, g);
					rs_mutex_unlock(&ep->lock);
				}
				if ((e.events & EPOLLOUT) && !(g->kev & EPOLLET)) {
					/* level-triggered room: watched no longer */
					rs_mutex_lock(&ctl_lock);
					reg_sync(g);
					rs_mutex_unlock(&ctl_lock);
				}
				uint32_t kev_out = e.events & EPOLLOUT;
				e.events &= ~(uint32_t)(EPOLLOUT | EPOLLWRNORM);
				/* (one-shot: the engine's half of this round's
				 * report may have disabled it; the kernel's half
				 * joins it) */
				if (!rx_direct(g) || (g->disabled && g->seen != ep->round))
					continue;
				/* A bulk reader's input, reported by the kernel; an
				 * edge carries the whole mask, as the kernel's does,
				 * with writability as the engine has it. */
				e.events &= g->events | EPOLLHUP | EPOLLERR;
				if ((g->events & (EPOLLET | EPOLLOUT)) == (EPOLLET | EPOLLOUT) && (e.events || kev_out) &&
				    kt && rs_tcp_writable(kt))
					e.events |= EPOLLOUT;
				if (!e.events)
					continue;
				if (g->events & EPOLLONESHOT)
					g->disabled = 1;
				e.data.u64 = g->data;
				int merged = 0;
				for (int j = 0; j < n && g->seen == ep->round; j++)
					if (evs[j].data.u64 == g->data) {
						evs[j].events |= e.events;
						merged = 1;
						break;
					}
				if (!merged)
					evs[out++] = e;
				continue;
			}
			if (g->disabled && g->seen != ep->round)
				continue; /* one-shot, fired from engine state: the
					   * kernel's registration still has ERR/HUP */
			struct rs_tcp *t = g->s ? atomic_load(&g->s->eng) : NULL;
			if (t && !rs_tcp_passive(t) && RS_LOAD(t->mode) == RS_TM_DETACHED) {
				/* what the engine still holds for it */
				if (rs_tcp_has_input(t))
					e.events |= (EPOLLIN | EPOLLRDNORM) & g->events;
				if (rs_tcp_has_error(t))
					e.events |= EPOLLERR;
			}
			if (g->events & EPOLLONESHOT)
				g->disabled = 1; /* as the kernel's registration now is,
						  * should the engine take the socket */
			e.data.u64 = g->data;
			if (g->seen == ep->round && out > 0) {
				/* also reported from engine state this round: merge */
				int merged = 0;
				for (int j = 0; j < n; j++)
					if (evs[j].data.u64 == g->data) {
						evs[j].events |= e.events;
						merged = 1;
						break;
					}
				if (merged)
					continue;
			}
			evs[out++] = e;
		}
		if (out > 0 || !wake)
			return out;
		/* Woken by a completion, an ERR/HUP edge of an engine socket or
		 * a ring's eventfd: what it brought is on the ready list now.  A
		 * poll with no timeout looks once more. */
		if (timeout_ms == 0 && looked_again++)
			return 0;
		if (deadline >= 0 && rs_now_ns() >= deadline)
			return 0;
	}
}

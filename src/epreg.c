/* epreg.c - what the epoll sets know of engine sockets: registrations.
 *
 * A registration (struct rs_epreg, ep_int.h) ties a socket to one epoll
 * set: its kernel registration carries the registration's address as a
 * cookie (and the events kernel_events chooses), and the set's ready list
 * holds it when engine readiness may have changed.  The socket core and
 * the kinds report changes here (rs_ep_sock_*) with the socket's lock
 * held; epoll_ctl (epctl.c) and epoll_wait (ep.c) read and edit the same records.
 * Records live in a type-stable arena, so a cookie from the kernel can be
 * validated before use.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>

#include "engine.h"
#include "ep_int.h"
#include "sys.h"

static struct rs_ep *_Atomic eps[EP_MAX_FD];
static atomic_int eps_top; /* above the highest epfd ever given a record */
rs_lock rs_ep_ctl_lock = RS_LOCK_INIT;
static struct rs_epreg *arena;
static atomic_uint arena_next;
static struct rs_epreg *free_regs;

struct rs_epreg *rs_epr_alloc(void)
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

void rs_epr_free(struct rs_epreg *g)
{
	g->magic = 0;
	g->free_next = free_regs;
	free_regs = g;
}

struct rs_epreg *rs_epr_cookie(struct rs_ep *ep, uint64_t data)
{
	struct rs_epreg *g = (struct rs_epreg *)(uintptr_t)data;
	if (!arena || g < arena || g >= arena + ARENA_REGS ||
	    ((uintptr_t)g - (uintptr_t)arena) % sizeof(*g))
		return NULL;
	if (g->magic != EPREG_MAGIC || g->ep != ep)
		return NULL;
	return g;
}

struct rs_ep *rs_ep_get(int epfd, int create)
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
	rs_lock_init(&ep->lock);
	struct rs_ep *expect = NULL;
	if (!atomic_compare_exchange_strong(&eps[epfd], &expect, ep)) {
		free(ep);
		return expect;
	}
	int top = atomic_load(&eps_top);
	while (top <= epfd && !atomic_compare_exchange_weak(&eps_top, &top, epfd + 1))
		;
	return ep;
}

/* fork (engine.c, after every ring's lock): the registrations' lock and
 * every set's are held across it, so the child inherits none of them in
 * the middle of an update (by a thread it does not have); in the child
 * they are new. */
static struct rs_ep *fork_held[EP_MAX_FD]; /* the sets whose lock fork holds */
static int fork_nheld;

void rs_ep_fork_prepare(void)
{
	rs_mutex_lock(&rs_ep_ctl_lock);
	int top = atomic_load(&eps_top);
	fork_nheld = 0;
	for (int i = 0; i < top; i++) {
		struct rs_ep *ep = atomic_load(&eps[i]);
		if (ep) {
			rs_mutex_lock(&ep->lock);
			fork_held[fork_nheld++] = ep;
		}
	}
}

void rs_ep_fork_release(int child)
{
	if (child) {
		/* every set's, also one another thread made after the scan
		 * (rs_ep_get publishes without the ctl lock) */
		int top = atomic_load(&eps_top);
		for (int i = 0; i < top; i++) {
			struct rs_ep *ep = atomic_load(&eps[i]);
			if (!ep)
				continue;
			rs_lock_init(&ep->lock);
			/* The child shares these sets' kernel registrations with
			 * the parent: a socket in one that the child armed would
			 * change what the kernel reports to the parent (its
			 * writability, its input become the engine's).  Such
			 * sockets stay the kernel's in the child. */
			for (unsigned fd = 0; fd < ep->nbyfd; fd++) {
				struct rs_epreg *g = ep->byfd[fd];
				if (g && g->s && !atomic_load(&g->s->eng) && !g->s->no_engine)
					rs_sock_passthrough(g->s, RINGSOCK_PT_FORK);
			}
		}
	}
	for (int i = 0; i < fork_nheld; i++) {
		if (child)
			rs_lock_init(&fork_held[i]->lock);
		else
			rs_mutex_unlock(&fork_held[i]->lock);
	}
	fork_nheld = 0;
	if (child)
		rs_lock_init(&rs_ep_ctl_lock);
	else
		rs_mutex_unlock(&rs_ep_ctl_lock);
}

int rs_ep_known(int epfd)
{
	return rs_ep_get(epfd, 0) != NULL;
}

int rs_epr_byfd_set(struct rs_ep *ep, int fd, struct rs_epreg *g)
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

struct rs_epreg *rs_epr_byfd_get(struct rs_ep *ep, int fd)
{
	return (unsigned)fd < ep->nbyfd ? ep->byfd[fd] : NULL;
}

/* Ready list (ep->lock held). */
void rs_epr_ready_push(struct rs_ep *ep, struct rs_epreg *g)
{
	if (g->on_ready)
		return;
	/* (when it became ready: a later push leaves it where it is) */
	g->ready_clock = __atomic_add_fetch(&rs_ready_clock, 1, __ATOMIC_RELAXED);
	g->on_ready = 1;
	g->ready_next = NULL;
	if (ep->ready_tail)
		ep->ready_tail->ready_next = g;
	else
		RS_STORE(ep->ready_head, g);
	ep->ready_tail = g;
}

void rs_epr_ready_unlink(struct rs_ep *ep, struct rs_epreg *g)
{
	if (!g->on_ready)
		return;
	struct rs_epreg **pp = &ep->ready_head, *prev = NULL;
	while (*pp && *pp != g) {
		prev = *pp;
		pp = &(*pp)->ready_next;
	}
	if (*pp) {
		__atomic_store_n(pp, g->ready_next, __ATOMIC_RELAXED); /* (ready_head: kernel_only) */
		if (ep->ready_tail == g)
			ep->ready_tail = prev;
	}
	g->on_ready = 0;
}

int rs_epr_kernel_input(struct rs_epreg *g)
{
	struct rs_esock *e = g->s ? atomic_load(&g->s->eng) : NULL;
	return e && e->ops->kernel_input(e);
}

/* What the kernel watches for a registration: everything for a socket the
 * engine does not serve; for an engine socket only HUP/ERR edges, plus
 * input for a bulk reader whose input stays in the kernel.  EPOLLOUT is
 * added once the kernel's send buffer was seen full (kfull): its edges then
 * tell when the socket can take data again.  Not before: watched from the
 * start, every new socket's first edge (it is writable) would cost the
 * next epoll_wait a trip to the kernel's set for nothing. */
uint32_t rs_epr_kernel_events(struct rs_epreg *g)
{
	if (!g->engine)
		return g->events;
	struct rs_esock *e = g->s ? atomic_load(&g->s->eng) : NULL;
	if (e && RS_LOAD(e->kfull))
		g->kout = 1;
	uint32_t out = g->kout ? EPOLLOUT : 0;
	if (rs_epr_kernel_input(g)) {
		uint32_t in = g->events & (EPOLLIN | EPOLLRDNORM | EPOLLRDHUP | EPOLLPRI | EPOLLET | EPOLLONESHOT);
		if (!(g->events & EPOLLOUT))
			return in;
		if (g->events & EPOLLET) /* the kernel's edges carry its whole
					  * mask: OUT is translated on the way out */
			return in | EPOLLOUT;
		/* Level-triggered input: EPOLLET for the room edges would make
		 * the input edge-triggered too.  EPOLLOUT is watched (level)
		 * only while the buffer is full; its first report drops it. */
		return in | (e && RS_LOAD(e->kfull) ? EPOLLOUT : 0);
	}
	return EPOLLET | out;
}

long rs_epr_real_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data)
{
	struct epoll_event ev = { .events = events, .data.u64 = data };
	return rs_syscall(SYS_epoll_ctl, epfd, op, fd, &ev);
}

/* ADD or MOD of a socket's registration, the cookie as data. */
long rs_epr_ctl(struct rs_epreg *g, int op, uint32_t events)
{
	long e = rs_epr_real_ctl(g->ep->epfd, op, g->fd, events, (uint64_t)(uintptr_t)g);
	if (e == 0)
		g->kev = events;
	return e;
}

/* An edge-triggered registration is renewed by the engine (not by the
 * program): it can report the socket's readiness once more than the
 * kernel path would (ep_rearms; ringsock(7), epoll), whatever events it
 * watches (ERR and HUP are always among them). */
static void count_rearm(const struct rs_epreg *g)
{
	if (g->events & EPOLLET)
		rs_stat_add(RS_C_EP_REARMS, 1);
}

/* The engine (not the program's epoll_ctl) changes what the kernel watches
 * for g.  EPOLL_CTL_MOD polls the socket anew and queues what is ready
 * for the new events, whether it watched them before or not: an
 * edge-triggered registration of a socket ready for them reports an edge
 * the kernel path would not (nothing happened to the socket).  Counted
 * (ep_rearms): not suppressed, since a wake-up the kernel's narrower
 * watch dropped (a fork child's shutdown, say) would make the same edge
 * on the kernel path, and nothing tells the two apart without a look at
 * the kernel's set after every report. */
static long engine_mod(struct rs_epreg *g, uint32_t events)
{
	count_rearm(g);
	return rs_epr_ctl(g, EPOLL_CTL_MOD, events);
}

/* Make the kernel watch what rs_epr_kernel_events says, unless it watches that
 * already, or that plus EPOLLOUT edges (harmless: an engine socket's
 * EPOLLOUT from the kernel only says its buffer has room).  1: the kernel
 * was told to watch less or other events (EPOLL_CTL_MOD), and an edge it
 * had queued and not reported yet may be gone with them. */
int rs_epr_sync(struct rs_epreg *g)
{
	uint32_t want = rs_epr_kernel_events(g);
	if (g->kev == want)
		return 0;
	if ((g->kev & EPOLLET) && (g->kev & EPOLLOUT) && !(want & EPOLLOUT) && g->engine &&
	    (g->kev & ~(uint32_t)EPOLLOUT) == want) {
		g->kout = 1;
		return 0;
	}
	engine_mod(g, want);
	return 1;
}

int rs_epr_engine_mode(struct rs_sock *s)
{
	struct rs_esock *e = atomic_load(&s->eng);
	return e && rs_esock_armed_on(e, NULL);
}

/* Each set looks at the socket again; edge: an edge for the registrations
 * whose events meet key (0: all), as the kernel's wake-up with that key
 * makes one only for those (ERR and HUP are in every registration);
 * RS_EDGE_UNTOLD: for those not told of the input's end (end_told). */
enum { RS_EDGE_NONE, RS_EDGE, RS_EDGE_UNTOLD };
static void sock_look(struct rs_esock *e, int edge, uint32_t key)
{
	for (struct rs_epreg *g = e->sock->regs; g; g = g->sock_next) {
		struct rs_ep *ep = g->ep; /* (fixed while g is on the list) */
		rs_mutex_lock(&ep->lock);
		if (!g->gone) {
			if (edge && (!key || (key & (g->events | EPOLLERR | EPOLLHUP))) &&
			    !(edge == RS_EDGE_UNTOLD && g->end_told))
				g->edge = 1;
			rs_epr_ready_push(ep, g);
		}
		rs_mutex_unlock(&ep->lock);
	}
}

void rs_ep_sock_changed(struct rs_esock *e)
{
	sock_look(e, RS_EDGE, 0);
}

/* The engine's receive met the stream's end (the peer's FIN): an edge
 * for each registration, as the FIN's wake-up makes, except those the
 * kernel already told of that end (end_told): the FIN's wake-up was then,
 * on the kernel path too (seed 26000473: an OUT|RDHUP|ET registration
 * reported OUT|RDHUP again once the engine's receive, armed later, read
 * the last bytes).  Each set looks again. */
void rs_ep_sock_end(struct rs_esock *e)
{
	sock_look(e, RS_EDGE_UNTOLD, 0);
}

/* Input arrived (data, a datagram), nothing else changed: the kernel's
 * sk_data_ready wakes its waiters with the input key, which makes no edge
 * for a registration that watches only output (an EPOLLOUT|EPOLLET one
 * got an OUT edge for every receive completion). */
void rs_ep_sock_input(struct rs_esock *e)
{
	sock_look(e, RS_EDGE, EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND);
}

/* The same for a TCP receive's bytes, but no edge for a registration the
 * kernel told of the input's end: every byte before the FIN was in the
 * kernel's queue when it did, so that report covered them (with
 * RINGSOCK_ARM_AFTER=1, the receive the first read arms brought the
 * rest: IN|RDHUP reported again). */
void rs_ep_sock_received(struct rs_esock *e)
{
	sock_look(e, RS_EDGE_UNTOLD, EPOLLIN | EPOLLPRI | EPOLLRDNORM | EPOLLRDBAND);
}

/* The socket's room changed with no send (SO_SNDBUF set: the kernel's
 * sk_write_space wakes its waiters with the output key when the socket is
 * writable).  An engine-mode registration whose kernel watch has no
 * EPOLLOUT gets that edge here; the others get the kernel's own.  Socket
 * lock held. */
void rs_ep_sock_output(struct rs_esock *e)
{
	rs_mutex_lock(&rs_ep_ctl_lock);
	for (struct rs_epreg *g = e->sock->regs; g; g = g->sock_next) {
		if (g->gone || !g->engine || (g->kev & EPOLLOUT) || !(g->events & EPOLLOUT))
			continue;
		rs_mutex_lock(&g->ep->lock);
		g->edge = 1;
		rs_epr_ready_push(g->ep, g);
		rs_mutex_unlock(&g->ep->lock);
	}
	rs_mutex_unlock(&rs_ep_ctl_lock);
}

/* The socket's readiness is the engine's from now on.  Each set looks at
 * it again, and an edge-triggered registration gets an edge: the kernel
 * watches less now (its input, its room) or its reports are read another
 * way (an OUT edge is the engine's), so an edge it had queued and not
 * reported yet is gone, and the engine's report stands for it.  Not
 * where the kernel goes on watching and reporting the socket's input
 * exactly as before (on probation, shut down for reading): its edges go
 * on, and arming is no event of the socket's (an edge here reported
 * again what the kernel had: after a reset it took, IN|HUP a second
 * time). */
void rs_ep_sock_armed(struct rs_esock *e)
{
	rs_mutex_lock(&rs_ep_ctl_lock);
	rs_epr_prune(e->sock);
	for (struct rs_epreg *g = e->sock->regs; g; g = g->sock_next) {
		RS_STORE(g->engine, 1); /* (read by waits without the ctl lock) */
		int moved = rs_epr_sync(g);
		int same = !moved && rs_epr_kernel_input(g) && g->kev == rs_epr_kernel_events(g);
		rs_mutex_lock(&g->ep->lock);
		if (!same) {
			g->edge = 1; /* (the engine's report stands for one the
				      * kernel may have queued: counted as a
				      * renewal) */
			count_rearm(g);
		}
		rs_epr_ready_push(g->ep, g);
		rs_mutex_unlock(&g->ep->lock);
	}
	rs_mutex_unlock(&rs_ep_ctl_lock);
}

void rs_ep_sock_rx_direct(struct rs_esock *e)
{
	rs_mutex_lock(&rs_ep_ctl_lock);
	for (struct rs_epreg *g = e->sock->regs; g; g = g->sock_next)
		if (g->engine && !g->gone)
			rs_epr_sync(g);
	rs_mutex_unlock(&rs_ep_ctl_lock);
}

/* The kernel's send buffer was found full: have the kernel report when it
 * has room, unless it watches EPOLLOUT already (an edge-triggered watch
 * keeps it; a level-triggered one, a bulk reader's, dropped it at its
 * first report and needs it again after every fill: libuv's
 * tcp_writealot hung on the second partial send). */
void rs_ep_sock_kfull(struct rs_esock *e)
{
	rs_mutex_lock(&rs_ep_ctl_lock);
	for (struct rs_epreg *g = e->sock->regs; g; g = g->sock_next)
		if (g->engine && !g->gone && !(g->kev & EPOLLOUT))
			rs_epr_sync(g);
	rs_mutex_unlock(&rs_ep_ctl_lock);
}

/* What the kernel watches for g once its socket is the kernel's. */
static uint32_t detached_events(const struct rs_epreg *g)
{
	return g->disabled ? (g->events & ~(EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLPRI)) : g->events;
}

int rs_ep_sock_detach_renews(struct rs_esock *e)
{
	for (struct rs_epreg *g = e->sock->regs; g; g = g->sock_next)
		if (!g->gone && g->engine && (g->events & (EPOLLET | EPOLLONESHOT)) && g->kev != detached_events(g))
			return 1;
	return 0;
}

void rs_ep_sock_detached(struct rs_esock *e)
{
	rs_mutex_lock(&rs_ep_ctl_lock);
	for (struct rs_epreg *g = e->sock->regs; g; g = g->sock_next) {
		RS_STORE(g->engine, 0);
		if (g->gone)
			continue;
		uint32_t ev = detached_events(g);
		/* (Not when the kernel watches exactly that already, as for a
		 * socket whose input it reported: EPOLL_CTL_MOD polls anew,
		 * and would report an edge-triggered registration's input a
		 * second time.) */
		if (g->kev != ev && engine_mod(g, ev) == 0) {
			/* (the kernel polls anew and reports its state) */
			rs_mutex_lock(&g->ep->lock);
			g->kedge = 0;
			rs_mutex_unlock(&g->ep->lock);
		}
	}
	rs_mutex_unlock(&rs_ep_ctl_lock);
	/* Leaving the engine is no event of the socket's: each set looks at it
	 * again (level-triggered input it still holds), but an edge-triggered
	 * registration gets no new edge; one not yet reported stays.  What
	 * the kernel has queued since the engine's receive stopped was never
	 * reported, and the kernel reports it (EPOLL_CTL_MOD polls it). */
	sock_look(e, RS_EDGE_NONE, 0);
}

/* Drop every registration of s; del: remove them from the kernel sets too,
 * except from a set this process inherited from its parent: the file is
 * the parent's too, so the kernel keeps its registration there when the
 * child closes its descriptor (the child has no operations in flight that
 * would keep the file open). */
static void forget_regs(struct rs_sock *s, int del)
{
	rs_mutex_lock(&rs_ep_ctl_lock);
	while (s->regs) {
		struct rs_epreg *g = s->regs;
		s->regs = g->sock_next;
		if (g->gone) { /* its set is closed; the number may be another's */
			rs_epr_free(g);
			continue;
		}
		/* (Only through a number that still names this socket: closed
		 * after a dup, it may name another file now, whose registration
		 * the kernel would drop instead.) */
		if (del && g->ep->pid == rs_rt.pid && rs_fd_peek(g->fd) == s)
			rs_epr_real_ctl(g->ep->epfd, EPOLL_CTL_DEL, g->fd, 0, 0);
		if (rs_epr_byfd_get(g->ep, g->fd) == g)
			rs_epr_byfd_set(g->ep, g->fd, NULL);
		rs_mutex_lock(&g->ep->lock);
		rs_epr_ready_unlink(g->ep, g);
		rs_mutex_unlock(&g->ep->lock);
		rs_epr_free(g);
	}
	rs_mutex_unlock(&rs_ep_ctl_lock);
}

/* The socket's last fd is being closed: the kernel would drop it from every
 * set when the file goes; our in-flight operations may keep the file a
 * little longer, so remove it now. */
void rs_ep_sock_gone(struct rs_esock *e)
{
	forget_regs(e->sock, 1);
}

/* A tracked socket never armed is closed: forget its registrations (the
 * kernel drops them with the file). */
void rs_ep_forget_sock(struct rs_sock *s)
{
	if (s->regs)
		forget_regs(s, 0);
}

/* The set epfd is closed: its record is no longer found (its
 * registrations are dropped one by one, rs_epr_drop_fd, then the rest
 * with rs_epr_free_set).  NULL: no record. */
struct rs_ep *rs_epr_detach_set(int epfd)
{
	struct rs_ep *ep = rs_ep_get(epfd, 0);
	if (ep)
		atomic_store(&eps[epfd], NULL);
	return ep;
}

/* The registration under number fd in the closed set ep is gone (the ctl
 * lock held: epctl.c rs_ep_close).  It stays on its socket's list, which
 * only a holder of the socket's lock may change (see ep_int.h), until
 * rs_epr_prune or the socket's close frees it. */
void rs_epr_set_gone(struct rs_ep *ep, int fd)
{
	struct rs_epreg *g = rs_epr_byfd_get(ep, fd);
	if (!g)
		return;
	ep->byfd[fd] = NULL;
	rs_mutex_lock(&ep->lock);
	rs_epr_ready_unlink(ep, g);
	g->gone = 1;
	rs_mutex_unlock(&ep->lock);
}

void rs_epr_prune(struct rs_sock *s)
{
	struct rs_epreg **pp = &s->regs;
	while (*pp) {
		struct rs_epreg *g = *pp;
		if (g->gone) {
			*pp = g->sock_next;
			rs_epr_free(g);
		} else {
			pp = &g->sock_next;
		}
	}
}

/* The rest of a closed set: its ring registrations and its memory. */
void rs_epr_free_set(struct rs_ep *ep)
{
	rs_mutex_lock(&rs_ep_ctl_lock);
	rs_mutex_lock(&ep->lock); /* a freed registration's link is reused */
	while (ep->ready_head)
		rs_epr_ready_unlink(ep, ep->ready_head);
	rs_mutex_unlock(&ep->lock);
	for (int i = 0; i < RS_EP_RINGS; i++)
		if (ep->rings[i])
			rs_epr_free(ep->rings[i]);
	rs_mutex_unlock(&rs_ep_ctl_lock);
	free(ep->byfd);
	/* ep itself, with its lock, is leaked on purpose: another thread may
	 * be inside rs_ep_wait on it (closing an epoll fd in use is the app's
	 * race), and its gone registrations still name it. */
}

/* ---- the wait --------------------------------------------------------------- */

/* Make sure ring r's eventfd wakes waits on ep. */
void rs_epr_ring_in(struct rs_ep *ep, struct rs_ring *r)
{
	int free_slot = -1;
	rs_mutex_lock(&rs_ep_ctl_lock);
	for (int i = 0; i < RS_EP_RINGS; i++) {
		struct rs_epreg *g = ep->rings[i];
		if (g && g->ring == r && g->fd == r->evfd) {
			rs_mutex_unlock(&rs_ep_ctl_lock);
			return;
		}
		if (g && g->ring == r) { /* the ring was reused by a new thread */
			rs_epr_free(g);
			ep->rings[i] = NULL;
			g = NULL;
		}
		if (!g && free_slot < 0)
			free_slot = i;
	}
	if (free_slot < 0) { /* recycle: the oldest registration */
		free_slot = 0;
		rs_epr_real_ctl(ep->epfd, EPOLL_CTL_DEL, ep->rings[0]->fd, 0, 0);
		rs_epr_free(ep->rings[0]);
	}
	struct rs_epreg *g = rs_epr_alloc();
	if (g) {
		g->ep = ep;
		g->ring = r;
		g->fd = r->evfd;
		if (rs_epr_real_ctl(ep->epfd, EPOLL_CTL_ADD, r->evfd, EPOLLIN | EPOLLET, (uint64_t)(uintptr_t)g) < 0 &&
		    rs_epr_real_ctl(ep->epfd, EPOLL_CTL_MOD, r->evfd, EPOLLIN | EPOLLET, (uint64_t)(uintptr_t)g) < 0) {
			rs_epr_free(g);
			g = NULL;
		}
	}
	ep->rings[free_slot] = g;
	rs_mutex_unlock(&rs_ep_ctl_lock);
}

/* Engine readiness of the set's engine sockets owned by r (r locked).
 * Sockets owned by another thread are collected in foreign[] to be
 * detached once no ring lock is held. */

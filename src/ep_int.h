/* ep_int.h - shared by epreg.c (registrations), epctl.c (epoll_ctl) and
 * ep.c (epoll_wait).  Locks: a socket's list of registrations (s->regs) is
 * changed holding both its lock and rs_ep_ctl_lock, and walked holding
 * either (the engine's notices: the socket's lock).  Closing an epoll set
 * holds the ctl lock alone (a member's engine state may be freed by a
 * close meanwhile: nothing pins it), so it leaves its registrations on
 * their sockets' lists, marked gone: walks skip them, and a change of the
 * list made under both locks frees them (rs_epr_prune).
 * rs_ep_ctl_lock guards the rest of the registrations (a set's byfd and rings, a record's events and kernel state); a set's own
 * lock its ready list (and a record's on_ready, edge, disabled, seen).
 * Order: a socket's lock, then rs_ep_ctl_lock, then a set's lock. */
#ifndef RS_EP_INT_H
#define RS_EP_INT_H

#include <sys/epoll.h>

#include "engine_int.h"

#define EPREG_MAGIC 0x72657065u /* "rsep" */
#define EP_MAX_FD 65536
#define ARENA_REGS (1u << 20)
#define RS_EP_RINGS 16

struct rs_epreg {
	uint32_t magic;          /* EPREG_MAGIC while in use (cookie check) */
	int fd;                  /* the descriptor it was registered under */
	struct rs_ep *ep;        /* its set */
	struct rs_sock *s;       /* NULL for a ring eventfd */
	struct rs_ring *ring;    /* eventfd registrations */
	uint32_t events;         /* the application's, with EPOLLET/ONESHOT */
	uint32_t seen;           /* epoll_wait round that reported it */
	int seen_at;             /* and where in that round's events */
	uint64_t data;           /* the application's */
	struct rs_epreg *sock_next; /* s->regs */
	union {
		struct rs_epreg *ready_next; /* the set's ready list */
		struct rs_epreg *free_next; /* once freed */
	};
	uint8_t on_ready, edge, disabled, engine;
	uint8_t gone;            /* its set was closed: skipped by every walk of
				  * s->regs until pruned (set under the ctl
				  * lock and the set's lock) */
	uint8_t kout;            /* the kernel watches EPOLLOUT (engine socket) */
	uint8_t kedge;           /* edge stands for a kernel ERR/HUP event the
				  * engine took and has not reported (ep.c
				  * engine_sock_event; ep->lock) */
	uint8_t end_told;        /* a kernel event told the program of the
				  * socket's input end (EPOLLRDHUP) through it
				  * since its last ADD or MOD: the peer's FIN,
				  * and every byte before it, made its edge then
				  * (rs_ep_sock_end, rs_ep_sock_received) [lock] */
	uint32_t kev;            /* the events the kernel watches for it now */
	uint64_t ready_clock;    /* rs_ready_clock at its last push */
};

struct rs_ep {
	int epfd;                /* the kernel's set */
	rs_lock lock;            /* the ready list, and its registrations' on_ready,
				  * edge, disabled and seen (byfd: the ctl lock) */
	struct rs_epreg **byfd;  /* registration by descriptor number (ctl lock) */
	unsigned nbyfd;          /* byfd's length */
	struct rs_epreg *ready_head, *ready_tail; /* registrations to look at
				  * in the next wait, in the order they became
				  * ready [lock; the head written with
				  * RS_STORE: kernel_only reads it without] */
	struct rs_epreg *rings[RS_EP_RINGS]; /* ring eventfd registrations */
	int nested;              /* watched from outside: no engine sockets */
	int pid;                 /* the process that made this record: in a
				  * fork child the kernel set is shared with
				  * the parent, whose registrations it holds */
	uint32_t round;
};


extern rs_lock rs_ep_ctl_lock;
struct rs_ep *rs_ep_get(int epfd, int create); /* the set's record */
struct rs_epreg *rs_epr_alloc(void);           /* ctl lock held */
void rs_epr_free(struct rs_epreg *g);
/* The registration a kernel event's data names, if it is one of ep's. */
struct rs_epreg *rs_epr_cookie(struct rs_ep *ep, uint64_t data);
int rs_epr_byfd_set(struct rs_ep *ep, int fd, struct rs_epreg *g);
struct rs_epreg *rs_epr_byfd_get(struct rs_ep *ep, int fd);
void rs_epr_ready_push(struct rs_ep *ep, struct rs_epreg *g);   /* ep lock held */
void rs_epr_ready_unlink(struct rs_ep *ep, struct rs_epreg *g); /* ep lock held */
int rs_epr_kernel_input(struct rs_epreg *g); /* the kernel reports its input */
/* What the kernel watches for a registration (see epreg.c). */
uint32_t rs_epr_kernel_events(struct rs_epreg *g);
long rs_epr_real_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
long rs_epr_ctl(struct rs_epreg *g, int op, uint32_t events); /* ADD/MOD, cookie as data */
int rs_epr_sync(struct rs_epreg *g);  /* the kernel watches what it should (1: MOD) */
int rs_epr_engine_mode(struct rs_sock *s); /* armed on the engine */
void rs_epr_ring_in(struct rs_ep *ep, struct rs_ring *r); /* r's eventfd wakes ep's waits */
/* Closing a set (epctl.c rs_ep_close). */
struct rs_ep *rs_epr_detach_set(int epfd);
void rs_epr_set_gone(struct rs_ep *ep, int fd); /* ctl lock */
/* Free s's registrations of closed sets (ctl lock, and s's lock or s never
 * armed: no walk of s->regs can run). */
void rs_epr_prune(struct rs_sock *s);
void rs_epr_free_set(struct rs_ep *ep);

#endif

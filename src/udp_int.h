/* udp_int.h - inside the datagram-socket files: the UDP socket (struct
 * rs_udp) and the calls from udp.c (the kind: policy, readiness, arming,
 * detaching, close, fork) down to udp_recv.c (the receive and the recv
 * family) and udp_send.c (the send path), and from those down to udpq.c
 * (delivery, a fork's leftovers, the socket's pending error both paths
 * report); never back up.  Every function here runs with the socket's
 * lock held (rs_esock_enter) unless it says otherwise. */
#ifndef RS_UDP_INT_H
#define RS_UDP_INT_H

#include <netinet/in.h>

#include "engine_int.h"

/* A datagram the engine holds. */
struct rs_dgram {
	struct rs_dgram *next;   /* the socket's queue, oldest first */
	uint32_t len;            /* payload bytes */
	uint32_t namelen;        /* the source address's length (the kernel's) */
	struct sockaddr_in6 name; /* (an IPv4 address fits) */
	uint32_t gso_max;        /* queued: the route's largest UDP_SEGMENT segment */
	char data[];             /* the payload, len bytes */
};
/* What a held datagram costs against the bound: its memory. */
#define DGRAM_COST(len) ((uint32_t)(len) + (uint32_t)sizeof(struct rs_dgram) + 16)
/* Blocks a received datagram is held in (udpq.c rs_udpq_dgram_new): sizes
 * 128 << class, up to 2 KiB; larger ones are allocated as they come. */
#define RS_DGRAM_CLASSES 5

/* Datagrams held at a fork, in memory both processes share: records of
 * struct rs_uleft_rec and payload, 8-byte aligned, read once by whichever
 * process reads first (lock: a spin lock, held for one copy).  A later
 * fork adds a map for what was held since (datagrams the receive took
 * before its cancel): each process knows, in its own memory, the maps it
 * shares (struct rs_uleft_ref, oldest first), so none is ever copied or
 * unmapped while another process may read it. */
struct rs_uleft_rec {
	uint32_t len, namelen;   /* payload bytes (they follow); address length */
	struct sockaddr_in6 name; /* the source address */
};
struct rs_uleft {
	atomic_int lock;         /* a spin lock both processes take */
	uint32_t off, end;       /* next record, end of records [lock] */
	int err;                 /* an error the engine held, for the first
				  * process that asks */
	char data[];
};
struct rs_uleft_ref {
	struct rs_uleft *l;      /* a shared map of held datagrams */
	size_t map;              /* its length, bytes (for munmap) */
	struct rs_uleft_ref *next; /* [appended under the lock, read without] */
};

/* A destination the kernel accepted sends to (twice in a row: a
 * connected socket's first send may meet an ICMP error the next one
 * reports): later datagrams to it, of at most the size that went, may be
 * queued.  namelen 0: the connected peer (no name given). */
#define RS_UDP_DSTS 8
struct rs_udp_dst {
	uint32_t namelen;        /* 0: unused or no name; see ok */
	uint16_t ok;             /* kernel sends that succeeded in a row (max 2) */
	uint16_t maxlen;         /* the largest of them */
	uint16_t gso_max;        /* the route's largest UDP_SEGMENT segment (route.c), 0 none */
	struct sockaddr_in6 name; /* the destination (namelen bytes of it) */
};

/* A UDP socket on the engine.  Fields guarded like the core's [ring/mu];
 * "hint" fields are also read without the lock. */
struct rs_udp {
	struct rs_esock e;       /* first: the core's part */
	struct rs_dgram *head, *tail; /* held datagrams, oldest first */
	struct rs_dgram *spare[RS_DGRAM_CLASSES]; /* blocks read datagrams
						   * left, for the next ones */
	uint16_t nspare[RS_DGRAM_CLASSES];
	struct rs_uleft_ref *left; /* after a fork [hint] */
	struct msghdr rmsg;      /* the multishot recvmsg's template */
	uint32_t cnt;            /* datagrams held [hint] */
	uint32_t held;           /* their cost (DGRAM_COST) [hint] */
	int rx_err;              /* an error the receive took [hint] */
	uint32_t limit;          /* rx_limit's value ... */
	int limit_for;           /* ... for this SO_RCVBUF the program set */
	uint8_t rx_stop;         /* closing: never arm it again */
	uint8_t throttled;       /* at the bound: no receive until read down */
	uint8_t kwait;           /* a reader that waits for every datagram: its
				  * reads are the kernel's for now [hint] */
	uint8_t waits;           /* blocking reads in a row that had to wait;
				  * in kwait, nonblocking ones that found data */
	uint16_t kw_reads;       /* blocking kernel reads since kwait began */
	uint8_t kw_shift;        /* kwait's retry after 1024 << kw_shift blocking
				  * reads (udp_recv.c) */
	uint8_t kw_retried;      /* the last kwait ended by that retry */
	uint8_t shared;          /* the kernel's reads for good: open in another
				  * process too (fork, spawn), or the kernel
				  * refused the engine's receive [hint] */
	/* the send queue (udp_send.c) */
	uint8_t gso_off;         /* the kernel refused UDP_SEGMENT on it */
	uint8_t corked;          /* a kernel send with MSG_MORE left data
				  * pending: nothing queued until one without */
	uint8_t tx_polling;      /* a poll for room in the kernel's buffer is
				  * armed on the owner's ring (RS_UD_SEND) */
	uint8_t tx_unpolling;    /* ... and its removal submitted */
	uint8_t dst_next;        /* the dst slot to replace next */
	uint8_t tx_since_read;   /* sends since the socket's last read (max 2) */
	uint8_t tx_pp;           /* the last send was the kernel's by the
				  * waiting reader's rule (queueable) [hint] */
	uint16_t tx_kernel;      /* sends left to the kernel before it queues
				  * again (after its buffer was full) */
	struct rs_dgram *tx_head, *tx_tail; /* queued datagrams, oldest first
					     * (name: namelen 0 for none) */
	uint32_t tx_cnt;         /* datagrams queued [hint] */
	uint32_t tx_bytes;       /* their payload */
	struct rs_udp_dst dst[RS_UDP_DSTS]; /* destinations the kernel took */
};

static inline struct rs_udp *udp_of(struct rs_esock *e)
{
	return (struct rs_udp *)e;
}

/* udpq.c: what the socket holds for the program */
/* One datagram into the caller's buffers, as recvmsg returns it (f: its
 * source and MSG_TRUNC): the bytes copied, or its length with MSG_TRUNC. */
ssize_t rs_udpq_deliver(const struct iovec *iov, int n, int flags, struct rs_dgram_from *f, const char *data,
			uint32_t len, const void *name, uint32_t namelen);
/* Datagrams left at forks: any (a hint, without the lock), the next one
 * taken (-EAGAIN: none), the next one's size (-1: none); none and no
 * error left either. */
int rs_udpq_left_records(struct rs_udp *u);
ssize_t rs_udpq_left_take(struct rs_udp *u, const struct iovec *iov, int n, int flags, struct rs_dgram_from *f);
int rs_udpq_left_next_len(struct rs_udp *u);
int rs_udpq_left_empty(struct rs_udp *u);
/* A block for a received datagram of len bytes (NULL: no memory), and
 * its return once read; the spare blocks freed (the socket's end). */
struct rs_dgram *rs_udpq_dgram_new(struct rs_udp *u, uint32_t len);
void rs_udpq_dgram_free(struct rs_udp *u, struct rs_dgram *d);
void rs_udpq_spares_free(struct rs_udp *u);
/* Free every datagram of the socket's own queue. */
void rs_udpq_drop_all(struct rs_udp *u);
/* The socket's pending error: what the receive took (an ICMP error), an
 * error left at a fork, or a queued datagram's. */
int rs_udp_take_error(struct rs_udp *u);   /* taken (0: none) */
int rs_udp_error_held(struct rs_udp *u);   /* hint, without the lock */
int rs_udp_left_error(struct rs_udp *u);   /* one left at a fork [hint] */
void rs_udp_keep_error(struct rs_udp *u, int err); /* for the next call */

/* udp_recv.c: the receive (the owner's ring, r locked) */
void rs_udp_submit_recv(struct rs_ring *r, struct rs_esock *e); /* (the kind's submit_recv) */
static inline void rs_udp_cancel_recv(struct rs_ring *r, struct rs_udp *u)
{
	rs_esock_cancel_recv(r, &u->e);
}
/* A completion of the receive: 1 when the socket's readiness changed. */
int rs_udp_recv_done(struct rs_ring *r, struct rs_udp *u, struct io_uring_cqe *c);
int rs_udp_recv_gone(void *arg); /* (a wait's condition: no receive in flight) */

/* udp_send.c */

/* Queued datagrams to the kernel, oldest first, in one sendmmsg per
 * batch; 0 when the queue is empty, -EAGAIN when the kernel's buffer is
 * full and how is not WAIT.  When it is full:
 *   TRY   leave the rest queued (the watchdog: not the owner);
 *   POLL  leave the rest queued and have the owner's ring tell when it
 *         has room (a nonblocking socket's owner);
 *   WAIT  wait for room, as a blocking send would (up to 10 s; then the
 *         rest is dropped, counted and warned about). */
enum { RS_UDP_FLUSH_TRY, RS_UDP_FLUSH_POLL, RS_UDP_FLUSH_WAIT };
int rs_udp_tx_flush(struct rs_udp *u, int how);
/* How the owner flushes: WAIT on a blocking socket, else POLL. */
static inline int rs_udp_flush_how(struct rs_udp *u)
{
	return __atomic_load_n(&u->e.sock->nonblock, __ATOMIC_RELAXED) ? RS_UDP_FLUSH_POLL : RS_UDP_FLUSH_WAIT;
}
/* The poll for room is cancelled (r locked: closing, detaching). */
void rs_udp_tx_unpoll(struct rs_ring *r, struct rs_udp *u);
/* The program changed what a send means (connect, an option): the
 * destinations the kernel took prove nothing any more. */
void rs_udp_tx_forget(struct rs_udp *u);

/* The program's calls (the kind's table, udp.c; sockcall.c's rs_sock_*): */
/* recv, recvfrom, recvmsg, read: -errno, bytes, or RS_PASS (f may be NULL). */
ssize_t rs_udp_recv_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
			 struct rs_dgram_from *f);
int rs_udp_recvmmsg(struct rs_sock *s, int fd, struct mmsghdr *vec, unsigned vlen, int flags, struct timespec *tmo);
/* send, sendto, sendmsg, write, writev (udp_send.c): the length (queued),
 * -errno (an error the engine holds is this send's), or RS_PASS (the
 * kernel's send; what was queued is out first).  n -1: the kernel's. */
ssize_t rs_udp_send_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags, const void *name,
			 socklen_t namelen);
/* After the kernel's send (r, and errno as err): what it proves about the
 * destination; a full buffer makes writability the kernel's. */
void rs_udp_after_send(struct rs_sock *s, int fd, ssize_t r, int err, const void *name, socklen_t namelen);
/* Before connect: what this thread queued on s goes to the old peer. */
void rs_udp_before_connect(struct rs_sock *s, int fd);

#endif

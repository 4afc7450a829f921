/* tcp_int.h - inside the stream-socket files: the TCP socket (struct
 * rs_tcp), the calls between tcp.c (policy: arming, completions,
 * readiness, shutdown, the hooks of close, detaching, fork),
 * tcp_recvcall.c (the recv family's whole call), tcp_recv.c (the receive
 * path), tcp_send.c (the send family, queuing), tcp_flush.c (submitting
 * the queue, the drain hand-over, send completions), tcpq.c (the queues
 * and the errors kept with them) and block.c (blocking calls).  Layers:
 * tcp.c calls tcp_recvcall.c, tcp_recv.c and tcp_send.c, tcp_recvcall.c
 * calls tcp_recv.c, tcp_send.c calls tcp_flush.c, and they call tcpq.c
 * and block.c; never back up.
 * Every function here runs with the socket's lock held (rs_esock_enter),
 * unless it says otherwise. */
#ifndef RS_TCP_INT_H
#define RS_TCP_INT_H

#include <sys/uio.h>

#include "engine_int.h"

struct rs_rxseg { char *data; uint32_t len, off; int32_t bid; /* -1: heap, -2: RX cache */ };
struct rs_txseg { char *data; uint32_t len; struct rs_chunk *chunk; };

/* Leftover receive data shared across fork (MAP_SHARED, process-shared). */
struct rs_shared_rx {
	atomic_int lock;        /* a spin lock both processes take */
	uint32_t len, off;      /* bytes in data; bytes of them already read */
	int err;                /* an error the engine took from the kernel
				 * before the fork: the first process to ask
				 * for it gets it (rs_rxq_shared_err) */
	char data[];
};

#define RS_TX_IOV 16
/* Polls in a row that may keep a socket's queued sends (tcp.c tx_hold):
 * a program that sends a little before each of many polls waits at most
 * this many for them. */
#define RS_TX_HOLDS 32
#define RS_LINEAR 256

/* What a socket needs once it sends: the sendmsg in flight and the
 * LINEAR_FIRST buffer. */
struct rs_txstate {
	struct iovec iov[RS_TX_IOV]; /* the send in flight's segments */
	struct msghdr msg;      /* the send in flight (its iov above) */
	char linear[RS_LINEAR]; /* a small first send's copy (linear_used) */
};

/* A TCP socket on the engine.  Every field is guarded like the core's
 * [ring/mu] (the owner ring's lock, or the socket's mutex once detached);
 * "hint" fields are also read without it.  Laid out by size (pointers,
 * 32-bit counts, flags) so that an idle armed socket costs as little as
 * possible: 10,000 of them are a benchmark row.  Byte counts are 32-bit:
 * each is bounded by a socket buffer size (an int) times two. */
struct rs_tcp {
	struct rs_esock e;        /* first: the core's part */
	struct rs_rxseg *rx;      /* receive queue: circular array */
	struct rs_txseg *tx;      /* send queue: circular array */
	struct rs_shared_rx *leftover; /* after fork [hint] */
	struct rs_txstate *txs;   /* allocated on the first send: idle sockets
				   * do not carry it */
	struct rs_chunk *txc;     /* TX_CACHE: the socket's own send chunk */
	char *rxc;                /* RX_CACHE: the socket's own receive buffer */
	struct rs_ring *ovf_ring; /* the ring whose overflow slots it uses */
	int rx_err;               /* error to report after queued data [hint] */
	int tx_err;               /* asynchronous send error to report [hint] */
	uint32_t rx_cap, rx_head, rx_cnt; /* rx: slots, first, used */
	uint32_t rx_bytes;        /* bytes queued [hint] */
	uint32_t rx_limit;        /* bound on engine-held data */
	uint32_t rx_bufs;         /* ring buffers held */
	uint32_t ovf_head, ovf_tail; /* overflow chain after the queue array:
				   * buffer id + 1 in ovf_ring's slots; 0: empty */
	uint32_t leftover_map;    /* leftover's mapping, bytes (for munmap) */
	uint32_t tx_cap, tx_head, tx_cnt; /* tx: slots, first, used */
	uint32_t tx_bytes;        /* accepted, not yet completed */
	uint32_t tx_limit;        /* bound on tx_bytes: SO_SNDBUF as the kernel
				   * counts it, else 256 KiB */
	uint32_t tx_room;         /* sk_sndbuf less sk_wmem_queued when last
				   * asked (tcp_send.c, tx_fits), bytes */
	uint32_t tx_mss;          /* TCP_MAXSEG when the room was asked; 0:
				   * ask again (options may have changed) */
	uint64_t tx_acc;          /* bytes accepted since, queued or sent */
	uint32_t inflight_segs;   /* segments covered by the send in flight */
	uint32_t inflight_bytes;  /* bytes of the send in flight */
	uint8_t tx_err_eof;       /* tx_err came after the input's end */
	uint8_t rx_stop;          /* never arm it again (closing) */
	uint8_t throttled;        /* stopped pulling: over the per-socket bound */
	uint8_t rx_direct;        /* bulk reader: no multishot receive, reads go
				   * straight to the kernel, which reports input
				   * [hint] */
	uint8_t rx_starved;       /* its multishot receive ended for want of
				   * buffers (another socket holds them): until
				   * it is armed again, reads go to the kernel,
				   * which reports its input [hint] */
	uint8_t rx_capped;        /* the receive in flight carries a byte cap */
	uint8_t tx_wait;          /* no drain job could take the rest: sends wait
				   * in the ring for room (MSG_WAITALL) */
	uint8_t rx_probation;     /* reads with data left before the multishot
				   * receive is armed (RINGSOCK_ARM_AFTER) */
	uint8_t direct_why;       /* enum rs_direct_why, while rx_direct */
	uint8_t rx_waits;         /* blocking reads in a row that had to wait */
	uint8_t rr_rx, rr_tx;     /* nonblocking reads with data, and sends, in
				   * the current round (a round: reads, then
				   * sends; at most RS_RR_RUN each) */
	uint8_t rr_rounds;        /* rounds in a row of one read and one send
				   * (RS_DIRECT_RR: in a row of more) */
	uint16_t direct_reads;    /* reads through the kernel that count toward
				   * the engine's receive again (see
				   * rs_tcp_direct_read) */
	uint8_t wt_shift;         /* a waiting reader's retries so far that the
				   * waits sent back (0..RS_WAITER_SHIFT_MAX):
				   * the next comes after RS_WAITER_RETRY <<
				   * wt_shift blocking reads */
	uint8_t wt_retried;       /* the engine's receive is back for a retry
				   * (1024 << wt_shift blocking reads) */
	uint8_t lone_reads;       /* a waiting reader's kernel reads in a row,
				   * each after exactly one send, the only
				   * socket its ring serves (tcp_recvcall.c
				   * lone) */
	uint8_t send_inflight;    /* one send in flight at a time */
	uint8_t rx_eof;           /* the input ended (the peer's FIN read) */
	uint8_t shut_wr;          /* shutdown(SHUT_WR) done */
	uint8_t shut_rd;          /* shutdown(SHUT_RD) done */
	uint8_t epipe_pending;    /* the peer closed: next send gets EPIPE */
	uint8_t linear_used;      /* txs->linear holds queued bytes */
	uint8_t sent;             /* a send has been made (the first goes to the
				   * kernel: errors from before arming) */
	uint8_t tx_new;           /* bytes were queued since the last poll/select
				   * that asked for POLLOUT, or the last submit
				   * (tx_hold) */
	uint8_t tx_holds;         /* polls that kept the queued bytes since the
				   * last submit (count, up to RS_TX_HOLDS) */
	uint8_t tx_bulk;          /* the last send went to the kernel and was
				   * large (RINGSOCK_DIRECT_THRESHOLD) or only
				   * partly taken: the next one goes there too */
	uint8_t rxc_used;         /* rxc holds queued bytes (RX_CACHE) */
	uint8_t zc;               /* zero-copy sends: RS_TZC_* (decided once) */
	uint8_t inflight_zc;      /* the send in flight is zero-copy */
	uint8_t self_peer;        /* 0 not asked; 1 the peer may be this very
				   * process (rs_sock_self_peer); 2 not */
	uint8_t tx_unsure;        /* the kernel cannot say how much room it has
				   * (SO_MEMINFO refused, TCP_NOTSENT_LOWAT):
				   * every send is the kernel's */
};
enum { RS_TZC_UNKNOWN, RS_TZC_ON, RS_TZC_OFF };

/* Why a socket's reads go through the kernel (rx_direct; rs_tcp_go_direct). */
enum rs_direct_why {
	RS_DIRECT_NONE,
	RS_DIRECT_PROBATION, /* new and nonblocking: RINGSOCK_ARM_AFTER reads first */
	RS_DIRECT_RR,        /* an event loop's request-response connection:
			      * one read, one send per round (rs_tcp_rr_read):
			      * sends go to the kernel too */
	RS_DIRECT_ALONE,     /* its thread serves one socket per wake-up (struct
			      * rs_ring: alone): sends go to the kernel too */
	RS_DIRECT_WAITING,   /* a blocking reader that waits for every read */
	RS_DIRECT_BULK,      /* reads of RINGSOCK_DIRECT_THRESHOLD bytes or more */
	RS_DIRECT_SHARED,    /* open in another process too (fork, spawn): for good */
	RS_DIRECT_SHUT,      /* shut down for reading: for good */
};

static inline struct rs_tcp *rs_tcp_of(struct rs_esock *e)
{
	return (struct rs_tcp *)e;
}

/* ---- tcp_recv.c: the receive path ------------------------------------------ */
void rs_tcp_submit_recv(struct rs_ring *r, struct rs_tcp *t);
static inline void rs_tcp_cancel_recv(struct rs_ring *r, struct rs_tcp *t)
{
	rs_esock_cancel_recv(r, &t->e);
}
/* From now on the kernel reports the socket's input and reads go to it,
 * for why (enum rs_direct_why). */
void rs_tcp_go_direct(struct rs_ring *r, struct rs_tcp *t, int why);
void rs_tcp_recv_done(struct rs_ring *r, struct rs_tcp *t, struct io_uring_cqe *c);
/* Reads go through the kernel for a reason that can pass (probation, a
 * waiting reader, a bulk reader): count this read, and give the socket
 * back to the engine's receive once its reads say so. */
void rs_tcp_direct_read(struct rs_ring *r, struct rs_tcp *t, size_t want, int nonblocking, long n);
/* A nonblocking read with data, a nonblocking send: count the rounds of a
 * request-response connection (RS_DIRECT_RR), and switch it. */
void rs_tcp_rr_read(struct rs_tcp *t);
void rs_tcp_rr_sent(struct rs_tcp *t);
/* The recv family: -errno or bytes.  flags are MSG_* flags. */
ssize_t rs_tcp_recv(struct rs_tcp *t, const struct iovec *iov, int iovcnt, int flags);
/* The kernel's view of fd, asked without the lock too: the next byte to
 * read is the urgent mark; a pending error comes before any byte in its
 * queue. */
int rs_tcp_at_mark(int fd);
int rs_tcp_error_next(int fd);

/* ---- tcp_send.c, tcp_flush.c: the send path ---------------------------------- */
void rs_tcp_submit_tx(struct rs_ring *r, struct rs_tcp *t);
void rs_tcp_send_done(struct rs_ring *r, struct rs_tcp *t, struct io_uring_cqe *c);
ssize_t rs_tcp_send(struct rs_tcp *t, const struct iovec *iov, int iovcnt, int flags);
size_t rs_tcp_flush_direct(struct rs_tcp *t); /* write queued sends with syscalls */
void rs_tcp_flush_queued(struct rs_ring *r, struct rs_tcp *t); /* the watchdog's */
void rs_tcp_drain_end(struct rs_tcp *t);     /* its drain job is done */
void rs_tcp_tx_submit_now(struct rs_tcp *t); /* queued bytes to the kernel */
void rs_tcp_sync_tx(struct rs_tcp *t);       /* ... and a drain's too */
int rs_tcp_tx_idle(void *t);                 /* nothing queued nor in flight */

/* ---- tcpq.c: the receive and send queues ---------------------------------- */
/* Room for one more segment at the end of the queue array (-ENOMEM). */
int rs_rxq_room(struct rs_tcp *t);
int rs_txq_room(struct rs_tcp *t);
/* Queue len received bytes: bid >= 0 is buffer bid of ring r (never fails
 * but when the process is dying: the overflow slots take it); -2 the
 * socket's RX_CACHE buffer, for which the caller made room. */
int rs_rxq_push(struct rs_tcp *t, struct rs_ring *r, char *data, uint32_t len, int32_t bid);
/* Copy (MSG_PEEK: without consuming; MSG_TRUNC: discard) up to want bytes:
 * the fork's leftover first, then the queue.  Returns the bytes. */
size_t rs_rxq_copy(struct rs_tcp *t, const struct iovec *iov, int n, size_t want, int flags);
/* Bytes held: the fork's leftover and the queue (hot: inline). */
static inline size_t rs_rxq_held(struct rs_tcp *t)
{
	size_t n = t->rx_bytes;
	if (t->leftover)
		n += t->leftover->len - t->leftover->off;
	return n;
}
int rs_rxq_leftover_empty(struct rs_tcp *t); /* no leftover bytes nor error */
/* An error a fork left shared becomes this process's rx_err, if no other
 * process took it first. */
void rs_rxq_shared_err(struct rs_tcp *t);
void rs_rxq_drop_all(struct rs_tcp *t);   /* buffers back to the ring */
void rs_rxq_to_heap(struct rs_tcp *t);    /* ring buffers copied out: the
					   * socket leaves its ring */
static inline struct rs_txseg *rs_txq_at(struct rs_tcp *t, uint32_t i)
{
	return &t->tx[(t->tx_head + i) & (t->tx_cap - 1)];
}
/* The first n bytes reached the kernel: their slices go back to r's pool. */
void rs_txq_consume(struct rs_tcp *t, size_t n, struct rs_ring *r);
void rs_txq_drop_all(struct rs_tcp *t, struct rs_ring *r);
#ifdef RS_DEBUG
void rs_tcpq_check(struct rs_tcp *t); /* the counts agree with the queues */
#else
#define rs_tcpq_check(t) ((void)0)
#endif
/* The errors kept with the queues: */
/* A receive's error (rx_err) taken: the stream then reads as ended and
 * sends fail with EPIPE. */
int rs_tcp_take_error(struct rs_tcp *t);
/* An asynchronous send failed with e (a reset the kernel gave our
 * completion): kept for the program's next call. */
void rs_tcp_set_tx_err(struct rs_tcp *t, int e);

/* The program's calls (the kind's table, tcp.c; sockcall.c's rs_sock_*):
 * -errno, bytes, or RS_PASS; each takes the socket's lock itself.  The
 * recv family's is tcp_recvcall.c's, the send family's tcp_send.c's. */
ssize_t rs_tcp_recv_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags);
ssize_t rs_tcp_send_call(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags);
/* The SO_RCVLOWAT to give the kernel for the application's lowat: lowered
 * by the bytes the engine still holds (the socket has left the engine),
 * so the kernel's readiness counts them. */
int rs_tcp_kernel_lowat(struct rs_sock *s, int lowat);

#endif

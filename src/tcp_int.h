/* tcp_int.h - shared by the stream-socket files (tcp.c, tcpq.c, block.c):
 * the socket's queues and the blocking-call machinery.  Every function runs with the socket's lock held
 * (rs_tcp_enter). */
#ifndef RS_TCP_INT_H
#define RS_TCP_INT_H

#include <sys/uio.h>

#include "engine.h"

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
size_t rs_iov_total(const struct iovec *iov, int n);

/* ---- block.c: blocking calls ------------------------------------------------ */
/* A private copy of an iovec array that can be advanced past bytes done. */
struct iov_cur {
	struct iovec *v;
	int n;
	struct iovec *heap;
};
/* The deadline of a blocking call from SO_RCVTIMEO (rx) or SO_SNDTIMEO
 * (CLOCK_MONOTONIC ns; 0: none). */
int64_t rs_call_deadline(struct rs_sock *s, int fd, int rx);
/* After a wait: 0 to look again, -EAGAIN (timed out) or -EINTR. */
int rs_wait_result(int e, int64_t deadline, int partial);
/* Sleep in t's owner ring (this thread's) until something happens;
 * called locked, returns unlocked. */
int rs_block_in_ring(struct rs_tcp *t, int64_t deadline, int partial);
/* Wait a little on fd (a socket in hand-over); no lock held. */
int rs_block_on_fd(int fd, short ev, int64_t deadline, int partial);
/* A blocking kernel call came back short for the ring's own task work. */
int rs_short_by_ring(int64_t deadline);
int rs_iov_cur_skip(struct iov_cur *c, const struct iovec *iov, int n, size_t k);
/* Bytes then an error: keep an asynchronous error for the next call. */
void rs_keep_error(struct rs_sock *s, size_t done, ssize_t r);
/* ... and take it (0: none). */
int rs_kept_error(struct rs_sock *s);
/* A blocking call's result: bytes done before an error or the end count. */
ssize_t rs_with_done(size_t done, ssize_t r);

#endif

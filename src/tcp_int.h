/* tcp_int.h - shared by the stream-socket files (tcp.c, tcpq.c): the
 * socket's queues.  Every function runs with the socket's lock held
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
size_t rs_rxq_held(struct rs_tcp *t);     /* bytes held: leftover + queue */
int rs_rxq_leftover_empty(struct rs_tcp *t); /* no leftover bytes nor error */
/* An error a fork left shared becomes this process's rx_err, if no other
 * process took it first. */
void rs_rxq_shared_err(struct rs_tcp *t);
void rs_rxq_drop_all(struct rs_tcp *t);   /* buffers back to the ring */
void rs_rxq_to_heap(struct rs_tcp *t);    /* ring buffers copied out: the
					   * socket leaves its ring */
struct rs_txseg *rs_txq_at(struct rs_tcp *t, uint32_t i);
/* The first n bytes reached the kernel: their slices go back to r's pool. */
void rs_txq_consume(struct rs_tcp *t, size_t n, struct rs_ring *r);
void rs_txq_drop_all(struct rs_tcp *t, struct rs_ring *r);
size_t rs_iov_total(const struct iovec *iov, int n);

#endif

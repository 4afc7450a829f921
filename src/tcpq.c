/* tcpq.c - a stream socket's queues.
 *
 * Receive queue: a circular array of segments, each a ring buffer a
 * multishot receive filled (bid >= 0), the socket's RX_CACHE buffer (-2)
 * or a heap copy (-1, made when the socket left its ring).  A ring buffer
 * whose data is out of the kernel always has a place: when the array
 * cannot grow (out of memory), it goes through the ring's overflow slot for
 * that buffer (struct rs_bufovf), and those after it follow it there until
 * the array can take them again.  After a fork, what the engine held is in
 * a shared leftover (struct rs_shared_rx) both processes read from once,
 * with the error the engine had taken, if any.
 *
 * Send queue: a circular array of frag slices accepted and not yet
 * completed by the kernel.
 *
 * And the errors kept with them: one a receive took (rx_err, reported
 * after the queued data) and one a send completion took (tx_err).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "engine_int.h"
#include "tcp_int.h"

static int grow(void **arr, uint32_t *cap, uint32_t head, uint32_t cnt, size_t elt)
{
	uint32_t ncap = *cap ? *cap * 2 : 16;
	char *n = malloc(ncap * elt);
	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < cnt; i++)
		memcpy(n + i * elt, (char *)*arr + ((head + i) & (*cap - 1)) * elt, elt);
	free(*arr);
	*arr = n;
	*cap = ncap;
	return 0;
}

/* Room for one more element at the end of a circular array. */
static int make_room(void **arr, uint32_t *cap, uint32_t *head, uint32_t cnt, size_t elt)
{
	if (cnt < *cap)
		return 0;
	if (grow(arr, cap, *head, cnt, elt) < 0)
		return -ENOMEM;
	*head = 0;
	return 0;
}

static struct rs_rxseg *rx_at(struct rs_tcp *t, uint32_t i)
{
	return &t->rx[(t->rx_head + i) & (t->rx_cap - 1)];
}

/* Room for one more segment in the receive queue array. */
int rs_rxq_room(struct rs_tcp *t)
{
	if (t->rx_cnt == t->rx_cap && rs_fault(RS_FAULT_RX_NOMEM))
		return -ENOMEM;
	return make_room((void **)&t->rx, &t->rx_cap, &t->rx_head, t->rx_cnt, sizeof(*t->rx));
}

/* Room for one more segment in the send queue array. */
int rs_txq_room(struct rs_tcp *t)
{
	return make_room((void **)&t->tx, &t->tx_cap, &t->tx_head, t->tx_cnt, sizeof(*t->tx));
}

/* Overflow: a ring buffer whose data is out of the kernel must be queued
 * even when the array cannot grow (out of memory).  It is linked through
 * the ring's slot for that buffer (struct rs_bufovf), after the array; the
 * buffers after it follow it there, in order, until the array can take
 * them again (rx_unspill, at the next push and before each read). */
static struct rs_bufovf *ovf_slot(struct rs_tcp *t, uint32_t id1)
{
	return &t->ovf_ring->buf.ovf[id1 - 1];
}

static void ovf_append(struct rs_tcp *t, struct rs_ring *r, unsigned bid, uint32_t len)
{
	if (!t->ovf_head)
		t->ovf_ring = r;
	r->buf.ovf[bid] = (struct rs_bufovf){ len, 0, 0 };
	if (t->ovf_tail)
		ovf_slot(t, t->ovf_tail)->next = bid + 1;
	else
		t->ovf_head = bid + 1;
	t->ovf_tail = bid + 1;
	rs_stat_add(RS_C_RX_OVERFLOWS, 1);
}

/* The chain's head buffer is read: give it back. */
static void ovf_pop(struct rs_tcp *t)
{
	uint32_t id1 = t->ovf_head;
	t->ovf_head = ovf_slot(t, id1)->next;
	if (!t->ovf_head)
		t->ovf_tail = 0;
	if (t->e.owner == t->ovf_ring) /* else lost with a failed copy (out of memory) */
		rs_buf_release(t->ovf_ring, id1 - 1);
	t->rx_bufs--;
}

static void rx_unspill(struct rs_tcp *t)
{
	while (t->ovf_head && rs_rxq_room(t) == 0) {
		uint32_t id1 = t->ovf_head;
		struct rs_bufovf *o = ovf_slot(t, id1);
		struct rs_rxseg *g = rx_at(t, t->rx_cnt++);
		g->data = rs_buf_addr(&t->ovf_ring->buf, id1 - 1);
		g->len = o->len;
		g->off = o->off;
		g->bid = (int32_t)(id1 - 1);
		t->ovf_head = o->next;
		if (!t->ovf_head)
			t->ovf_tail = 0;
	}
}

/* Queue received data: bid >= 0 is buffer bid of ring r, which cannot
 * fail (the overflow chain takes it); -2 is the socket's RX_CACHE buffer,
 * for which the caller made room first. */
int rs_rxq_push(struct rs_tcp *t, struct rs_ring *r, char *data, uint32_t len, int32_t bid)
{
	if (rs_unlikely(__atomic_load_n(&rs_dying, __ATOMIC_RELAXED)))
		return -ENOMEM; /* nobody will read it (engine.c die_flush) */
	if (t->ovf_head)
		rx_unspill(t);
	if (t->ovf_head || rs_rxq_room(t) < 0) {
		if (bid < 0)
			return -ENOMEM;
		ovf_append(t, r, (unsigned)bid, len);
	} else {
		struct rs_rxseg *g = rx_at(t, t->rx_cnt++);
		g->data = data;
		g->len = len;
		g->off = 0;
		g->bid = bid;
	}
	RS_STORE(t->rx_bytes, t->rx_bytes + len);
	if (bid >= 0)
		t->rx_bufs++;
	return 0;
}

/* Drop the head receive segment (fully read). */
static void rx_pop(struct rs_tcp *t)
{
	struct rs_rxseg *g = rx_at(t, 0);
	if (g->bid >= 0) {
		if (t->e.owner) /* else lost with a failed copy (out of memory) */
			rs_buf_release(t->e.owner, (unsigned)g->bid);
		t->rx_bufs--;
	} else if (g->bid == -2) {
		t->rxc_used = 0;
	} else {
		free(g->data);
	}
	t->rx_head = (t->rx_head + 1) & (t->rx_cap - 1);
	t->rx_cnt--;
}

void rs_rxq_drop_all(struct rs_tcp *t)
{
	while (t->rx_cnt)
		rx_pop(t);
	while (t->ovf_head)
		ovf_pop(t);
	RS_STORE(t->rx_bytes, 0);
}

/* Copy ring-buffer segments to the heap, so the ring can go. */
void rs_rxq_to_heap(struct rs_tcp *t)
{
	rx_unspill(t);
	if (t->ovf_head)
		rs_warn("out of memory: received data stays in a buffer of a thread's ring");
	for (uint32_t i = 0; i < t->rx_cnt; i++) {
		struct rs_rxseg *g = rx_at(t, i);
		if (g->bid < 0)
			continue;
		uint32_t n = g->len - g->off;
		char *c = malloc(n ? n : 1);
		if (!c)
			continue; /* keep the buffer: the ring then cannot be freed; see ring_gone */
		memcpy(c, g->data + g->off, n);
		rs_buf_release(t->e.owner, (unsigned)g->bid);
		t->rx_bufs--;
		g->data = c;
		g->len = n;
		g->off = 0;
		g->bid = -1;
	}
}

static void tx_release_seg(struct rs_tcp *t, struct rs_txseg *g, struct rs_ring *r)
{
	if (g->chunk)
		rs_frag_release(&r->frag, g->chunk);
	else
		t->linear_used = 0; /* the socket's linear buffer (data may have moved on) */
}

void rs_txq_drop_all(struct rs_tcp *t, struct rs_ring *r)
{
	while (t->tx_cnt) {
		tx_release_seg(t, rs_txq_at(t, 0), r);
		t->tx_head = (t->tx_head + 1) & (t->tx_cap - 1);
		t->tx_cnt--;
	}
	t->tx_bytes = 0;
}

/* The first n bytes of the send queue have reached the kernel. */
void rs_txq_consume(struct rs_tcp *t, size_t n, struct rs_ring *r)
{
	t->tx_bytes -= n;
	while (n && t->tx_cnt) {
		struct rs_txseg *g = rs_txq_at(t, 0);
		if (n < g->len) {
			g->data += n;
			g->len -= (uint32_t)n;
			return;
		}
		n -= g->len;
		tx_release_seg(t, g, r);
		t->tx_head = (t->tx_head + 1) & (t->tx_cap - 1);
		t->tx_cnt--;
	}
}

/* Copy up to want bytes from src into the iovec at offset *pos. */
static void iov_put_slow(const struct iovec *iov, int n, size_t *pos, const char *src, size_t len)
{
	size_t skip = *pos;
	for (int i = 0; i < n && len; i++) {
		if (skip >= iov[i].iov_len) {
			skip -= iov[i].iov_len;
			continue;
		}
		size_t room = iov[i].iov_len - skip, k = len < room ? len : room;
		if (iov[i].iov_base)
			memcpy((char *)iov[i].iov_base + skip, src, k);
		src += k;
		len -= k;
		*pos += k;
		skip = 0;
	}
}

/* (the one-buffer call with room, every read(): inline) */
static inline void iov_put(const struct iovec *iov, int n, size_t *pos, const char *src, size_t len)
{
	if (n == 1 && iov->iov_base && len <= iov->iov_len - *pos) {
		memcpy((char *)iov->iov_base + *pos, src, len);
		*pos += len;
		return;
	}
	iov_put_slow(iov, n, pos, src, len);
}

static void spin_lock(atomic_int *l)
{
	int z = 0;
	while (!atomic_compare_exchange_weak(l, &z, 1))
		z = 0;
}

/* Bytes from the leftover (shared after fork), then the queue. */
size_t rs_rxq_copy(struct rs_tcp *t, const struct iovec *iov, int n, size_t want, int flags)
{
	size_t pos = 0;
	int peek = flags & MSG_PEEK, trunc = flags & MSG_TRUNC;
	if (t->leftover) {
		struct rs_shared_rx *l = t->leftover;
		spin_lock(&l->lock);
		size_t avail = l->len - l->off, k = avail < want ? avail : want;
		if (!trunc)
			iov_put(iov, n, &pos, l->data + l->off, k);
		else
			pos += k;
		if (!peek)
			l->off += (uint32_t)k;
		atomic_store(&l->lock, 0);
	}
	if (t->ovf_head && !peek)
		rx_unspill(t);
	uint32_t i = 0;
	while (pos < want && i < t->rx_cnt) {
		struct rs_rxseg *g = rx_at(t, i);
		size_t avail = g->len - g->off;
		size_t k = avail < want - pos ? avail : want - pos;
		if (!trunc)
			iov_put(iov, n, &pos, g->data + g->off, k);
		else
			pos += k;
		if (peek) {
			i++;
			continue;
		}
		g->off += (uint32_t)k;
		RS_STORE(t->rx_bytes, t->rx_bytes - k);
		if (g->off == g->len)
			rx_pop(t);
	}
	for (uint32_t id1 = t->ovf_head; pos < want && id1;) {
		struct rs_bufovf *o = ovf_slot(t, id1);
		size_t avail = o->len - o->off;
		size_t k = avail < want - pos ? avail : want - pos;
		if (!trunc)
			iov_put(iov, n, &pos, rs_buf_addr(&t->ovf_ring->buf, id1 - 1) + o->off, k);
		else
			pos += k;
		if (peek) {
			id1 = o->next;
			continue;
		}
		o->off += (uint32_t)k;
		RS_STORE(t->rx_bytes, t->rx_bytes - k);
		if (o->off == o->len)
			ovf_pop(t);
		id1 = t->ovf_head;
	}
	return pos;
}

int rs_rxq_leftover_empty(struct rs_tcp *t)
{
	return !t->leftover || (t->leftover->off >= t->leftover->len && !t->leftover->err);
}

/* An error the engine took from the kernel before a fork is one error of
 * the socket, as the kernel has it: whichever process's call would have
 * taken it from the kernel (a read with nothing queued, a send,
 * SO_ERROR) takes it; the other then finds the socket as the kernel left
 * it after the error (ended). */
void rs_rxq_shared_err(struct rs_tcp *t)
{
	struct rs_shared_rx *l = t->leftover;
	if (rs_likely(!l) || !__atomic_load_n(&l->err, __ATOMIC_RELAXED) || t->rx_err)
		return;
	spin_lock(&l->lock);
	int e = l->err;
	l->err = 0;
	atomic_store(&l->lock, 0);
	if (e)
		RS_STORE(t->rx_err, e);
}

/* ---- the errors kept with the queues ---------------------------------------- */

int rs_tcp_take_error(struct rs_tcp *t)
{
	int e = t->rx_err;
	RS_STORE(t->rx_err, 0);
	t->rx_eof = 1;        /* after a reset the stream reads as ended */
	t->epipe_pending = 1; /* and writes fail with EPIPE */
	return e;
}

/* An asynchronous send failed: the kernel's pending error (a reset) went
 * to our completion, where without us the program's next call would have
 * taken it, a read included, unless the peer's FIN came first (a read
 * then returns 0 and leaves the error to the next send). */
void rs_tcp_set_tx_err(struct rs_tcp *t, int e)
{
	if (t->tx_err)
		return;
	RS_STORE(t->tx_err, e);
	t->tx_err_eof = t->rx_eof;
}


#ifdef RS_DEBUG
/* Debug builds: the counts agree with the queues, and t's lock is held. */
void rs_tcpq_check(struct rs_tcp *t)
{
	rs_assert_esock_locked(&t->e);
	rs_assert(t->rx_cnt <= t->rx_cap && t->tx_cnt <= t->tx_cap);
	uint64_t bytes = 0;
	uint32_t bufs = 0;
	for (uint32_t i = 0; i < t->rx_cnt; i++) {
		struct rs_rxseg *g = rx_at(t, i);
		rs_assert(g->off <= g->len);
		bytes += g->len - g->off;
		bufs += g->bid >= 0;
	}
	for (uint32_t id1 = t->ovf_head; id1; id1 = ovf_slot(t, id1)->next, bufs++)
		bytes += ovf_slot(t, id1)->len - ovf_slot(t, id1)->off;
	rs_assert(bytes == t->rx_bytes && bufs == t->rx_bufs);
	bytes = 0;
	for (uint32_t i = 0; i < t->tx_cnt; i++)
		bytes += rs_txq_at(t, i)->len;
	rs_assert(bytes == t->tx_bytes);
	rs_assert(t->e.ops_inflight >= (uint32_t)t->e.recv_armed + t->send_inflight);
	rs_assert(!t->e.recv_armed || t->e.owner);
}
#endif

/* Unit tests for a TCP socket's queues (src/tcpq.c): the receive queue of
 * ring buffers (filled by the kernel from a real io_uring's provided-buffer
 * ring, as a multishot receive would), RX_CACHE and heap segments, the
 * overflow chain through the ring's slots when the queue array cannot grow
 * (the engine's RS_FAULT_RX_NOMEM hook), the fork's leftover read first;
 * the send queue of frag slices; the errors kept with them.
 *
 * The invariant, checked after every step: the bytes read come out in the
 * order they went in, none lost or doubled, across partial reads, peeks,
 * MSG_TRUNC and overflow; rx_bytes is what is still to read, rx_bufs the
 * ring buffers queued, which are all the ring's held buffers (every buffer
 * read is given back), and the ring's posted + pending + held == count; in
 * debug builds (RINGSOCK_DEBUG, the sanitizer builds) rs_tcpq_check too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "engine_int.h"
#include "tcp_int.h"

#define PBUF_STATUS 26 /* IORING_REGISTER_PBUF_STATUS (kernel 6.8) */
struct pbuf_status {
	uint32_t buf_group;
	uint32_t head;
	uint32_t resv[8];
};

/* The engine's fault hook (engine_int.h): the receive queue array cannot grow. */
static int rx_nomem;
int ringsock_test_fault(int site)
{
	return site == RS_FAULT_RX_NOMEM && rx_nomem;
}

#define SIZE 1024
#define STREAM (1 << 22)

struct ctx {
	struct rs_ring *r;
	int sv[2];
	struct rs_tcp t;
	size_t wpos, rpos; /* the stream: bytes pushed, bytes read */
	size_t lpos;       /* its first lpos bytes are the fork's leftover */
};
static int refused;

static unsigned char byte_at(size_t pos)
{
	return (unsigned char)(pos * 7 + pos / 251);
}

static int setup(void **state)
{
	static struct ctx c;
	memset(&c, 0, sizeof(c));
	*state = &c;
	rx_nomem = 0;
	refused = 0;
	assert_int_equal(rs_config_parse(&rs_rt.cfg, NULL, NULL, NULL), 0);
	rs_rt.cfg.v[RS_K_BUF_SIZE] = SIZE;
	rs_rt.cfg.v[RS_K_BUF_COUNT] = 64;
	rs_rt.cfg.v[RS_K_BUF_COUNT_MAX] = 64;
	rs_rt.cfg.v[RS_K_RECLAIM_BATCH] = 4;
	c.r = calloc(1, sizeof(*c.r));
	assert_non_null(c.r);
	rs_lock_init(&c.r->lock);
	if (io_uring_queue_init(64, &c.r->ring, 0) < 0) {
		refused = 1;
		return 0;
	}
	rs_ring_lock(c.r);
	if (rs_bufring_setup(c.r, c.r->ring.features) < 0) {
		refused = 1;
		return 0;
	}
	struct pbuf_status st = { .buf_group = RS_BGID_TCP };
	if (syscall(__NR_io_uring_register, c.r->ring.ring_fd, PBUF_STATUS, &st, 1) < 0)
		refused = 1;
	c.r->frag.chunk_size = 4096;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, c.sv), 0);
	c.t.e.owner = c.r;
	c.t.rx_limit = 1 << 20;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	if (c->r->ring.ring_fd > 0) {
		rs_rxq_drop_all(&c->t);
		rs_txq_drop_all(&c->t, c->r);
		free(c->t.rx);
		free(c->t.tx);
		free(c->t.rxc);
		rs_frag_pool_destroy(&c->r->frag);
		rs_bufring_destroy(c->r);
		rs_ring_unlock(c->r);
		io_uring_queue_exit(&c->r->ring);
		close(c->sv[0]);
		close(c->sv[1]);
	}
	free(c->r);
	return 0;
}

#define SKIP_IF_REFUSED() \
	do { \
		if (refused) { \
			print_message("io_uring or provided buffer rings refused by the kernel\n"); \
			skip(); \
		} \
	} while (0)

static void check(struct ctx *c)
{
	struct rs_tcp *t = &c->t;
	struct rs_bufring *b = &c->r->buf;
	rs_tcpq_check(t);
	size_t queued_from = c->rpos > c->lpos ? c->rpos : c->lpos;
	assert_int_equal(t->rx_bytes, c->wpos - queued_from);
	assert_int_equal(rs_rxq_held(t), c->wpos - c->rpos);
	assert_int_equal(b->held, t->rx_bufs);
	struct pbuf_status st = { .buf_group = RS_BGID_TCP };
	assert_int_equal(syscall(__NR_io_uring_register, c->r->ring.ring_fd, PBUF_STATUS, &st, 1), 0);
	assert_int_equal((uint16_t)(b->br->tail - st.head) + b->pending + b->held, b->count);
	/* what the queue holds, walked: array then overflow chain */
	uint64_t bytes = 0;
	uint32_t bufs = 0;
	for (uint32_t i = 0; i < t->rx_cnt; i++) {
		struct rs_rxseg *g = &t->rx[(t->rx_head + i) & (t->rx_cap - 1)];
		assert_true(g->off <= g->len);
		bytes += g->len - g->off;
		bufs += g->bid >= 0;
	}
	for (uint32_t id1 = t->ovf_head; id1; id1 = b->ovf[id1 - 1].next, bufs++)
		bytes += b->ovf[id1 - 1].len - b->ovf[id1 - 1].off;
	assert_int_equal(bytes, t->rx_bytes);
	assert_int_equal(bufs, t->rx_bufs);
}

/* n (<= SIZE) next bytes of the stream into a ring buffer by the kernel,
 * queued as tcp_recv.c does.  0, or -ENOBUFS when the ring has none posted. */
static int push_ring(struct ctx *c, uint32_t n)
{
	unsigned char out[SIZE];
	for (uint32_t i = 0; i < n; i++)
		out[i] = byte_at(c->wpos + i);
	assert_int_equal(send(c->sv[1], out, n, 0), (ssize_t)n);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->r->ring);
	io_uring_prep_recv(sqe, c->sv[0], NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = RS_BGID_TCP;
	assert_int_equal(io_uring_submit(&c->r->ring), 1);
	struct io_uring_cqe *cqe;
	assert_int_equal(io_uring_wait_cqe(&c->r->ring, &cqe), 0);
	int res = cqe->res;
	unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
	io_uring_cqe_seen(&c->r->ring, cqe);
	if (res == -ENOBUFS) {
		char sink[SIZE];
		assert_int_equal(recv(c->sv[0], sink, n, 0), (ssize_t)n);
		return res;
	}
	assert_int_equal(res, (int)n);
	c->r->buf.held++;
	assert_int_equal(rs_rxq_push(&c->t, c->r, rs_buf_addr(&c->r->buf, bid), n, (int32_t)bid), 0);
	c->wpos += n;
	return 0;
}

/* n next bytes into the socket's RX_CACHE buffer (the caller of
 * rs_rxq_push makes room first, as tcp_recv.c does); 0 or -1 (busy, no room). */
static int push_rxc(struct ctx *c, uint32_t n)
{
	struct rs_tcp *t = &c->t;
	if (t->rxc_used || t->ovf_head || rs_rxq_room(t) < 0)
		return -1;
	if (!t->rxc)
		t->rxc = malloc(SIZE);
	for (uint32_t i = 0; i < n; i++)
		t->rxc[i] = (char)byte_at(c->wpos + i);
	assert_int_equal(rs_rxq_push(t, c->r, t->rxc, n, -2), 0);
	t->rxc_used = 1;
	c->wpos += n;
	return 0;
}

/* Read up to want bytes with flags into a buffer split over three iovecs;
 * what comes out must be the stream's next bytes, and as many as held. */
static void read_some(struct ctx *c, size_t want, int flags, unsigned split)
{
	static unsigned char buf[1 << 16];
	assert_true(want <= sizeof(buf));
	memset(buf, 0xee, want);
	size_t a = want ? split % (want + 1) : 0, bb = want - a ? (split / 7) % (want - a + 1) : 0;
	struct iovec iov[3] = { { buf, a }, { buf + a, bb }, { buf + a + bb, want - a - bb } };
	size_t before = rs_rxq_held(&c->t);
	size_t k = rs_rxq_copy(&c->t, iov, 3, want, flags);
	assert_int_equal(k, want < before ? want : before);
	if (!(flags & MSG_TRUNC))
		for (size_t i = 0; i < k; i++)
			if (buf[i] != byte_at(c->rpos + i))
				fail_msg("byte %zu of the stream (read at %zu, +%zu): %u, not %u", c->rpos + i,
					 c->rpos, i, buf[i], byte_at(c->rpos + i));
	if (!(flags & MSG_PEEK))
		c->rpos += k;
	else
		assert_int_equal(rs_rxq_held(&c->t), before);
}

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* Random pushes (ring buffers of 1..SIZE bytes, the RX_CACHE buffer) and
 * reads (plain, MSG_PEEK, MSG_TRUNC; 0..3000 bytes over three iovecs);
 * with fault, the queue array is refused growth throughout, so buffers
 * go through the overflow chain and come back into the array.  check()
 * after every step. */
static void run_random(struct ctx *c, unsigned seed, int steps, int fault)
{
	int spilled = 0; /* steps that ended with an overflow chain */
	rx_nomem = fault; /* the array keeps the size it has */
	for (int i = 0; i < steps; i++) {
		unsigned x = rnd(&seed) % 100;
		if (x < (fault ? 55u : 45u)) {
			if (push_ring(c, 1 + rnd(&seed) % SIZE) == -ENOBUFS)
				rs_buf_flush(c->r); /* as the ring does before it enters */
		} else if (x < 50) {
			push_rxc(c, 1 + rnd(&seed) % SIZE);
		} else {
			unsigned f = rnd(&seed) % 10;
			int flags = f < 2 ? MSG_PEEK : f < 3 ? MSG_TRUNC : 0;
			/* (with fault, shorter reads: the queue fills the array) */
			read_some(c, rnd(&seed) % (fault ? 600 : 3000), flags, rnd(&seed));
		}
		check(c);
		spilled += c->t.ovf_head != 0;
	}
	print_message("%d of %d steps ended with an overflow chain\n", spilled, steps);
	if (fault) /* the chain was really used */
		assert_true(spilled > steps / 10);
	rx_nomem = 0;
	read_some(c, sizeof(char[1 << 16]), 0, 0);
	assert_int_equal(c->rpos, c->wpos);
	assert_int_equal(c->t.rx_bufs, 0);
	check(c);
}

/* Bytes in == bytes out, in order, across partial reads, peeks and
 * MSG_TRUNC, with ring buffers and the RX_CACHE buffer mixed; every buffer
 * read goes back to the ring. */
static void test_rx_stream(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	run_random(c, 1, 4000, 0);
	assert_int_equal(c->t.rxc_used, 0);
}

/* The overflow chain: with the queue array full and refused growth,
 * buffers still queue (in the ring's overflow slots), peeks and reads see
 * them in order after the array, and they move back into the array once
 * it has room; then the same at random. */
static void test_rx_overflow(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	struct rs_tcp *t = &c->t;
	for (int i = 0; i < 16; i++) {
		assert_int_equal(push_ring(c, 100 + i), 0);
		check(c);
	}
	assert_int_equal(t->rx_cnt, t->rx_cap);
	rx_nomem = 1;
	for (int i = 0; i < 10; i++) {
		assert_int_equal(push_ring(c, 500 + i), 0);
		check(c);
	}
	assert_int_equal(t->rx_cnt, 16);
	assert_int_not_equal(t->ovf_head, 0);
	assert_int_equal(push_rxc(c, 10), -1); /* the RX_CACHE buffer needs room */
	read_some(c, 4000, MSG_PEEK, 5); /* across the array and the chain */
	check(c);
	read_some(c, 100 + 101 + 50, 0, 3); /* two segments and a half */
	check(c);
	/* still refused: nothing has moved yet; the next read moves two */
	assert_int_equal(t->rx_cnt, 14);
	read_some(c, 10, 0, 1);
	check(c);
	assert_int_equal(t->rx_cnt, 16);
	/* one read through the whole array and half of the chain's first
	 * buffer: the next read moves that buffer into the array at its offset */
	size_t in_array = 0;
	for (uint32_t i = 0; i < t->rx_cnt; i++)
		in_array += t->rx[(t->rx_head + i) & (t->rx_cap - 1)].len - t->rx[(t->rx_head + i) & (t->rx_cap - 1)].off;
	uint32_t first = t->ovf_head;
	read_some(c, in_array + 250, 0, 17);
	check(c);
	assert_int_equal(t->rx_cnt, 0);
	assert_int_equal(t->ovf_head, first);
	assert_int_equal(c->r->buf.ovf[first - 1].off, 250);
	read_some(c, 100, MSG_PEEK, 2);
	read_some(c, 100, 0, 2); /* moved: read from the array */
	check(c);
	assert_int_equal(t->ovf_head, 0);
	rx_nomem = 0;
	read_some(c, 20000, MSG_PEEK, 77);
	read_some(c, 3000, 0, 1234);
	check(c);
	assert_int_equal(t->ovf_head, 0); /* all back in the array */
	assert_int_equal(t->ovf_tail, 0);
	read_some(c, 20000, 0, 1);
	check(c);
	assert_int_equal(c->rpos, c->wpos);
	run_random(c, 7, 4000, 1);
}

/* The socket leaves its ring: ring buffers are copied to the heap (the
 * ring gets them all back, none is held), the bytes still read in order;
 * and dropping the queue gives back every ring buffer, overflow included. */
static void test_rx_to_heap_and_drop(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	struct rs_tcp *t = &c->t;
	for (int i = 0; i < 6; i++)
		assert_int_equal(push_ring(c, 300 + 7 * i), 0);
	assert_int_equal(push_rxc(c, 200), 0);
	read_some(c, 450, 0, 9); /* one and a half segments */
	rs_rxq_to_heap(t);
	assert_int_equal(t->rx_bufs, 0);
	assert_int_equal(c->r->buf.held, 0);
	check(c);
	assert_int_equal(push_ring(c, 111), 0); /* ring and heap mixed */
	read_some(c, 700, MSG_PEEK, 3);
	read_some(c, 1000, 0, 8);
	check(c);
	/* drop: array and overflow chain */
	while (t->rx_cnt < t->rx_cap)
		assert_int_equal(push_ring(c, 64), 0);
	rx_nomem = 1;
	for (int i = 0; i < 5; i++)
		assert_int_equal(push_ring(c, 64), 0);
	assert_int_not_equal(t->ovf_head, 0);
	check(c);
	rs_rxq_drop_all(t);
	c->rpos = c->wpos;
	assert_int_equal(t->rx_cnt, 0);
	assert_int_equal(t->ovf_head, 0);
	assert_int_equal(t->rx_bufs, 0);
	assert_int_equal(c->r->buf.held, 0);
	check(c);
}

/* After a fork: the shared leftover is read before the queue (peeks too),
 * counts in rs_rxq_held, and its error goes to the first who asks, once. */
static void test_rx_leftover(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	struct rs_tcp *t = &c->t;
	enum { L = 1500 };
	struct rs_shared_rx *l = calloc(1, sizeof(*l) + L);
	for (size_t i = 0; i < L; i++)
		l->data[i] = (char)byte_at(i);
	l->len = L;
	l->err = ECONNRESET;
	t->leftover = l;
	c->lpos = c->wpos = c->rpos = L;
	c->rpos = 0;
	check(c);
	assert_false(rs_rxq_leftover_empty(t));
	for (int i = 0; i < 3; i++)
		assert_int_equal(push_ring(c, 700), 0);
	read_some(c, 2000, MSG_PEEK, 11); /* leftover and queue */
	check(c);
	read_some(c, 1000, 0, 4);
	check(c);
	read_some(c, 1000, MSG_TRUNC, 4); /* straddles the leftover's end */
	check(c);
	read_some(c, 5000, 0, 4);
	check(c);
	assert_int_equal(c->rpos, c->wpos);
	assert_false(rs_rxq_leftover_empty(t)); /* its error is still there */
	rs_rxq_shared_err(t);
	assert_int_equal(t->rx_err, ECONNRESET);
	assert_int_equal(l->err, 0);
	assert_true(rs_rxq_leftover_empty(t));
	t->rx_err = 0;
	rs_rxq_shared_err(t); /* taken once */
	assert_int_equal(t->rx_err, 0);
	t->leftover = NULL;
	free(l);
}

/* The send queue: slices from the frag pool (and the socket's linear
 * buffer) go out in order; consuming any number of bytes, segment
 * boundaries or not, leaves the queue's head at the next byte of the
 * stream and tx_bytes equal to the bytes left; every slice goes back to
 * the pool (at the end the pool has no slice out: destroying it frees
 * every chunk). */
static void test_tx_queue(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	struct rs_tcp *t = &c->t;
	struct rs_frag_pool *p = &c->r->frag;
	static char linear[RS_LINEAR];
	size_t in = 0, out = 0;
	unsigned seed = 3;
	for (int step = 0; step < 3000; step++) {
		if (rnd(&seed) % 2) {
			uint32_t len = 1 + rnd(&seed) % p->chunk_size;
			struct rs_chunk *ch = NULL;
			char *d;
			if (!t->linear_used && len <= RS_LINEAR && rnd(&seed) % 4 == 0) {
				d = linear;
				t->linear_used = 1;
			} else {
				d = rs_frag_alloc(p, len, &ch);
				assert_non_null(d);
			}
			for (uint32_t i = 0; i < len; i++)
				d[i] = (char)byte_at(in + i);
			assert_int_equal(rs_txq_room(t), 0);
			struct rs_txseg *g = rs_txq_at(t, t->tx_cnt++);
			*g = (struct rs_txseg){ d, len, ch };
			t->tx_bytes += len;
			in += len;
		} else if (t->tx_bytes) {
			size_t n = 1 + rnd(&seed) % (t->tx_bytes < 9000 ? t->tx_bytes : 9000);
			rs_txq_consume(t, n, c->r);
			out += n;
		}
		rs_tcpq_check(t);
		assert_int_equal(t->tx_bytes, in - out);
		uint64_t bytes = 0;
		for (uint32_t i = 0; i < t->tx_cnt; i++)
			bytes += rs_txq_at(t, i)->len;
		assert_int_equal(bytes, t->tx_bytes);
		if (t->tx_cnt)
			assert_int_equal((unsigned char)rs_txq_at(t, 0)->data[0], byte_at(out));
	}
	rs_txq_consume(t, t->tx_bytes, c->r);
	assert_int_equal(t->tx_cnt, 0);
	assert_int_equal(t->linear_used, 0);
	/* a second run ends with drop_all */
	for (int i = 0; i < 20; i++) {
		struct rs_chunk *ch;
		char *d = rs_frag_alloc(p, 3000, &ch);
		assert_int_equal(rs_txq_room(t), 0);
		*rs_txq_at(t, t->tx_cnt++) = (struct rs_txseg){ d, 3000, ch };
		t->tx_bytes += 3000;
	}
	rs_txq_consume(t, 4500, c->r);
	rs_tcpq_check(t);
	rs_txq_drop_all(t, c->r);
	assert_int_equal(t->tx_cnt, 0);
	assert_int_equal(t->tx_bytes, 0);
	rs_frag_pool_destroy(p);
	assert_int_equal(p->live_chunks, 0);
}

/* The errors kept with the queues: a receive's error, once taken, leaves
 * the stream ended and the next send EPIPE; a send's asynchronous error
 * keeps the first one, and whether the input had ended before it. */
static void test_kept_errors(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	struct rs_tcp *t = &c->t;
	t->rx_err = ECONNRESET;
	assert_int_equal(rs_tcp_take_error(t), ECONNRESET);
	assert_int_equal(t->rx_err, 0);
	assert_true(t->rx_eof);
	assert_true(t->epipe_pending);
	assert_int_equal(rs_tcp_take_error(t), 0);
	rs_tcp_set_tx_err(t, ECONNRESET);
	rs_tcp_set_tx_err(t, EPIPE);
	assert_int_equal(t->tx_err, ECONNRESET);
	assert_true(t->tx_err_eof);
	t->tx_err = 0;
	t->rx_eof = 0;
	rs_tcp_set_tx_err(t, ETIMEDOUT);
	assert_int_equal(t->tx_err, ETIMEDOUT);
	assert_false(t->tx_err_eof);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rx_stream, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_overflow, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_to_heap_and_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rx_leftover, setup, teardown),
		cmocka_unit_test_setup_teardown(test_tx_queue, setup, teardown),
		cmocka_unit_test_setup_teardown(test_kept_errors, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

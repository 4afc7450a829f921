/* Unit tests for the provided-buffer rings (src/bufring.c) on a real
 * io_uring: the kernel picks the buffers (recv with IOSQE_BUFFER_SELECT on
 * a socketpair), the test takes them as tcp_recv.c does (held++), and gives
 * them back through the engine.  After every step the test checks the
 * ring against the kernel's view (IORING_REGISTER_PBUF_STATUS gives the
 * kernel's head):
 *   posted (tail - kernel head) + pending + held == count,
 * and the entries between the kernel's head and tail + pending are exactly
 * the buffers not held, each once, at its own address with the full size.
 * Skipped (not failed) only when the kernel refuses io_uring or provided
 * buffer rings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "config.h"
#include "engine_int.h"

/* Newer than liburing 2.3's headers (kernel 6.8). */
#define PBUF_STATUS 26
struct pbuf_status {
	uint32_t buf_group;
	uint32_t head;
	uint32_t resv[8];
};

/* The engine's fault hook (engine_int.h): RS_FAULT_BUF_HOLD on demand. */
static int hold_fault;
int ringsock_test_fault(int site)
{
	return site == RS_FAULT_BUF_HOLD && hold_fault;
}

#define SIZE 1024     /* RINGSOCK_BUF_SIZE (its minimum) */
#define MAXB 64       /* RINGSOCK_BUF_COUNT_MAX, after rounding */
#define UMAX 1024     /* the datagram group's maximum (bufring.c) */

struct ctx {
	struct rs_ring *r;
	int sv[2];        /* stream pair: the kernel fills the TCP group from sv[0] */
	int dv[2];        /* datagram pair: the UDP group */
	uint8_t held[UMAX]; /* buffers of the group under test the test holds */
};

static int probe_failed; /* the kernel refused io_uring or buffer rings */

static int kernel_head(struct ctx *c, unsigned bgid, unsigned *head)
{
	struct pbuf_status st = { .buf_group = bgid };
	long e = syscall(__NR_io_uring_register, c->r->ring.ring_fd, PBUF_STATUS, &st, 1);
	if (e < 0)
		return -errno;
	*head = st.head;
	return 0;
}

static int setup(void **state)
{
	static struct ctx c;
	memset(&c, 0, sizeof(c));
	*state = &c;
	hold_fault = 0;
	probe_failed = 0;
	assert_int_equal(rs_config_parse(&rs_rt.cfg, NULL, NULL, NULL), 0);
	rs_rt.cfg.v[RS_K_BUF_SIZE] = SIZE;
	rs_rt.cfg.v[RS_K_BUF_COUNT] = 12;     /* rounded up: 16 */
	rs_rt.cfg.v[RS_K_BUF_COUNT_MAX] = 40; /* rounded up: 64 */
	rs_rt.cfg.v[RS_K_RECLAIM] = RS_RECLAIM_COALESCED;
	rs_rt.cfg.v[RS_K_RECLAIM_BATCH] = 4;
	c.r = calloc(1, sizeof(*c.r));
	assert_non_null(c.r);
	rs_lock_init(&c.r->lock);
	if (io_uring_queue_init(64, &c.r->ring, 0) < 0) {
		probe_failed = 1;
		return 0;
	}
	/* Does the kernel take a buffer ring at all, and tell its head? */
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct io_uring_buf_reg reg = { .ring_addr = (uint64_t)(uintptr_t)m, .ring_entries = 1, .bgid = 99 };
	unsigned h;
	if (io_uring_register_buf_ring(&c.r->ring, &reg, 0) < 0 || kernel_head(&c, 99, &h) < 0)
		probe_failed = 1;
	io_uring_unregister_buf_ring(&c.r->ring, 99);
	munmap(m, 4096);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, c.sv), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_DGRAM, 0, c.dv), 0);
	rs_ring_lock(c.r);
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	rs_bufring_destroy(c->r);
	assert_null(c->r->buf.br);
	assert_null(c->r->ubuf.br);
	rs_ring_unlock(c->r);
	if (c->r->ring.ring_fd > 0)
		io_uring_queue_exit(&c->r->ring);
	free(c->r);
	close(c->sv[0]);
	close(c->sv[1]);
	close(c->dv[0]);
	close(c->dv[1]);
	return 0;
}

#define SKIP_IF_REFUSED() \
	do { \
		if (probe_failed) { \
			print_message("io_uring or provided buffer rings refused by the kernel\n"); \
			skip(); \
		} \
	} while (0)

/* The invariant, from the kernel's head: see the top of the file. */
static void check_group(struct ctx *c, struct rs_bufring *b)
{
	unsigned head;
	assert_int_equal(kernel_head(c, b->bgid, &head), 0);
	uint16_t tail = b->br->tail;
	unsigned posted = (uint16_t)(tail - head);
	unsigned nheld = 0;
	for (unsigned i = 0; i < b->count; i++)
		nheld += c->held[i];
	assert_int_equal(b->held, nheld);
	assert_int_equal(posted + b->pending + b->held, b->count);
	assert_true(b->count <= b->max);
	uint8_t seen[UMAX] = { 0 };
	for (unsigned k = 0; k < posted + b->pending; k++) {
		struct io_uring_buf *e = &b->br->bufs[(head + k) & b->mask];
		assert_true(e->bid < b->count);
		assert_false(c->held[e->bid]);
		assert_false(seen[e->bid]);
		seen[e->bid] = 1;
		assert_int_equal(e->addr, (uint64_t)(uintptr_t)rs_buf_addr(b, e->bid));
		assert_int_equal(e->len, b->size);
	}
}

/* Only what the kernel sees: the posted part. */
static unsigned posted(struct ctx *c, struct rs_bufring *b)
{
	unsigned head;
	assert_int_equal(kernel_head(c, b->bgid, &head), 0);
	return (uint16_t)(b->br->tail - head);
}

/* One receive by the kernel into a buffer of group bgid: send n bytes of a
 * pattern (seeded by tag) on the pair, recv with buffer select (length
 * 0: the buffer's own).  Returns the buffer id (the test now holds it, as
 * tcp_recv.c/udp.c do), or -errno (ENOBUFS: none posted).  The bytes in
 * the buffer are checked against what was sent, *got is how many. */
static int take(struct ctx *c, unsigned bgid, size_t n, int tag, int *got)
{
	struct rs_bufring *b = bgid == RS_BGID_UDP ? &c->r->ubuf : &c->r->buf;
	int *pair = bgid == RS_BGID_UDP ? c->dv : c->sv;
	static char out[8192];
	assert_true(n <= sizeof(out));
	for (size_t i = 0; i < n; i++)
		out[i] = (char)(tag * 31 + i);
	/* the stream pair may hold unread bytes from a refused receive */
	if (bgid == RS_BGID_TCP) {
		char sink[4096];
		while (recv(pair[0], sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
	}
	assert_int_equal(send(pair[1], out, n, 0), (ssize_t)n);
	struct io_uring_sqe *sqe = io_uring_get_sqe(&c->r->ring);
	io_uring_prep_recv(sqe, pair[0], NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = (uint16_t)bgid;
	assert_int_equal(io_uring_submit(&c->r->ring), 1);
	struct io_uring_cqe *cqe;
	assert_int_equal(io_uring_wait_cqe(&c->r->ring, &cqe), 0);
	int res = cqe->res, flags = (int)cqe->flags;
	io_uring_cqe_seen(&c->r->ring, cqe);
	if (res < 0)
		return res;
	assert_true(flags & IORING_CQE_F_BUFFER);
	int bid = (int)((unsigned)flags >> IORING_CQE_BUFFER_SHIFT);
	assert_true((unsigned)bid < b->count);
	assert_false(c->held[bid]);
	assert_memory_equal(rs_buf_addr(b, (unsigned)bid), out, (size_t)res);
	c->held[bid] = 1;
	b->held++;
	*got = res;
	return bid;
}

/* The stream group as made: RINGSOCK_BUF_COUNT and _MAX rounded up to
 * powers of two, every buffer in circulation posted to the kernel with its
 * own id, address and size, none pending or held; overflow slots for each
 * of the max buffers. */
static void test_stream_group_made(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	assert_int_equal(rs_bufring_setup(c->r, c->r->ring.features), 0);
	struct rs_bufring *b = &c->r->buf;
	assert_int_equal(b->count, 16);
	assert_int_equal(b->max, MAXB);
	assert_int_equal(b->size, SIZE);
	assert_int_equal(b->bgid, RS_BGID_TCP);
	assert_non_null(b->ovf);
	assert_int_equal(posted(c, b), 16);
	check_group(c, b);
	/* every buffer and overflow slot can be written (mapped) */
	memset(rs_buf_addr(b, 0), 1, (size_t)MAXB * SIZE);
	memset(b->ovf, 0, MAXB * sizeof(*b->ovf));
}

/* Buffers taken by the kernel and given back: the kernel uses every
 * posted buffer once, each with its own id and full length (a receive of
 * more bytes than a buffer gets exactly its size); given-back buffers
 * reach the kernel only in batches of RINGSOCK_RECLAIM_BATCH (or at
 * rs_buf_flush, as the ring does before entering the kernel), and come
 * back with the same ids; the invariant holds at every step. */
static void test_take_and_reclaim_batched(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	assert_int_equal(rs_bufring_setup(c->r, c->r->ring.features), 0);
	struct rs_bufring *b = &c->r->buf;
	int got, bids[16];
	for (int i = 0; i < 16; i++) {
		bids[i] = take(c, RS_BGID_TCP, SIZE + 100, i, &got);
		assert_true(bids[i] >= 0);
		assert_int_equal(got, SIZE); /* the posted length, no more */
		check_group(c, b);
	}
	assert_int_equal(take(c, RS_BGID_TCP, 10, 0, &got), -ENOBUFS);
	/* three back: below the batch, the kernel sees none of them */
	for (int i = 0; i < 3; i++) {
		rs_buf_release(c->r, (unsigned)bids[i]);
		c->held[bids[i]] = 0;
		check_group(c, b);
	}
	assert_int_equal(b->pending, 3);
	assert_int_equal(posted(c, b), 0);
	assert_int_equal(take(c, RS_BGID_TCP, 10, 0, &got), -ENOBUFS);
	/* the fourth completes the batch: one tail advance for all four */
	rs_buf_release(c->r, (unsigned)bids[3]);
	c->held[bids[3]] = 0;
	assert_int_equal(b->pending, 0);
	assert_int_equal(posted(c, b), 4);
	check_group(c, b);
	/* the kernel hands out exactly those four again */
	uint8_t back[16] = { 0 };
	for (int i = 0; i < 4; i++) {
		int bid = take(c, RS_BGID_TCP, 2 * SIZE, 100 + i, &got);
		assert_true(bid >= 0);
		assert_int_equal(got, SIZE);
		assert_false(back[bid]);
		back[bid] = 1;
		check_group(c, b);
	}
	for (int i = 0; i < 4; i++)
		assert_true(back[bids[i]]);
	assert_int_equal(take(c, RS_BGID_TCP, 10, 0, &got), -ENOBUFS);
	/* two back, then the flush before an enter posts them */
	rs_buf_release(c->r, (unsigned)bids[5]);
	rs_buf_release(c->r, (unsigned)bids[6]);
	c->held[bids[5]] = c->held[bids[6]] = 0;
	assert_int_equal(posted(c, b), 0);
	hold_fault = 1; /* RS_FAULT_BUF_HOLD: the flush keeps them back */
	rs_buf_flush(c->r);
	assert_int_equal(posted(c, b), 0);
	check_group(c, b);
	hold_fault = 0;
	rs_buf_flush(c->r);
	assert_int_equal(posted(c, b), 2);
	assert_int_equal(b->pending, 0);
	check_group(c, b);
	/* everything back */
	for (int i = 0; i < 16; i++)
		if (c->held[i]) {
			rs_buf_release(c->r, (unsigned)i);
			c->held[i] = 0;
			check_group(c, b);
		}
	rs_buf_flush(c->r);
	assert_int_equal(posted(c, b), 16);
	check_group(c, b);
}

/* A receive into several buffers at once (IORING_RECVSEND_BUNDLE, 6.10+):
 * the kernel fills consecutive entries of the ring, which after buffers
 * came back out of order are not consecutive ids, and wraps past the
 * ring's end; the completion names only the first.  rs_buf_bundled must
 * name the rest: the bytes read back through it are the bytes sent, and
 * the ring holds exactly the buffers not taken.  Skipped where the kernel
 * has no bundles. */
static void test_bundle_names_its_buffers(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	if (!(c->r->ring.features & IORING_FEAT_RECVSEND_BUNDLE)) {
		print_message("no receive bundles in this kernel\n");
		skip();
	}
	assert_int_equal(rs_bufring_setup(c->r, c->r->ring.features), 0);
	struct rs_bufring *b = &c->r->buf;
	assert_true(b->bundle);
	int got, bids[3];
	for (int i = 0; i < 3; i++)
		bids[i] = take(c, RS_BGID_TCP, SIZE, i, &got);
	/* back in another order: the ring's entries are 3..15, then 2, 0, 1 */
	int order[3] = { 2, 0, 1 };
	for (int i = 0; i < 3; i++) {
		rs_bufring_put(c->r, b, (unsigned)bids[order[i]]);
		c->held[bids[order[i]]] = 0;
	}
	rs_bufring_flush(b);
	check_group(c, b);
	/* 14 buffers and 300 bytes: from bid 3 on, into those that came back
	 * (as many receives as the kernel needs: each a bundle) */
	enum { LEN = 14 * SIZE + 300 };
	static char out[LEN], in[LEN];
	for (size_t i = 0; i < LEN; i++)
		out[i] = (char)(i * 7 + i / 251);
	assert_int_equal(send(c->sv[1], out, LEN, 0), LEN);
	size_t off = 0;
	int reordered = 0; /* a bundle's later buffer was one that came back */
	while (off < LEN) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&c->r->ring);
		io_uring_prep_recv(sqe, c->sv[0], NULL, 0, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = RS_BGID_TCP;
		sqe->ioprio |= IORING_RECVSEND_BUNDLE;
		assert_int_equal(io_uring_submit(&c->r->ring), 1);
		struct io_uring_cqe *cqe;
		assert_int_equal(io_uring_wait_cqe(&c->r->ring, &cqe), 0);
		int res = cqe->res;
		unsigned first = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
		assert_true(res > 0);
		assert_true(cqe->flags & IORING_CQE_F_BUFFER);
		io_uring_cqe_seen(&c->r->ring, cqe);
		assert_true(off + (size_t)res <= LEN);
		unsigned n = ((unsigned)res + SIZE - 1) / SIZE;
		for (unsigned k = 0; k < n; k++) {
			unsigned bid = k ? rs_buf_bundled(b, first, k) : first;
			assert_true(bid < b->count);
			assert_false(c->held[bid]);
			c->held[bid] = 1;
			b->held++;
			reordered |= k && bid < 3;
			size_t len = (size_t)res - (size_t)k * SIZE < SIZE ? (size_t)res - (size_t)k * SIZE : SIZE;
			memcpy(in + off, rs_buf_addr(b, bid), len);
			off += len;
		}
		check_group(c, b);
	}
	assert_memory_equal(in, out, LEN);
	assert_true(reordered);
	check_group(c, b);
}

/* RINGSOCK_RECLAIM=per-op: each buffer given back reaches the kernel at
 * once (no pending). */
static void test_reclaim_per_op(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	rs_rt.cfg.v[RS_K_RECLAIM] = RS_RECLAIM_PER_OP;
	assert_int_equal(rs_bufring_setup(c->r, c->r->ring.features), 0);
	struct rs_bufring *b = &c->r->buf;
	int got, bids[5];
	for (int i = 0; i < 5; i++)
		bids[i] = take(c, RS_BGID_TCP, 50, i, &got);
	for (int i = 0; i < 5; i++) {
		rs_buf_release(c->r, (unsigned)bids[i]);
		c->held[bids[i]] = 0;
		assert_int_equal(b->pending, 0);
		assert_int_equal(posted(c, b), 16 - 5 + i + 1);
		check_group(c, b);
	}
}

/* Growth with demand: when the kernel finds no buffer, rs_buf_grow doubles
 * the buffers in circulation (the new ids are the next ones, posted at
 * once together with any given back and still pending), up to
 * RINGSOCK_BUF_COUNT_MAX and no further; the invariant holds throughout,
 * and at the end every one of the max buffers is posted exactly once. */
static void test_grow_to_max(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	assert_int_equal(rs_bufring_setup(c->r, c->r->ring.features), 0);
	struct rs_bufring *b = &c->r->buf;
	int got;
	for (int i = 0; i < 16; i++)
		assert_true(take(c, RS_BGID_TCP, 30, i, &got) >= 0);
	assert_int_equal(take(c, RS_BGID_TCP, 30, 0, &got), -ENOBUFS);
	/* two given back, still pending (batch of 4), when the group grows */
	rs_buf_release(c->r, 3);
	rs_buf_release(c->r, 9);
	c->held[3] = c->held[9] = 0;
	assert_int_equal(b->pending, 2);
	unsigned expect = 16;
	while (expect < MAXB) {
		assert_int_equal(rs_buf_grow(c->r), 1);
		expect *= 2;
		assert_int_equal(b->count, expect);
		assert_int_equal(b->pending, 0);
		check_group(c, b);
		/* the kernel now has the new half (and the two given back) */
		unsigned n = posted(c, b);
		for (unsigned k = 0; k < n; k++) {
			int bid = take(c, RS_BGID_TCP, 30, (int)k, &got);
			assert_true(bid >= 0);
			assert_true((unsigned)bid >= expect / 2 || bid == 3 || bid == 9);
		}
		assert_int_equal(take(c, RS_BGID_TCP, 30, 0, &got), -ENOBUFS);
		check_group(c, b);
	}
	/* at the maximum: no more growth */
	assert_int_equal(rs_buf_grow(c->r), 0);
	assert_int_equal(b->count, MAXB);
	check_group(c, b);
	for (unsigned i = 0; i < MAXB; i++) {
		rs_buf_release(c->r, i);
		c->held[i] = 0;
	}
	rs_buf_flush(c->r);
	assert_int_equal(posted(c, b), MAXB);
	check_group(c, b);
	assert_int_equal(rs_buf_grow(c->r), 0);
}

/* The datagram group: made once at the first use (a second call changes
 * nothing), buffers of 64 KiB + 4 KiB (any datagram whole), 16 of them
 * growing to 1024, no overflow slots; a datagram lands whole in one of
 * them and the buffer goes back through rs_bufring_put/_flush; the stream
 * group is untouched. */
static void test_datagram_group(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	assert_int_equal(rs_bufring_setup(c->r, c->r->ring.features), 0);
	assert_int_equal(rs_ubuf_get(c->r), 0);
	struct rs_bufring *u = &c->r->ubuf;
	struct io_uring_buf_ring *br = u->br;
	assert_non_null(br);
	assert_int_equal(rs_ubuf_get(c->r), 0);
	assert_ptr_equal(u->br, br);
	assert_int_equal(u->bgid, RS_BGID_UDP);
	assert_int_equal(u->size, 65536 + 4096);
	assert_int_equal(u->count, 16);
	assert_int_equal(u->max, UMAX);
	assert_null(u->ovf);
	check_group(c, u);
	int got;
	int bid = take(c, RS_BGID_UDP, 3000, 7, &got);
	assert_true(bid >= 0);
	assert_int_equal(got, 3000);
	check_group(c, u);
	rs_bufring_put(c->r, u, (unsigned)bid);
	c->held[bid] = 0;
	assert_int_equal(u->pending, 1);
	rs_bufring_flush(u);
	assert_int_equal(posted(c, u), 16);
	check_group(c, u);
	/* it grows like the stream group, to its own maximum */
	int grows = 0;
	while (rs_bufring_grow(c->r, u))
		grows++;
	assert_int_equal(grows, 6); /* 16 -> 1024 */
	assert_int_equal(u->count, UMAX);
	check_group(c, u);
	/* the stream group kept its own buffers */
	memset(c->held, 0, sizeof(c->held));
	assert_int_equal(c->r->buf.count, 16);
	check_group(c, &c->r->buf);
}

/* A datagram group the kernel refuses (its group id taken already): the
 * error is returned and kept, not retried at every UDP socket, until the
 * ring's groups are destroyed. */
static void test_datagram_group_refused(void **state)
{
	SKIP_IF_REFUSED();
	struct ctx *c = *state;
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct io_uring_buf_reg reg = { .ring_addr = (uint64_t)(uintptr_t)m, .ring_entries = 1, .bgid = RS_BGID_UDP };
	assert_int_equal(io_uring_register_buf_ring(&c->r->ring, &reg, 0), 0);
	int e = rs_ubuf_get(c->r);
	assert_true(e < 0);
	assert_null(c->r->ubuf.br);
	assert_int_equal(c->r->ubuf_failed, e);
	io_uring_unregister_buf_ring(&c->r->ring, RS_BGID_UDP);
	assert_int_equal(rs_ubuf_get(c->r), e); /* kept */
	assert_null(c->r->ubuf.br);
	rs_bufring_destroy(c->r);
	assert_int_equal(c->r->ubuf_failed, 0);
	assert_int_equal(rs_ubuf_get(c->r), 0); /* tried again */
	assert_non_null(c->r->ubuf.br);
	munmap(m, 4096);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_stream_group_made, setup, teardown),
		cmocka_unit_test_setup_teardown(test_take_and_reclaim_batched, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bundle_names_its_buffers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reclaim_per_op, setup, teardown),
		cmocka_unit_test_setup_teardown(test_grow_to_max, setup, teardown),
		cmocka_unit_test_setup_teardown(test_datagram_group, setup, teardown),
		cmocka_unit_test_setup_teardown(test_datagram_group_refused, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

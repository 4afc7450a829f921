/* bufring.c - the thread's provided-buffer ring and coalesced reclaim.
 *
 * Multishot receives on this thread's ring pick buffers from one ring of
 * RINGSOCK_BUF_COUNT buffers of RINGSOCK_BUF_SIZE bytes.  A buffer stays
 * with the socket's receive queue until the application has read all of
 * it; then it is added back to the ring, and the tail is advanced once
 * per RINGSOCK_RECLAIM_BATCH buffers (or before the ring next enters the
 * kernel, whichever comes first).  RINGSOCK_RECLAIM=per-op advances the
 * tail for every buffer, to measure what coalescing buys.
 *
 * The pool follows demand: the ring has RINGSOCK_BUF_COUNT_MAX entries
 * and the memory for as many buffers is mapped (address space only), but
 * only RINGSOCK_BUF_COUNT buffers circulate at first.  When a receive
 * finds none free (ENOBUFS), the next as many join, up to the maximum; a
 * buffer's pages become memory only once it has received data.
 *
 * Where the kernel has them (6.10+), a stream socket's receive is a bundle:
 * it may fill several buffers in one go (one pass through TCP's receive
 * and one ACK decision for all of them instead of one per buffer), which
 * the kernel takes from consecutive entries of the ring; the group keeps
 * which buffer each entry was last given, so the completion (the first
 * buffer's id and the bytes) names them all.
 *
 * Datagram sockets take their buffers from a second group (rs_ubuf_get),
 * made when the thread's first UDP socket is armed: buffers big enough
 * for any datagram, each returned as soon as its datagram is copied out.
 */
#include <errno.h>
#include <sys/mman.h>

#include "engine_int.h"

/* Buffer bid into the ring off entries past its tail (the entry noted). */
static void buf_add(struct rs_bufring *b, unsigned bid, unsigned off)
{
	if (b->slot_bid) {
		unsigned slot = (b->br->tail + off) & b->mask;
		b->slot_bid[slot] = (uint16_t)bid;
		b->bid_slot[bid] = (uint16_t)slot;
	}
	io_uring_buf_ring_add(b->br, rs_buf_addr(b, bid), b->size, (unsigned short)bid, b->mask, (int)off);
}

static unsigned pow2(unsigned v)
{
	unsigned p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

/* A buffer group on r's ring: max entries registered, count of them in
 * circulation, size bytes each; with overflow slots (ovf) for the TCP
 * group, whose buffers stay queued with their sockets. */
static int group_init(struct rs_ring *r, struct rs_bufring *b, unsigned short bgid, uint32_t size, unsigned count,
		      unsigned max, int ovf)
{
	b->count = pow2(count);
	if (b->count > 32768)
		b->count = 32768;
	b->max = pow2(max);
	if (b->max > 32768)
		b->max = 32768;
	if (b->max < b->count)
		b->max = b->count;
	b->mask = b->max - 1;
	b->size = size;
	b->bgid = bgid;
	size_t ring_len = (size_t)b->max * sizeof(struct io_uring_buf);
	ring_len = (ring_len + 4095) & ~(size_t)4095;
	size_t ovf_len = ovf ? ((size_t)b->max * sizeof(struct rs_bufovf) + 4095) & ~(size_t)4095 : 0;
	size_t slots_len = ovf ? ((size_t)b->max * 2 * sizeof(uint16_t) + 4095) & ~(size_t)4095 : 0;
	b->map_len = ring_len + ovf_len + slots_len + (size_t)b->max * b->size;
	void *m = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	/* A fork child never uses this thread's buffers: held data is copied
	 * out before fork (tcp.c fork_prepare; UDP copies each datagram out
	 * as it completes). */
	madvise(m, b->map_len, MADV_DONTFORK);
	b->br = m;
	b->ovf = ovf ? (struct rs_bufovf *)((char *)m + ring_len) : NULL;
	b->slot_bid = ovf ? (uint16_t *)(void *)((char *)m + ring_len + ovf_len) : NULL;
	b->bid_slot = ovf ? b->slot_bid + b->max : NULL;
	b->mem = (char *)m + ring_len + ovf_len + slots_len;
	struct io_uring_buf_reg reg = {
		.ring_addr = (uint64_t)(uintptr_t)b->br,
		.ring_entries = b->max,
		.bgid = b->bgid,
	};
	int e = io_uring_register_buf_ring(&r->ring, &reg, 0);
	if (e < 0) {
		munmap(m, b->map_len);
		b->br = NULL;
		return e;
	}
	io_uring_buf_ring_init(b->br);
	for (unsigned i = 0; i < b->count; i++)
		buf_add(b, i, i);
	io_uring_buf_ring_advance(b->br, (int)b->count);
	b->pending = 0;
	b->held = 0;
	return 0;
}

int rs_bufring_setup(struct rs_ring *r, unsigned features)
{
	int e = group_init(r, &r->buf, RS_BGID_TCP, (uint32_t)rs_rt.cfg.v[RS_K_BUF_SIZE],
			   (unsigned)rs_rt.cfg.v[RS_K_BUF_COUNT], (unsigned)rs_rt.cfg.v[RS_K_BUF_COUNT_MAX], 1);
	r->buf.bundle = e == 0 && (features & IORING_FEAT_RECVSEND_BUNDLE) &&
			!(rs_rt.cfg.v[RS_K_FEATURES_DISABLE] & RS_FEAT_BUNDLE);
	return e;
}

/* The entries a bundle took still name its buffers when its completion is
 * handled: an entry is written again only when the tail comes round to it
 * (max entries later), and every entry from a consumed one up to the tail
 * holds a different buffer (held by a completion not handled yet, since
 * completions are handled in order, or queued with a socket, or in the
 * ring), of at most count <= max buffers in all. */
unsigned rs_buf_bundled(const struct rs_bufring *b, unsigned first, unsigned k)
{
	return b->slot_bid[(b->bid_slot[first] + k) & b->mask];
}

/* Datagram buffers: each takes a whole datagram of any size the kernel
 * can deliver (no truncation, so nothing is lost), and goes back to the
 * ring as soon as its completion is handled (the datagram is copied out),
 * so a few circulate; they grow like the stream group. */
#define RS_UBUF_SIZE (65536 + 4096)
#define RS_UBUF_COUNT 16
#define RS_UBUF_MAX 1024

int rs_ubuf_get(struct rs_ring *r)
{
	rs_assert(rs_ring_held(r));
	if (r->ubuf.br)
		return 0;
	if (r->ubuf_failed)
		return r->ubuf_failed;
	int e = group_init(r, &r->ubuf, RS_BGID_UDP, RS_UBUF_SIZE, RS_UBUF_COUNT, RS_UBUF_MAX, 0);
	if (e < 0)
		r->ubuf_failed = e;
	return e;
}

static void group_fini(struct rs_ring *r, struct rs_bufring *b)
{
	if (!b->br)
		return;
	io_uring_unregister_buf_ring(&r->ring, b->bgid);
	munmap(b->br, b->map_len);
	b->br = NULL;
}

void rs_bufring_destroy(struct rs_ring *r)
{
	group_fini(r, &r->buf);
	group_fini(r, &r->ubuf);
	r->ubuf_failed = 0;
}

void rs_bufring_flush(struct rs_bufring *b)
{
	if (!b->pending || rs_fault(RS_FAULT_BUF_HOLD))
		return;
	io_uring_buf_ring_advance(b->br, (int)b->pending);
	b->pending = 0;
	rs_stat_add(RS_C_RECLAIM_BATCHES, 1);
}

void rs_buf_flush(struct rs_ring *r)
{
	rs_bufring_flush(&r->buf);
}

int rs_bufring_grow(struct rs_ring *r, struct rs_bufring *b)
{
	rs_assert(rs_ring_held(r));
	if (b->count >= b->max || !b->br)
		return 0;
	unsigned add = b->count <= b->max - b->count ? b->count : b->max - b->count;
	for (unsigned i = 0; i < add; i++)
		buf_add(b, b->count + i, b->pending + i);
	b->pending += add;
	b->count += add;
	rs_bufring_flush(b);
	rs_stat_add(RS_C_BUF_GROWS, 1);
	rs_debug("receive buffers (group %u): %u in circulation (a receive found none free)", b->bgid, b->count);
	return 1;
}

int rs_buf_grow(struct rs_ring *r)
{
	return rs_bufring_grow(r, &r->buf);
}

/* Back to the ring with the next tail advance. */
void rs_bufring_put(struct rs_ring *r, struct rs_bufring *b, unsigned bid)
{
	rs_assert(rs_ring_held(r) && bid < b->count && b->held > 0);
	(void)r;
	buf_add(b, bid, b->pending);
	b->pending++;
	b->held--;
}

void rs_buf_release(struct rs_ring *r, unsigned bid)
{
	struct rs_bufring *b = &r->buf;
	rs_bufring_put(r, b, bid);
	if (rs_rt.cfg.v[RS_K_RECLAIM] == RS_RECLAIM_PER_OP ||
	    b->pending >= (unsigned)rs_rt.cfg.v[RS_K_RECLAIM_BATCH])
		rs_bufring_flush(b);
}

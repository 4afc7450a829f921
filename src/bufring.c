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
 */
#include <errno.h>
#include <sys/mman.h>

#include "engine.h"

static unsigned pow2(unsigned v)
{
	unsigned p = 1;
	while (p < v)
		p <<= 1;
	return p;
}

int rs_bufring_setup(struct rs_ring *r)
{
	struct rs_bufring *b = &r->buf;
	b->count = pow2((unsigned)rs_rt.cfg.v[RS_K_BUF_COUNT]);
	if (b->count > 32768)
		b->count = 32768;
	b->max = pow2((unsigned)rs_rt.cfg.v[RS_K_BUF_COUNT_MAX]);
	if (b->max > 32768)
		b->max = 32768;
	if (b->max < b->count)
		b->max = b->count;
	b->mask = b->max - 1;
	b->size = (uint32_t)rs_rt.cfg.v[RS_K_BUF_SIZE];
	b->bgid = 0;
	size_t ring_len = (size_t)b->max * sizeof(struct io_uring_buf);
	ring_len = (ring_len + 4095) & ~(size_t)4095;
	size_t ovf_len = ((size_t)b->max * sizeof(struct rs_bufovf) + 4095) & ~(size_t)4095;
	b->map_len = ring_len + ovf_len + (size_t)b->max * b->size;
	void *m = mmap(NULL, b->map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	/* A fork child never uses this thread's buffers: held data is copied
	 * out before fork (tcp.c fork_prepare). */
	madvise(m, b->map_len, MADV_DONTFORK);
	b->br = m;
	b->ovf = (struct rs_bufovf *)((char *)m + ring_len);
	b->mem = (char *)m + ring_len + ovf_len;
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
		io_uring_buf_ring_add(b->br, rs_buf_addr(b, i), b->size, (unsigned short)i, b->mask, (int)i);
	io_uring_buf_ring_advance(b->br, (int)b->count);
	b->pending = 0;
	b->held = 0;
	return 0;
}

void rs_bufring_destroy(struct rs_ring *r)
{
	struct rs_bufring *b = &r->buf;
	if (!b->br)
		return;
	io_uring_unregister_buf_ring(&r->ring, b->bgid);
	munmap(b->br, b->map_len);
	b->br = NULL;
}

void rs_buf_flush(struct rs_ring *r)
{
	struct rs_bufring *b = &r->buf;
	if (!b->pending || rs_fault(RS_FAULT_BUF_HOLD))
		return;
	io_uring_buf_ring_advance(b->br, (int)b->pending);
	b->pending = 0;
	rs_stat_add(RS_C_RECLAIM_BATCHES, 1);
}

int rs_buf_grow(struct rs_ring *r)
{
	struct rs_bufring *b = &r->buf;
	rs_assert(rs_ring_held(r));
	if (b->count >= b->max || !b->br)
		return 0;
	unsigned add = b->count <= b->max - b->count ? b->count : b->max - b->count;
	for (unsigned i = 0; i < add; i++)
		io_uring_buf_ring_add(b->br, rs_buf_addr(b, b->count + i), b->size, (unsigned short)(b->count + i),
				      b->mask, (int)(b->pending + i));
	b->pending += add;
	b->count += add;
	rs_buf_flush(r);
	rs_stat_add(RS_C_BUF_GROWS, 1);
	rs_debug("receive buffers: %u in circulation (a receive found none free)", b->count);
	return 1;
}

void rs_buf_release(struct rs_ring *r, unsigned bid)
{
	struct rs_bufring *b = &r->buf;
	rs_assert(rs_ring_held(r) && bid < b->count && b->held > 0);
	io_uring_buf_ring_add(b->br, rs_buf_addr(b, bid), b->size, (unsigned short)bid, b->mask,
			      (int)b->pending);
	b->pending++;
	b->held--;
	if (rs_rt.cfg.v[RS_K_RECLAIM] == RS_RECLAIM_PER_OP ||
	    b->pending >= (unsigned)rs_rt.cfg.v[RS_K_RECLAIM_BATCH])
		rs_buf_flush(r);
}

/* frag.c - per-thread send frag pool.
 *
 * Like the kernel's per-task page_frag: a send copies the application's
 * bytes into a slice carved from the thread's current chunk (32 KiB, or
 * 4 KiB with RINGSOCK_HIGH_ORDER_ALLOC_DISABLE=1).  A chunk is reused in
 * place once every slice carved from it has been sent.  Chunks that fall
 * free go to a free list; memory goes back to the operating system only
 * when the free list is above RINGSOCK_RECLAIM_THRESHOLD, and then
 * RINGSOCK_RECLAIM_CHUNK bytes at a time (hysteresis, not per operation);
 * with RINGSOCK_RECLAIM=per-op every chunk goes back as soon as it falls
 * free (memory as small as possible, the behaviour the coalesced default
 * is measured against).
 * When the allocator refuses a chunk, a slice of at most a page gets a
 * chunk of its own of one page (order 0, as the kernel's page_frag falls
 * back to), freed as soon as its slices are back.
 * The pool belongs to one ring and is used under its lock.
 *
 * Zero-copy sends hold their chunks (struct rs_frag_hold) until the kernel
 * lets go of them: the holds wait on the ring's list for the send's two
 * completions, which the reap hands here (rs_frag_zc_complete).
 */
#include <stdlib.h>

#include "engine_int.h"

static void pool_trim(struct rs_frag_pool *p)
{
	int per_op = rs_rt.cfg.v[RS_K_RECLAIM] == RS_RECLAIM_PER_OP;
	size_t threshold = per_op ? 0 : (size_t)rs_rt.cfg.v[RS_K_RECLAIM_THRESHOLD];
	if (p->free_bytes <= threshold || __atomic_load_n(&rs_dying, __ATOMIC_RELAXED))
		return; /* (dying: no free(), see engine.c die_flush) */
	size_t target = per_op ? (size_t)-1 : (size_t)rs_rt.cfg.v[RS_K_RECLAIM_CHUNK];
	size_t freed = 0;
	while (p->free && freed < target) {
		struct rs_chunk *c = p->free;
		p->free = c->next;
		p->free_bytes -= c->size;
		freed += c->size;
		p->live_chunks--;
		rs_stat_add(RS_C_FRAG_CHUNKS, (uint64_t)-1); /* live count */
		free(c);
	}
	rs_stat_add(RS_C_RECLAIM_RETURNS, 1);
}

static struct rs_chunk *chunk_new(struct rs_frag_pool *p, uint32_t size)
{
	struct rs_chunk *c;
	if (size == p->chunk_size && p->free) {
		c = p->free;
		p->free = c->next;
		p->free_bytes -= c->size;
	} else {
		c = malloc(sizeof(*c) + size);
		if (!c)
			return NULL;
		c->size = size;
		p->live_chunks++;
		rs_stat_add(RS_C_FRAG_CHUNKS, 1);
	}
	c->next = NULL;
	c->used = 0;
	c->refs = 0;
	c->cached = 0;
	return c;
}

/* A single page's chunk (order 0) stands in for a large one the allocator
 * refused: it goes back to the OS as soon as it falls free, never to the
 * free list (which holds chunk_size chunks only, reused for any slice). */
static int order0_fallback(const struct rs_frag_pool *p, const struct rs_chunk *c)
{
	return c->size != p->chunk_size;
}

static void order0_free(struct rs_frag_pool *p, struct rs_chunk *c)
{
	if (__atomic_load_n(&rs_dying, __ATOMIC_RELAXED))
		return; /* (no free() in the fatal signal's flush: kept) */
	p->live_chunks--;
	rs_stat_add(RS_C_FRAG_CHUNKS, (uint64_t)-1); /* live count */
	free(c);
}

/* A new current chunk: the pool's chunk size, or, when the allocator
 * refuses that and the slice fits a page, a page (RS_FRAG_PAGE). */
static struct rs_chunk *cur_new(struct rs_frag_pool *p, uint32_t len)
{
	struct rs_chunk *c = chunk_new(p, p->chunk_size);
	if (!c && p->chunk_size > RS_FRAG_PAGE && len <= RS_FRAG_PAGE)
		c = chunk_new(p, RS_FRAG_PAGE);
	return c;
}

char *rs_frag_alloc(struct rs_frag_pool *p, uint32_t len, struct rs_chunk **chunk)
{
	struct rs_chunk *c = p->cur;
	if (!c || c->size - c->used < len) {
		if (c && --c->refs == 0) {
			/* No slice of the old current chunk is alive. */
			if (order0_fallback(p, c)) {
				order0_free(p, c);
			} else {
				c->next = p->free;
				p->free = c;
				p->free_bytes += c->size;
			}
		}
		c = cur_new(p, len);
		if (!c) {
			p->cur = NULL;
			return NULL;
		}
		c->refs = 1; /* the pool's reference while it is current */
		p->cur = c;
	}
	char *ptr = c->data + c->used;
	c->used += len;
	c->refs++;
	*chunk = c;
	return ptr;
}

char *rs_frag_alloc_cached(struct rs_frag_pool *p, struct rs_chunk **cache, uint32_t len,
			   struct rs_chunk **chunk)
{
	struct rs_chunk *c = *cache;
	if (!c) {
		c = chunk_new(p, p->chunk_size);
		if (!c)
			return NULL;
		c->refs = 1; /* the socket's reference */
		c->cached = 1;
		*cache = c;
	}
	if (c->size - c->used < len)
		return NULL;
	char *ptr = c->data + c->used;
	c->used += len;
	c->refs++;
	*chunk = c;
	return ptr;
}

void rs_frag_cache_drop(struct rs_frag_pool *p, struct rs_chunk *c)
{
	if (!c)
		return;
	c->cached = 0;
	if (--c->refs == 0) {
		c->next = p->free;
		p->free = c;
		p->free_bytes += c->size;
		pool_trim(p);
	}
}

void rs_frag_release(struct rs_frag_pool *p, struct rs_chunk *c)
{
	if (--c->refs > 0) {
		if ((c == p->cur || c->cached) && c->refs == 1)
			c->used = 0; /* every slice is back: reuse in place */
		return;
	}
	/* Not current (the pool holds a reference on the current one). */
	if (order0_fallback(p, c)) {
		order0_free(p, c);
		return;
	}
	c->next = p->free;
	p->free = c;
	p->free_bytes += c->size;
	pool_trim(p);
}

struct rs_frag_hold *rs_frag_hold_new(struct rs_frag_pool *p, struct rs_chunk *const *chunks, uint32_t n)
{
	size_t size = sizeof(struct rs_frag_hold) + n * sizeof(struct rs_chunk *);
	struct rs_chunk *own;
	char *m = rs_frag_alloc(p, (uint32_t)size + 15, &own);
	if (!m)
		return NULL;
	struct rs_frag_hold *h = (struct rs_frag_hold *)(((uintptr_t)m + 15) & ~(uintptr_t)15);
	h->own = own;
	h->next = h->prev = NULL;
	h->e = NULL;
	h->notif = 1;
	h->n = n;
	for (uint32_t i = 0; i < n; i++) {
		h->chunk[i] = chunks[i];
		chunks[i]->refs++;
	}
	return h;
}

void rs_frag_hold_release(struct rs_frag_pool *p, struct rs_frag_hold *h)
{
	for (uint32_t i = 0; i < h->n; i++)
		rs_frag_release(p, h->chunk[i]);
	rs_frag_release(p, h->own); /* last: the hold lives in it */
}

/* (Chunks a zero-copy send still holds are not on the free list: they stay
 * allocated with their hold, which the ring keeps.) */
void rs_frag_pool_destroy(struct rs_frag_pool *p)
{
	if (p->cur && --p->cur->refs == 0) {
		p->cur->next = p->free;
		p->free = p->cur;
	}
	p->cur = NULL;
	while (p->free) {
		struct rs_chunk *c = p->free;
		p->free = c->next;
		p->live_chunks--;
		rs_stat_add(RS_C_FRAG_CHUNKS, (uint64_t)-1);
		free(c);
	}
	p->free_bytes = 0;
}

/* ---- zero-copy sends: their holds and two completions (the ring reaps) ---- */

void rs_frag_zc_add(struct rs_ring *r, struct rs_frag_hold *h)
{
	h->prev = NULL;
	h->next = r->zc_holds;
	if (h->next)
		h->next->prev = h;
	r->zc_holds = h;
}

/* The send's own completion goes to its socket (as a plain send's would),
 * and tells whether a notification follows (F_MORE); the notification
 * says the kernel no longer reads the chunks.  After both, the hold goes. */
void rs_frag_zc_complete(struct rs_ring *r, struct rs_frag_hold *h, struct io_uring_cqe *c)
{
	if (c->flags & IORING_CQE_F_NOTIF) {
		h->notif = 0;
		if ((unsigned)c->res & IORING_NOTIF_USAGE_ZC_COPIED)
			rs_stat_add(RS_C_ZC_COPIED, 1);
	} else {
		struct rs_esock *e = h->e;
		h->e = NULL;
		if (!(c->flags & IORING_CQE_F_MORE))
			h->notif = 0; /* (no notification follows) */
		e->ops->complete(r, e, RS_UD_SEND, c);
	}
	if (h->e || h->notif)
		return;
	if (h->prev)
		h->prev->next = h->next;
	else
		r->zc_holds = h->next;
	if (h->next)
		h->next->prev = h->prev;
	rs_frag_hold_release(&r->frag, h);
}

/* Holds of a ring that goes (its thread exits) before the kernel let go
 * of their chunks: kept, with the chunks, for the life of the process
 * (the kernel may still read them; reused memory would be sent). */
static struct rs_frag_hold *zc_orphans;
/* (taken under a ring's lock, which fork holds) */
static rs_lock zc_orphans_lock = RS_LOCK_INIT;

void rs_frag_zc_orphan_all(struct rs_ring *r)
{
	if (!r->zc_holds)
		return;
	struct rs_frag_hold *last = r->zc_holds;
	while (last->next)
		last = last->next;
	rs_mutex_lock(&zc_orphans_lock);
	last->next = zc_orphans;
	zc_orphans = r->zc_holds;
	rs_mutex_unlock(&zc_orphans_lock);
	r->zc_holds = NULL;
}

/* Unit tests for the per-thread send frag pool (src/frag.c): slices carved
 * in place from chunk_size chunks, chunks reused once every slice is back,
 * free chunks above RINGSOCK_RECLAIM_THRESHOLD given back to the OS
 * RINGSOCK_RECLAIM_CHUNK at a time (or at once with RINGSOCK_RECLAIM=per-op),
 * a socket's cached chunk, zero-copy holds, the 4 KiB (order-0) chunks of
 * RINGSOCK_HIGH_ORDER_ALLOC_DISABLE, the page (order-0) chunk that stands
 * in for a refused 32 KiB one, and a refused allocation.
 *
 * The pool's malloc and free are watched through the linker (--wrap, set in
 * tests/CMakeLists.txt for this test only): every chunk the pool holds is a
 * live malloc of sizeof(struct rs_chunk) + chunk_size bytes (or + a page:
 * the fallback), every chunk it
 * gives back is a free() of one, and a refusal is a malloc returning NULL.
 * The engine is not changed for the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "engine_int.h"

/* ---- malloc/free as the pool sees them ---------------------------------- */
void *__real_malloc(size_t n);
void __real_free(void *p);

#define MAX_LIVE 4096
static void *live[MAX_LIVE];     /* chunk-sized blocks malloc'ed, not freed */
static size_t nlive;
static size_t chunk_bytes;       /* sizeof(struct rs_chunk) + the test's chunk size */
static size_t refuse_above;      /* malloc of more bytes than this fails; 0: never */
static unsigned refusals;

void *__wrap_malloc(size_t n)
{
	if (refuse_above && n > refuse_above) {
		refusals++;
		return NULL;
	}
	void *p = __real_malloc(n);
	if (p && chunk_bytes && (n == chunk_bytes || n == sizeof(struct rs_chunk) + RS_FRAG_PAGE) &&
	    nlive < MAX_LIVE)
		live[nlive++] = p;
	return p;
}

void __wrap_free(void *p)
{
	for (size_t i = 0; i < nlive; i++)
		if (live[i] == p) {
			live[i] = live[--nlive];
			break;
		}
	__real_free(p);
}

static int is_live(const void *p)
{
	for (size_t i = 0; i < nlive; i++)
		if (live[i] == p)
			return 1;
	return 0;
}

/* ---- the pool's own accounting -------------------------------------------- */
static size_t free_list_len(const struct rs_frag_pool *p, size_t *bytes)
{
	size_t n = 0, b = 0;
	for (const struct rs_chunk *c = p->free; c; c = c->next, n++)
		b += c->size;
	if (bytes)
		*bytes = b;
	return n;
}

/* What the pool says it holds is what it malloc'ed and did not free, and
 * free_bytes is the free list's bytes. */
static void check_pool(const struct rs_frag_pool *p)
{
	size_t b;
	free_list_len(p, &b);
	assert_int_equal(p->free_bytes, b);
	assert_int_equal(p->live_chunks, nlive);
	for (const struct rs_chunk *c = p->free; c; c = c->next) {
		assert_true(is_live(c));
		assert_int_equal(c->size, p->chunk_size);
	}
}

static int setup(void **state)
{
	(void)state;
	assert_int_equal(rs_config_parse(&rs_rt.cfg, NULL, NULL, NULL), 0);
	nlive = 0;
	refuse_above = 0;
	refusals = 0;
	return 0;
}

static void pool_init(struct rs_frag_pool *p, uint32_t chunk_size)
{
	memset(p, 0, sizeof(*p));
	p->chunk_size = chunk_size;
	chunk_bytes = sizeof(struct rs_chunk) + chunk_size;
}

static void pool_fini(struct rs_frag_pool *p)
{
	rs_frag_pool_destroy(p);
	assert_null(p->free);
	assert_int_equal(p->free_bytes, 0);
	assert_int_equal(p->live_chunks, nlive);
}

/* Slices are carved one after the other from the current chunk, each inside
 * its chunk's data and none overlapping another (a pattern written into
 * every slice survives all later allocations); a slice that does not fit
 * in what is left starts a new chunk of chunk_size bytes. */
static void test_slices_carved_in_place(void **state)
{
	(void)state;
	struct rs_frag_pool p;
	pool_init(&p, 32768);
	static const uint32_t lens[] = { 1, 100, 4096, 7, 16384, 3000, 12000, 32768, 5, 32760 };
	enum { N = sizeof(lens) / sizeof(lens[0]) };
	char *ptr[N];
	struct rs_chunk *ch[N];
	for (int i = 0; i < N; i++) {
		struct rs_chunk *prev = p.cur;
		uint32_t used = prev ? prev->used : 0;
		ptr[i] = rs_frag_alloc(&p, lens[i], &ch[i]);
		assert_non_null(ptr[i]);
		assert_ptr_equal(ch[i], p.cur);
		assert_int_equal(ch[i]->size, 32768);
		if (prev && prev->size - used >= lens[i]) {
			assert_ptr_equal(ch[i], prev); /* fits: same chunk, next bytes */
			assert_ptr_equal(ptr[i], prev->data + used);
		} else {
			assert_ptr_equal(ptr[i], ch[i]->data); /* a fresh chunk */
		}
		assert_true(ptr[i] + lens[i] <= ch[i]->data + ch[i]->size);
		memset(ptr[i], 'a' + i, lens[i]);
		check_pool(&p);
	}
	for (int i = 0; i < N; i++)
		for (uint32_t k = 0; k < lens[i]; k++)
			assert_int_equal(ptr[i][k], 'a' + i);
	for (int i = 0; i < N; i++)
		rs_frag_release(&p, ch[i]);
	check_pool(&p);
	pool_fini(&p);
	assert_int_equal(nlive, 0);
}

/* A chunk is reused once every slice carved from it is back: the current
 * chunk in place (the next slice starts at its data again, no new chunk),
 * an old one through the free list (the next new chunk is that one, no
 * malloc). */
static void test_chunks_reused(void **state)
{
	(void)state;
	struct rs_frag_pool p;
	pool_init(&p, 32768);
	struct rs_chunk *a, *b, *c;
	char *x = rs_frag_alloc(&p, 1000, &a);
	char *y = rs_frag_alloc(&p, 2000, &b);
	assert_ptr_equal(a, b);
	rs_frag_release(&p, a);
	assert_ptr_not_equal(rs_frag_alloc(&p, 10, &c), x); /* y still out: carving goes on */
	rs_frag_release(&p, c);
	rs_frag_release(&p, b);
	/* every slice back: in place */
	assert_ptr_equal(rs_frag_alloc(&p, 500, &c), a->data);
	assert_ptr_equal(c, a);
	assert_int_equal(p.live_chunks, 1);
	(void)y;

	/* fill a, keep one slice of it, and move on to a second chunk */
	char *keep = rs_frag_alloc(&p, 32768 - 500, &b);
	assert_ptr_equal(b, a);
	rs_frag_release(&p, c);
	struct rs_chunk *second;
	rs_frag_alloc(&p, 100, &second);
	assert_ptr_not_equal(second, a);
	assert_int_equal(p.live_chunks, 2);
	assert_null(p.free);
	rs_frag_release(&p, b); /* a's last slice: a is free */
	(void)keep;
	assert_ptr_equal(p.free, a);
	assert_int_equal(p.free_bytes, 32768);
	check_pool(&p);
	/* second filled up: the next chunk is a, from the free list */
	struct rs_chunk *third;
	rs_frag_alloc(&p, 32768, &third);
	assert_ptr_equal(third, a);
	assert_int_equal(p.live_chunks, 2);
	check_pool(&p);
	rs_frag_release(&p, second);
	rs_frag_release(&p, third);
	check_pool(&p);
	pool_fini(&p);
	assert_int_equal(nlive, 0);
}

/* Make n chunks each entirely carved by one slice (kept in ch[]), then a
 * last current chunk: the n are off the current slot. */
static void carve_chunks(struct rs_frag_pool *p, struct rs_chunk **ch, int n)
{
	for (int i = 0; i < n; i++) {
		assert_non_null(rs_frag_alloc(p, p->chunk_size, &ch[i]));
		if (i)
			assert_ptr_not_equal(ch[i], ch[i - 1]);
	}
}

/* Coalesced reclaim: chunks falling free stay on the free list until it
 * holds more than RINGSOCK_RECLAIM_THRESHOLD bytes, then RINGSOCK_RECLAIM_CHUNK
 * bytes of them are free()d at once; the free list never stays above the
 * threshold, and what the pool counts matches what it holds from malloc. */
static void test_reclaim_coalesced(void **state)
{
	(void)state;
	enum { CS = 32768, N = 24 };
	rs_rt.cfg.v[RS_K_RECLAIM] = RS_RECLAIM_COALESCED;
	rs_rt.cfg.v[RS_K_RECLAIM_THRESHOLD] = 4 * CS;
	rs_rt.cfg.v[RS_K_RECLAIM_CHUNK] = 3 * CS;
	struct rs_frag_pool p;
	pool_init(&p, CS);
	struct rs_chunk *ch[N + 1];
	carve_chunks(&p, ch, N + 1); /* ch[N] is the current chunk */
	assert_int_equal(nlive, N + 1);
	size_t trims = 0;
	for (int i = 0; i < N; i++) {
		size_t before = nlive;
		rs_frag_release(&p, ch[i]);
		check_pool(&p);
		assert_true(p.free_bytes <= 4 * CS);
		if (nlive < before) {
			/* a batch: the free list was over the threshold (5 chunks)
			 * and 3 chunks went back at once */
			assert_int_equal(before - nlive, 3);
			assert_int_equal(p.free_bytes, 2 * CS);
			trims++;
		}
	}
	/* 24 frees: 5 to pass the threshold, then one batch every 3 */
	assert_int_equal(trims, 1 + (N - 5) / 3);
	assert_int_equal(nlive, 1 + free_list_len(&p, NULL));
	rs_frag_release(&p, ch[N]);
	check_pool(&p);
	pool_fini(&p);
	assert_int_equal(nlive, 0);
}

/* RINGSOCK_RECLAIM=per-op: every chunk goes back to the OS as soon as it
 * falls free; only the current chunk stays. */
static void test_reclaim_per_op(void **state)
{
	(void)state;
	enum { N = 6 };
	rs_rt.cfg.v[RS_K_RECLAIM] = RS_RECLAIM_PER_OP;
	struct rs_frag_pool p;
	pool_init(&p, 32768);
	struct rs_chunk *ch[N + 1];
	carve_chunks(&p, ch, N + 1);
	for (int i = 0; i < N; i++) {
		rs_frag_release(&p, ch[i]);
		assert_false(is_live(ch[i]));
		assert_null(p.free);
		check_pool(&p);
	}
	assert_int_equal(nlive, 1);
	rs_frag_release(&p, ch[N]);
	pool_fini(&p);
	assert_int_equal(nlive, 0);
}

/* RINGSOCK_TX_CACHE: a socket's own chunk is made on first use, carved like
 * the current chunk, and refuses (NULL) a slice that does not fit instead
 * of starting another; it is reused in place once its slices are back, and
 * dropping it sends it to the free list only when no slice is alive. */
static void test_cached_chunk(void **state)
{
	(void)state;
	struct rs_frag_pool p;
	pool_init(&p, 4096);
	struct rs_chunk *cache = NULL, *c1, *c2, *c3;
	char *a = rs_frag_alloc_cached(&p, &cache, 3000, &c1);
	assert_non_null(cache);
	assert_ptr_equal(a, cache->data);
	assert_true(cache->cached);
	assert_null(rs_frag_alloc_cached(&p, &cache, 2000, &c2)); /* 1096 left */
	char *b = rs_frag_alloc_cached(&p, &cache, 1096, &c2);
	assert_ptr_equal(b, a + 3000);
	assert_null(p.cur); /* the pool's current chunk is not involved */
	rs_frag_release(&p, c1);
	rs_frag_release(&p, c2);
	assert_ptr_equal(rs_frag_alloc_cached(&p, &cache, 4096, &c3), cache->data); /* in place */
	rs_frag_cache_drop(&p, cache); /* a slice is alive: not free yet */
	assert_null(p.free);
	rs_frag_release(&p, c3);
	assert_ptr_equal(p.free, cache);
	check_pool(&p);
	pool_fini(&p);
	assert_int_equal(nlive, 0);
}

/* Zero-copy holds: while a hold is alive no byte of a chunk it holds is
 * carved again, even once every slice was released (the kernel may still
 * read them); the hold itself is 16-byte aligned inside a chunk of the
 * pool; releasing it makes the chunks reusable. */
static void test_zc_hold(void **state)
{
	(void)state;
	struct rs_frag_pool p;
	pool_init(&p, 4096);
	struct rs_chunk *c[3];
	char *s0 = rs_frag_alloc(&p, 4096, &c[0]); /* a whole chunk */
	char *s1 = rs_frag_alloc(&p, 1001, &c[1]); /* the start of the next */
	memset(s0, 'x', 4096);
	memset(s1, 'y', 1001);
	struct rs_frag_hold *h = rs_frag_hold_new(&p, c, 2);
	assert_non_null(h);
	assert_int_equal((uintptr_t)h % 16, 0);
	assert_int_equal(h->n, 2);
	assert_true((char *)h >= h->own->data &&
		    (char *)(h->chunk + h->n) <= h->own->data + h->own->size);
	/* the send's own completion: its slices go back */
	rs_frag_release(&p, c[0]);
	rs_frag_release(&p, c[1]);
	/* carve a lot: nothing lands on the held bytes */
	struct rs_chunk *more[8];
	for (int i = 0; i < 8; i++) {
		char *m = rs_frag_alloc(&p, 3000, &more[i]);
		assert_non_null(m);
		assert_true(m + 3000 <= s0 || m >= s0 + 4096);
		assert_true(m + 3000 <= s1 || m >= s1 + 1001);
		memset(m, 'z', 3000);
	}
	for (int k = 0; k < 4096; k++)
		assert_int_equal(s0[k], 'x');
	for (int k = 0; k < 1001; k++)
		assert_int_equal(s1[k], 'y');
	for (int i = 0; i < 8; i++)
		rs_frag_release(&p, more[i]);
	/* the notification: the held chunks are the pool's again */
	size_t free_before = free_list_len(&p, NULL);
	rs_frag_hold_release(&p, h);
	assert_int_equal(free_list_len(&p, NULL), free_before + 2);
	check_pool(&p);
	pool_fini(&p);
	assert_int_equal(nlive, 0);
}

/* RINGSOCK_HIGH_ORDER_ALLOC_DISABLE=1 (ring.c sets chunk_size 4096, the
 * kernel's order-0 page frags): every chunk malloc'ed is 4 KiB of data, a
 * send's slices are at most that (tcp_send.c splits them), and the pool
 * keeps its accounting through a long run of sends and completions. */
static void test_order0_chunks(void **state)
{
	(void)state;
	enum { CS = 4096, N = 64 };
	rs_rt.cfg.v[RS_K_RECLAIM_THRESHOLD] = 8 * CS;
	rs_rt.cfg.v[RS_K_RECLAIM_CHUNK] = 4 * CS;
	struct rs_frag_pool p;
	pool_init(&p, CS);
	struct rs_chunk *ch[N];
	char *sl[N];
	uint32_t len[N];
	unsigned seed = 1;
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < N; i++) {
			seed = seed * 1103515245 + 12345;
			len[i] = 1 + (seed >> 8) % CS;
			sl[i] = rs_frag_alloc(&p, len[i], &ch[i]);
			assert_non_null(sl[i]);
			assert_int_equal(ch[i]->size, CS);
			assert_true(sl[i] >= ch[i]->data && sl[i] + len[i] <= ch[i]->data + CS);
			memset(sl[i], (char)i, len[i]);
		}
		check_pool(&p);
		for (int i = 0; i < N; i++) {
			for (uint32_t k = 0; k < len[i]; k++)
				assert_int_equal(sl[i][k], (char)i);
			rs_frag_release(&p, ch[i]);
			check_pool(&p);
			assert_true(p.free_bytes <= 8 * CS);
		}
	}
	pool_fini(&p);
	assert_int_equal(nlive, 0);
}

/* A chunk the allocator refuses (even a page's): the allocation fails
 * cleanly (NULL, no current chunk, the live slices untouched); a chunk
 * that falls free is still reused without asking the allocator; once the
 * allocator gives again, so does the pool. */
static void test_refused_chunk(void **state)
{
	(void)state;
	struct rs_frag_pool p;
	pool_init(&p, 32768);
	struct rs_chunk *a, *b;
	char *s = rs_frag_alloc(&p, 32000, &a);
	memset(s, 'q', 32000);
	refuse_above = 64; /* no chunk of any size */
	assert_null(rs_frag_alloc(&p, 1000, &b));
	assert_true(refusals >= 2); /* the chunk, then the page */
	assert_null(p.cur);
	for (int k = 0; k < 32000; k++)
		assert_int_equal(s[k], 'q');
	check_pool(&p);
	rs_frag_release(&p, a); /* a falls free */
	assert_ptr_equal(p.free, a);
	unsigned r0 = refusals;
	assert_ptr_equal(rs_frag_alloc(&p, 1000, &b), a->data); /* no malloc */
	assert_int_equal(refusals, r0);
	assert_ptr_equal(b, a);
	/* a hold needs memory too: refused while the pool has none */
	struct rs_chunk *whole;
	assert_non_null(rs_frag_alloc(&p, 32768 - 1000, &whole));
	assert_null(rs_frag_hold_new(&p, &whole, 1));
	refuse_above = 0;
	struct rs_frag_hold *h = rs_frag_hold_new(&p, &whole, 1);
	assert_non_null(h);
	rs_frag_hold_release(&p, h);
	rs_frag_release(&p, b);
	rs_frag_release(&p, whole);
	check_pool(&p);
	pool_fini(&p);
	assert_int_equal(nlive, 0);
}

/* The order-0 fallback: when the allocator refuses a 32 KiB chunk, a slice
 * of at most a page gets a chunk of one page (RS_FRAG_PAGE) of its own,
 * carved like any current chunk; a larger slice is refused (NULL).  The
 * page chunk never goes to the free list (which must hold only chunk_size
 * chunks: a page reused for a 32 KiB slice would overflow): it is freed as
 * soon as it falls free, so the pool's accounting (live chunks = chunks
 * malloc'ed, free bytes = the free list's) holds throughout.  A free
 * 32 KiB chunk is still taken before any fallback, and once the allocator
 * gives again, new chunks are 32 KiB again. */
static void test_order0_fallback(void **state)
{
	(void)state;
	struct rs_frag_pool p;
	pool_init(&p, 32768);
	refuse_above = sizeof(struct rs_chunk) + RS_FRAG_PAGE; /* pages only */
	struct rs_chunk *c1, *c2, *c3, *c4;
	char *s1 = rs_frag_alloc(&p, 1000, &c1);
	assert_non_null(s1);
	assert_true(refusals > 0);
	assert_int_equal(c1->size, RS_FRAG_PAGE);
	assert_ptr_equal(p.cur, c1);
	assert_ptr_equal(s1, c1->data);
	assert_int_equal(p.live_chunks, 1);
	check_pool(&p);
	memset(s1, 'a', 1000);
	char *s2 = rs_frag_alloc(&p, 3096, &c2); /* the rest of the page */
	assert_ptr_equal(c2, c1);
	assert_ptr_equal(s2, s1 + 1000);
	memset(s2, 'b', 3096);
	/* more than a page: refused, and the page chunk stops being current
	 * (its slices keep it) */
	assert_null(rs_frag_alloc(&p, 5000, &c3));
	assert_null(p.cur);
	assert_int_equal(p.live_chunks, 1);
	assert_null(p.free);
	check_pool(&p);
	/* a second page chunk for the next slice */
	char *s3 = rs_frag_alloc(&p, RS_FRAG_PAGE, &c3);
	assert_non_null(s3);
	assert_ptr_not_equal(c3, c1);
	assert_int_equal(c3->size, RS_FRAG_PAGE);
	assert_int_equal(p.live_chunks, 2);
	for (int k = 0; k < 1000; k++)
		assert_int_equal(s1[k], 'a');
	for (int k = 0; k < 3096; k++)
		assert_int_equal(s2[k], 'b');
	/* the first page chunk falls free: freed, not kept */
	rs_frag_release(&p, c1);
	rs_frag_release(&p, c2);
	assert_false(is_live(c1));
	assert_null(p.free);
	assert_int_equal(p.free_bytes, 0);
	assert_int_equal(p.live_chunks, 1);
	check_pool(&p);
	/* a hold is carved from a page chunk too */
	struct rs_frag_hold *h = rs_frag_hold_new(&p, &c3, 1);
	assert_non_null(h);
	assert_int_equal(h->own->size, RS_FRAG_PAGE);
	assert_ptr_not_equal(h->own, c3);
	rs_frag_release(&p, c3); /* the send's completion; the hold keeps c3 */
	assert_true(is_live(c3));
	rs_frag_hold_release(&p, h); /* c3 falls free: freed */
	assert_false(is_live(c3));
	check_pool(&p);
	/* the allocator gives again: a 32 KiB chunk, which goes to the free
	 * list when it falls free, and is taken again before any malloc */
	refuse_above = 0;
	char *s4 = rs_frag_alloc(&p, RS_FRAG_PAGE + 1, &c4); /* not in the page left */
	assert_non_null(s4);
	assert_int_equal(c4->size, 32768);
	struct rs_chunk *big = c4;
	assert_non_null(rs_frag_alloc(&p, 32768, &c1)); /* big is full: another */
	rs_frag_release(&p, c4);
	assert_ptr_equal(p.free, big);
	check_pool(&p);
	refuse_above = sizeof(struct rs_chunk) + RS_FRAG_PAGE;
	unsigned r0 = refusals;
	assert_non_null(rs_frag_alloc(&p, 100, &c2)); /* c1 is full: big, no malloc */
	assert_ptr_equal(c2, big);
	assert_int_equal(refusals, r0);
	rs_frag_release(&p, c1);
	rs_frag_release(&p, c2);
	check_pool(&p);
	pool_fini(&p);
	assert_int_equal(nlive, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_slices_carved_in_place, setup),
		cmocka_unit_test_setup(test_chunks_reused, setup),
		cmocka_unit_test_setup(test_reclaim_coalesced, setup),
		cmocka_unit_test_setup(test_reclaim_per_op, setup),
		cmocka_unit_test_setup(test_cached_chunk, setup),
		cmocka_unit_test_setup(test_zc_hold, setup),
		cmocka_unit_test_setup(test_order0_chunks, setup),
		cmocka_unit_test_setup(test_refused_chunk, setup),
		cmocka_unit_test_setup(test_order0_fallback, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* fdtab.c - process-wide table from fd number to socket record.
 *
 * Slots hold a record index + 1 (0: not a tracked socket).  Slots and
 * records live in chunks that are mmap'ed on first use and never unmapped,
 * so lookups are lock-free (two loads) and a stale pointer is never a
 * dangling one.  Records are reference counted: one reference per fd slot
 * (dup shares the record) plus one per user that took rs_fd_get().
 */
#include <string.h>
#include <sys/mman.h>

#include "internal.h"

#define SLOT_SHIFT RS_SLOT_SHIFT
#define SLOTS_PER_CHUNK RS_SLOTS_PER_CHUNK
#define SLOT_DIR RS_SLOT_DIR
#define REC_SHIFT RS_REC_SHIFT
#define RECS_PER_CHUNK RS_RECS_PER_CHUNK
#define REC_DIR RS_REC_DIR

_Atomic(atomic_uint *) rs_slot_dir[SLOT_DIR];
_Atomic(struct rs_sock *) rs_rec_dir[REC_DIR];
#define slot_dir rs_slot_dir
#define rec_dir rs_rec_dir
unsigned rs_fork_gen;
static atomic_uint rec_next;        /* records ever carved */
static _Atomic uint64_t free_head;  /* tag << 32 | (index + 1) */
static atomic_size_t live;

static void *chunk_alloc(size_t bytes)
{
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return m == MAP_FAILED ? NULL : m;
}

/* Install a zeroed chunk at *where unless another thread got there first. */
static void *chunk_get(_Atomic(void *) *where, size_t bytes)
{
	void *c = atomic_load_explicit(where, memory_order_acquire);
	if (rs_likely(c != NULL))
		return c;
	void *m = chunk_alloc(bytes);
	if (!m)
		return NULL;
	void *expect = NULL;
	if (!atomic_compare_exchange_strong(where, &expect, m)) {
		munmap(m, bytes);
		return expect;
	}
	return m;
}

static inline atomic_uint *slot_of(int fd, int create)
{
	if (rs_unlikely(fd < 0 || (unsigned)fd >= SLOT_DIR * SLOTS_PER_CHUNK))
		return NULL;
	atomic_uint *chunk = atomic_load_explicit(&slot_dir[(unsigned)fd >> SLOT_SHIFT],
						  memory_order_acquire);
	if (!chunk) {
		if (!create)
			return NULL;
		chunk = chunk_get((_Atomic(void *) *)&slot_dir[(unsigned)fd >> SLOT_SHIFT],
				  SLOTS_PER_CHUNK * sizeof(atomic_uint));
		if (!chunk)
			return NULL;
	}
	return &chunk[(unsigned)fd & (SLOTS_PER_CHUNK - 1)];
}

static inline struct rs_sock *rec_at(uint32_t index)
{
	struct rs_sock *c = atomic_load_explicit(&rec_dir[index >> REC_SHIFT], memory_order_acquire);
	return &c[index & (RECS_PER_CHUNK - 1)];
}

static struct rs_sock *rec_alloc(void)
{
	uint64_t head = atomic_load(&free_head);
	while ((uint32_t)head) {
		struct rs_sock *s = rec_at((uint32_t)head - 1);
		uint64_t next = ((head >> 32) + 1) << 32 |
				__atomic_load_n(&s->next_free, __ATOMIC_RELAXED);
		if (atomic_compare_exchange_weak(&free_head, &head, next))
			return s;
	}
	uint32_t idx = atomic_fetch_add(&rec_next, 1);
	if (idx >= REC_DIR * RECS_PER_CHUNK) {
		atomic_fetch_sub(&rec_next, 1);
		return NULL;
	}
	struct rs_sock *chunk = chunk_get((_Atomic(void *) *)&rec_dir[idx >> REC_SHIFT],
					  RECS_PER_CHUNK * sizeof(struct rs_sock));
	if (!chunk)
		return NULL; /* the index is lost; only under memory exhaustion */
	struct rs_sock *s = &chunk[idx & (RECS_PER_CHUNK - 1)];
	s->index = idx;
	return s;
}

static void rec_free(struct rs_sock *s)
{
	uint64_t head = atomic_load(&free_head);
	do {
		__atomic_store_n(&s->next_free, (uint32_t)head, __ATOMIC_RELAXED);
	} while (!atomic_compare_exchange_weak(&free_head, &head,
					       ((head >> 32) + 1) << 32 | (s->index + 1)));
	atomic_fetch_sub(&live, 1);
}

struct rs_sock *rs_fd_get(int fd)
{
	atomic_uint *slot = slot_of(fd, 0);
	if (!slot)
		return NULL;
	for (;;) {
		uint32_t v = atomic_load_explicit(slot, memory_order_acquire);
		if (!v)
			return NULL;
		struct rs_sock *s = rec_at(v - 1);
		int r = atomic_load(&s->refs);
		while (r > 0 && !atomic_compare_exchange_weak(&s->refs, &r, r + 1))
			;
		if (r <= 0)
			continue; /* being freed: the slot has changed or will */
		if (atomic_load_explicit(slot, memory_order_acquire) == v)
			return s;
		rs_sock_put(s);
	}
}

void rs_sock_put(struct rs_sock *s)
{
	if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
		rec_free(s);
}

static void slot_replace(atomic_uint *slot, uint32_t v)
{
	if (v)
		atomic_fetch_add(&rec_at(v - 1)->nfds, 1);
	uint32_t old = atomic_exchange_explicit(slot, v, memory_order_acq_rel);
	if (old) {
		atomic_fetch_sub(&rec_at(old - 1)->nfds, 1);
		rs_sock_put(rec_at(old - 1));
	}
}

int rs_fd_track(int fd, int domain, int type, int protocol)
{
	atomic_uint *slot = slot_of(fd, 1);
	struct rs_sock *s = slot ? rec_alloc() : NULL;
	if (!s) {
		if (slot)
			slot_replace(slot, 0);
		return -1;
	}
	s->domain = domain;
	s->type = type;
	s->protocol = protocol;
	s->pt_reason = rs_rt.pt_reason;
	s->nonblock = 0;
	s->conn_state = RS_CONN_UNKNOWN;
	s->rcvbuf = s->sndbuf = 0;
	s->rcvlowat = s->kernel_lowat = 0;
	s->timeo_known = 0;
	s->born_gen = __atomic_load_n(&rs_fork_gen, __ATOMIC_RELAXED);
	s->born_pid = rs_rt.pid;
	s->no_engine = 0;
	s->urgent = 0;
	s->shut_rd = s->shut_wr = 0;
	s->passed = 0;
	s->sent_kernel = s->pre_reads = 0;
	s->err_kept = 0;
	s->pt_counted = 0;
	s->pt_counted_blocking = 0;
	s->tx_run = s->pingpong = 0;
	s->regs = NULL;
	atomic_store(&s->eng, NULL);
	atomic_store(&s->nfds, 0);
	atomic_fetch_add(&s->gen, 1);
	atomic_store(&s->refs, 1);
	atomic_fetch_add(&live, 1);
	slot_replace(slot, s->index + 1);
	rs_fdseen_add(fd); /* a socket: not an io_uring */
	return 0;
}

void rs_fd_forget(int fd)
{
	atomic_uint *slot = slot_of(fd, 0);
	if (slot && atomic_load_explicit(slot, memory_order_relaxed))
		slot_replace(slot, 0);
}

void rs_fd_dup(int oldfd, int newfd)
{
	struct rs_sock *s = rs_fd_get(oldfd);
	atomic_uint *slot = slot_of(newfd, s != NULL);
	if (!slot) {
		if (s)
			rs_sock_put(s);
		return;
	}
	/* The reference taken by rs_fd_get becomes the new slot's. */
	slot_replace(slot, s ? s->index + 1 : 0);
}

void rs_fd_forget_range(unsigned first, unsigned last)
{
	if (last >= SLOT_DIR * SLOTS_PER_CHUNK)
		last = SLOT_DIR * SLOTS_PER_CHUNK - 1;
	for (unsigned fd = first; fd <= last;) {
		if (!atomic_load(&slot_dir[fd >> SLOT_SHIFT])) {
			unsigned next = ((fd >> SLOT_SHIFT) + 1) << SLOT_SHIFT;
			if (next <= fd)
				break;
			fd = next;
			continue;
		}
		rs_fd_forget((int)fd);
		if (fd == last)
			break;
		fd++;
	}
}

size_t rs_fdtab_live(void)
{
	return atomic_load(&live);
}

/* ---- pass-through reasons ------------------------------------------------------ */

void rs_sock_count_passthrough(struct rs_sock *s, int reason)
{
	if (s->pt_counted || (reason == RINGSOCK_PT_BLOCKING && s->pt_counted_blocking))
		return;
	s->pt_counted = 1;
	s->pt_reason = reason;
	rs_stat_add(RS_C_PASSTHROUGH + reason, 1);
}

void rs_sock_passthrough(struct rs_sock *s, int reason)
{
	if (!atomic_load(&s->eng))
		s->no_engine = 1;
	rs_sock_count_passthrough(s, reason);
}

/* fdseen.c - the descriptors the library has seen: made by the engine,
 * made by a call the library interposed, or checked in a listing of
 * /proc/self/fd (foreign.c).  A bit per descriptor, set when seen, dropped
 * when the library sees it closed or replaced, and the number of bits set,
 * which foreign.c compares with the number of open descriptors: while they
 * are equal, nothing the library did not see is open.
 *
 * A descriptor closed behind the library's back (a raw close system call)
 * leaves a stale bit until rs_fdseen_drop_closed, which foreign.c runs when
 * the count of bits exceeds the count of open descriptors.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "internal.h"
#include "locks.h"
#include "sys.h"

#define MAX_FDS (1u << 20)

static _Atomic(uint64_t) *bits; /* mmap'ed once (no malloc: a vfork child closes) */
static size_t nwords;           /* set before bits is published (relaxed atomics: two
                                 * threads may both set it, to the same value) */
static atomic_long nseen;       /* bits set */
static atomic_int making;       /* the engine's descriptors being made (internal.h) */
static atomic_uint begun;       /* makings begun, ever */

void rs_fdseen_making(int delta)
{
	if (delta > 0)
		atomic_fetch_add(&begun, 1);
	atomic_fetch_add(&making, delta);
}

int rs_fdseen_making_now(void)
{
	return atomic_load(&making);
}

unsigned rs_fdseen_makings_begun(void)
{
	return atomic_load(&begun);
}

/* The thread that was making one is not in the child; the descriptor it
 * made is open there without a bit (foreign.c says what follows). */
void rs_fdseen_after_fork_child(void)
{
	atomic_store(&making, 0);
}

int rs_fdseen_ready(void)
{
	if (rs_likely(__atomic_load_n(&bits, __ATOMIC_ACQUIRE) != NULL))
		return 1;
	struct rlimit rl;
	size_t n = MAX_FDS;
	if (rs_syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) == 0 && rl.rlim_max < MAX_FDS)
		n = rl.rlim_max < 1024 ? 1024 : (size_t)rl.rlim_max;
	size_t w = (n + 63) / 64;
	void *m = mmap(NULL, w * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	/* Two threads may map at once: one map wins, the other goes.  nwords
	 * is the same for both (the hard limit is read once per map). */
	_Atomic(uint64_t) *expect = NULL;
	__atomic_store_n(&nwords, w, __ATOMIC_RELAXED);
	if (!__atomic_compare_exchange_n(&bits, &expect, (_Atomic(uint64_t) *)m, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		munmap(m, w * 8);
	return 1;
}

void rs_fdseen_add(int fd)
{
	if (fd < 0 || !rs_fdseen_ready() || (size_t)fd / 64 >= RS_LOAD(nwords))
		return;
	uint64_t m = 1ull << (fd % 64);
	if (!(atomic_fetch_or(&bits[fd / 64], m) & m))
		atomic_fetch_add(&nseen, 1);
}

void rs_fdseen_gone(int fd)
{
	if (fd < 0 || !__atomic_load_n(&bits, __ATOMIC_ACQUIRE) || (size_t)fd / 64 >= RS_LOAD(nwords))
		return;
	uint64_t m = 1ull << (fd % 64);
	if (atomic_fetch_and(&bits[fd / 64], ~m) & m)
		atomic_fetch_sub(&nseen, 1);
}

void rs_fdseen_range_gone(unsigned first, unsigned last)
{
	if (!__atomic_load_n(&bits, __ATOMIC_ACQUIRE))
		return;
	for (size_t w = first / 64; w < RS_LOAD(nwords) && w <= last / 64; w++) {
		uint64_t m = ~0ull;
		if (w == first / 64)
			m &= ~0ull << (first % 64);
		if (w == last / 64 && last % 64 != 63)
			m &= (1ull << (last % 64 + 1)) - 1;
		uint64_t old = atomic_fetch_and(&bits[w], ~m);
		atomic_fetch_sub(&nseen, __builtin_popcountll(old & m));
	}
}

int rs_fdseen_has(int fd)
{
	return fd >= 0 && __atomic_load_n(&bits, __ATOMIC_ACQUIRE) && (size_t)fd / 64 < RS_LOAD(nwords) &&
	       (atomic_load(&bits[fd / 64]) & (1ull << (fd % 64)));
}

int rs_fdseen_next_unseen(int fd)
{
	if (fd < 0 || !__atomic_load_n(&bits, __ATOMIC_ACQUIRE))
		return -1;
	for (size_t w = (size_t)fd / 64; w < RS_LOAD(nwords); w++) {
		uint64_t free = ~atomic_load(&bits[w]);
		if (w == (size_t)fd / 64)
			free &= ~0ull << (fd % 64);
		if (free)
			return (int)(w * 64 + (size_t)__builtin_ctzll(free));
	}
	return -1;
}

long rs_fdseen_count(void)
{
	return atomic_load(&nseen);
}

/* Drop the bits of descriptors that are no longer open (closed behind the
 * library's back): F_GETFD on each one seen. */
void rs_fdseen_drop_closed(void)
{
	if (!__atomic_load_n(&bits, __ATOMIC_ACQUIRE))
		return;
	for (size_t w = 0; w < RS_LOAD(nwords); w++) {
		uint64_t v = atomic_load(&bits[w]);
		while (v) {
			int b = __builtin_ctzll(v);
			v &= v - 1;
			int fd = (int)(w * 64 + (size_t)b);
			if (rs_syscall(SYS_fcntl, fd, F_GETFD, 0) < 0)
				rs_fdseen_gone(fd);
		}
	}
}

/* fdguard.c - descriptors the engine owns (ring fds, the stats file).
 *
 * They are moved to high numbers, away from the ones a program expects to
 * get from socket()/open(), and the preload layer hides them: close() on
 * one answers EBADF as if it were not open, close_range() skips them, and
 * dup2()/dup3() onto one first moves the engine's fd elsewhere.
 */
#include <fcntl.h>
#include <limits.h>
#include <sys/resource.h>

#include "internal.h"
#include "sys.h"

static atomic_int engine_fds[RS_MAX_ENGINE_FDS]; /* fd + 1, 0 = free */
atomic_int rs_fdguard_lowest = INT_MAX;           /* lowest engine fd, for the fast check */
static int *owners[RS_MAX_ENGINE_FDS];             /* where the engine keeps it */

/* The same set by number, for the check every descriptor call makes once
 * engine fds sit among the program's (more of them than fit above the
 * high base).  Numbers past it are looked up in the slots.  (128 KiB of
 * zeroes: only the pages that hold a set bit are ever touched.) */
#define BITS (1 << 20)
#define WORD (8 * sizeof(unsigned long))
static _Atomic unsigned long bits[BITS / WORD];

static void mark(int fd, int on)
{
	if (fd < 0 || fd >= BITS)
		return;
	unsigned long m = 1UL << (fd % WORD);
	if (on)
		atomic_fetch_or(&bits[fd / WORD], m);
	else
		atomic_fetch_and(&bits[fd / WORD], ~m);
}

/* How many engine fds fit at the top, below RLIMIT_NOFILE; the rest take
 * the lowest free numbers. */
#define HIGH_ROOM 64

static int high_base(void)
{
	struct rlimit rl;
	if (rs_syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1000;
	long cur = rl.rlim_cur > (1u << 20) ? (1 << 20) : (long)rl.rlim_cur;
	if (cur >= 256)
		return (int)(cur - HIGH_ROOM);
	return (int)(cur / 2);
}

/* dup fd to the lowest free number >= a high base, close-on-exec. */
static int move_high(int fd)
{
	long nfd = rs_syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, high_base());
	if (nfd < 0)
		nfd = rs_syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, 3);
	return (int)nfd;
}

/* Recompute the lowest engine fd after a change. */
static void update_lowest(void)
{
	int low = INT_MAX;
	for (int i = 0; i < RS_MAX_ENGINE_FDS; i++) {
		int v = atomic_load(&engine_fds[i]);
		if (v && v - 1 < low)
			low = v - 1;
	}
	atomic_store(&rs_fdguard_lowest, low);
}

int rs_fdguard_adopt(int fd, int *owner)
{
	int nfd = move_high(fd);
	if (nfd < 0)
		return nfd;
	rs_sys_close(fd);
	rs_fdseen_gone(fd);
	rs_fdseen_add(nfd);
	for (int i = 0; i < RS_MAX_ENGINE_FDS; i++) {
		int expect = 0;
		if (atomic_compare_exchange_strong(&engine_fds[i], &expect, nfd + 1)) {
			mark(nfd, 1);
			__atomic_store_n(&owners[i], owner, __ATOMIC_RELEASE);
			__atomic_store_n(owner, nfd, __ATOMIC_RELEASE);
			update_lowest();
			return nfd;
		}
	}
	rs_warn("more than %d engine descriptors; fd %d is not protected", RS_MAX_ENGINE_FDS, nfd);
	__atomic_store_n(owner, nfd, __ATOMIC_RELEASE);
	return nfd;
}

int rs_fdguard_is_engine_slow(int fd)
{
	if (fd < 0)
		return 0;
	if (fd < BITS)
		return (atomic_load_explicit(&bits[fd / WORD], memory_order_relaxed) >> (fd % WORD)) & 1;
	for (int i = 0; i < RS_MAX_ENGINE_FDS; i++)
		if (atomic_load_explicit(&engine_fds[i], memory_order_relaxed) == fd + 1)
			return 1;
	return 0;
}

void rs_fdguard_release(int fd)
{
	for (int i = 0; i < RS_MAX_ENGINE_FDS; i++) {
		if (atomic_load(&engine_fds[i]) != fd + 1)
			continue;
		/* forget the owner before the slot is free: another thread may
		 * take the slot at once and record its own */
		__atomic_store_n(&owners[i], NULL, __ATOMIC_RELEASE);
		mark(fd, 0);
		atomic_store(&engine_fds[i], 0);
		break;
	}
	update_lowest();
	rs_sys_close(fd);
	rs_fdseen_gone(fd);
}

int rs_fdguard_evict(int fd)
{
	for (int i = 0; i < RS_MAX_ENGINE_FDS; i++) {
		if (atomic_load(&engine_fds[i]) != fd + 1)
			continue;
		rs_fdseen_making(1); /* (foreign.c: nfd is not the program's) */
		int nfd = move_high(fd);
		if (nfd < 0) {
			rs_fdseen_making(-1);
			return nfd;
		}
		/* The engine keeps using the slot's new number; the old one is
		 * about to become the application's. */
		mark(nfd, 1);
		atomic_store(&engine_fds[i], nfd + 1);
		mark(fd, 0);
		int *o = __atomic_load_n(&owners[i], __ATOMIC_ACQUIRE);
		if (o)
			__atomic_store_n(o, nfd, __ATOMIC_RELEASE);
		update_lowest();
		rs_sys_close(fd);
		rs_fdseen_add(nfd);
		rs_fdseen_gone(fd);
		rs_fdseen_making(-1);
		return 0;
	}
	return 0;
}

/* Ascending, in place (no malloc: a vfork child's close_range lists them). */
static void sort_numbers(int *v, int n)
{
	for (int gap = n / 2; gap > 0; gap /= 2)
		for (int i = gap; i < n; i++)
			for (int j = i; j >= gap && v[j - gap] > v[j]; j -= gap) {
				int t = v[j];
				v[j] = v[j - gap];
				v[j - gap] = t;
			}
}

int rs_fdguard_list(int *out, int max)
{
	int n = 0;
	for (int i = 0; i < RS_MAX_ENGINE_FDS && n < max; i++) {
		int v = atomic_load(&engine_fds[i]);
		if (!v)
			continue;
		out[n++] = v - 1;
	}
	sort_numbers(out, n);
	return n;
}

/* foreign.c - io_urings of the program's that the library never saw made.
 *
 * A program's own io_uring can read a socket (IORING_OP_RECV), poll it
 * (POLL_ADD) or add it to an epoll set (IORING_OP_EPOLL_CTL, as libuv
 * does), and the engine's read-ahead would take the bytes those requests
 * wait for.  A ring set up through libc's syscall() is seen there
 * (preload/syscall.c); liburing 2.2 and later make io_uring_setup, mmap
 * and io_uring_enter with their own syscall instructions, which no
 * preload can interpose.  So before a socket is armed the engine looks at
 * the process's descriptors for an anon_inode:[io_uring] that is not one
 * of its own (fdguard.c tells which are).
 *
 * Looking is a directory listing of /proc/self/fd, so it is kept for when
 * something the library did not see can have appeared: fdseen.c keeps a
 * bit for every descriptor the library made, saw made or checked, dropped
 * when it sees it closed.  Since Linux 6.2, the st_size of a stat of
 * /proc/self/fd is the number of open descriptors; while it equals the
 * number of bits, every open descriptor is one the library checked, and
 * there is nothing to list.  When there are more open descriptors than
 * bits, the few the library did not see are looked for by number first:
 * the kernel gives a new descriptor the lowest free number, so they sit
 * among the first numbers without a bit, and F_GETFD tells which of those
 * are open.  A listing (counted: fd_listings) is made only when that does
 * not find them all within PROBE_BUDGET numbers.  nginx opens the file it
 * serves for each request, so each arm at a send found one descriptor
 * unseen, and a listing of a /proc/self/fd of 260 descriptors costs
 * about 130 us here: the arms of 256 new connections held up all the
 * others for tens of milliseconds (bench: nginx_c256's p99).  On an older
 * kernel (st_size 0) every arm lists.  A listing also drops the bits of
 * descriptors closed behind the library's back (a raw close system call,
 * a close inside the C library other than fclose, pclose and closedir,
 * which preload/close.c interposes), once there are more bits than open
 * descriptors.  Until then such a stale bit hides one unseen descriptor
 * from the count, from the listing and the look by number alike.
 *
 * The count is read through an O_PATH descriptor of the directory that the
 * engine keeps (fdguard hides it from the program): a stat of the path
 * walks /proc/self each time, about four times the cost (0.6 against
 * 2.3 us here), and a connection per request makes an arm per request.  A
 * fork child reopens it, since the parent's names the parent's table.
 *
 * Without /proc the engine cannot know, so it reports a ring found: the
 * rule is that where the engine cannot know, it does not read ahead.
 */
#define _GNU_SOURCE 1 /* (O_PATH, AT_EMPTY_PATH) */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "sys.h"

struct kdirent { /* getdents64's record */
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

static int found;              /* a foreign ring was seen: final */
static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static int kept = -1;          /* O_PATH fd of /proc/<pid>/fd, fdguard's; -1 none yet */
static int kept_failed;        /* it could not be opened: stat the path */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER; /* leaf */

/* The number of open descriptors, 0 when the kernel does not say (before
 * 6.2), -1 without /proc. */
static long open_count(void)
{
	struct stat st;
	int fd = __atomic_load_n(&kept, __ATOMIC_ACQUIRE);
	if (rs_unlikely(fd < 0) && !__atomic_load_n(&kept_failed, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&kept_lock);
		if (kept < 0 && !kept_failed) {
			long nfd = rs_syscall(SYS_openat, AT_FDCWD, "/proc/self/fd",
					      O_PATH | O_DIRECTORY | O_CLOEXEC);
			long a = nfd < 0 ? nfd : rs_fdguard_adopt((int)nfd, &kept);
			if (a < 0) {
				if (nfd >= 0)
					rs_sys_close((int)nfd);
				/* (at the descriptor limit: tried again next time) */
				kept_failed = a != -EMFILE && a != -ENFILE;
			}
		}
		fd = kept;
		pthread_mutex_unlock(&kept_lock);
	}
	if (fd >= 0 && rs_syscall(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH) == 0)
		return (long)st.st_size;
	if (rs_syscall(SYS_newfstatat, AT_FDCWD, "/proc/self/fd", &st, 0) < 0)
		return -1;
	return (long)st.st_size;
}

static int is_uring(int dirfd, const char *name)
{
	char link[32];
	long n = rs_syscall(SYS_readlinkat, dirfd, name, link, sizeof(link) - 1);
	if (n < 0)
		return 0;
	link[n] = 0;
	return strcmp(link, "anon_inode:[io_uring]") == 0;
}

/* Is fd, an io_uring, the program's?  The engine's own are known from the
 * moment fdguard adopts them (rs_fdseen_add); one being made is not yet
 * (rs_fdseen_making): wait for the making to end (it takes no lock the
 * caller holds) and look again.  A making can also begin while we look: adopting a ring
 * closes its first number, and the next thread's io_uring_setup gets that
 * number at once (80 threads making rings: diff.engine_many_threads).  So
 * a ring seen is the program's only if no making began meanwhile. */
static int foreign_ring(int dirfd, const char *name, int fd)
{
	for (;;) {
		if (rs_fdseen_has(fd))
			return 0;
		unsigned b = rs_fdseen_makings_begun();
		if (!rs_fdseen_making_now()) {
			int ring = is_uring(dirfd, name) && !rs_fdseen_has(fd);
			if (!ring || (rs_fdseen_makings_begun() == b && !rs_fdseen_making_now()))
				return ring;
		}
		rs_syscall(SYS_sched_yield, 0);
	}
}

/* List /proc/self/fd: 1 if a foreign ring is open (its number in *which),
 * 0 if not, -1 if the listing failed.  Scan lock held. */
static int scan(int *which)
{
	int dirfd = (int)rs_syscall(SYS_openat, AT_FDCWD, "/proc/self/fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd == -EMFILE || dirfd == -ENFILE || dirfd == -ENOMEM)
		return -2; /* no descriptor free now: look again at the next arm */
	if (dirfd < 0)
		return -1;
	int res = 0;
	char buf[4096];
	for (;;) {
		long n = rs_syscall(SYS_getdents64, dirfd, buf, sizeof(buf));
		if (n < 0) {
			res = -1;
			break;
		}
		if (n == 0)
			break;
		for (long off = 0; off < n;) {
			struct kdirent *d = (struct kdirent *)(buf + off);
			off += d->d_reclen;
			if (d->d_name[0] < '0' || d->d_name[0] > '9')
				continue;
			int fd = atoi(d->d_name);
			if (fd == dirfd)
				continue;
			if (rs_fdseen_has(fd))
				continue;
			if (foreign_ring(dirfd, d->d_name, fd)) {
				*which = fd;
				res = 1;
				goto out;
			}
			rs_fdseen_add(fd);
		}
	}
out:
	rs_sys_close(dirfd);
	return res;
}

/* The open descriptors the library did not see, looked for by number
 * among the first PROBE_BUDGET numbers without a bit; unseen: how many
 * the count says there are.  1 if one is a foreign ring (its number in
 * *which), 0 if all were found and none is, PROBE_LIST if not all were
 * found (the listing decides).  Scan lock held. */
#define PROBE_BUDGET 64
#define PROBE_LIST (-3)
static int probe(long unseen, int *which)
{
	int dirfd = __atomic_load_n(&kept, __ATOMIC_ACQUIRE);
	if (dirfd < 0)
		return PROBE_LIST;
	int fd = 0;
	for (int left = PROBE_BUDGET; unseen > 0 && left > 0; left--, fd++) {
		fd = rs_fdseen_next_unseen(fd);
		if (fd < 0)
			return PROBE_LIST; /* past the bitmap */
		if (rs_syscall(SYS_fcntl, fd, F_GETFD, 0) < 0)
			continue; /* not open */
		char name[12], *p = name + sizeof(name) - 1;
		*p = 0;
		unsigned v = (unsigned)fd;
		do
			*--p = (char)('0' + v % 10);
		while (v /= 10);
		if (foreign_ring(dirfd, p, fd)) {
			*which = fd;
			return 1;
		}
		rs_fdseen_add(fd);
		unseen--;
	}
	return unseen > 0 ? PROBE_LIST : 0;
}

/* In a fork child: the thread that held the lock, or was making a ring,
 * is not there.  A ring it was making is open in the child without being
 * the child engine's: the child's next look counts it as the program's,
 * and its sockets stay the kernel's (the safe way to be wrong). */
void rs_foreign_after_fork_child(void)
{
	pthread_mutex_init(&scan_lock, NULL);
	pthread_mutex_init(&kept_lock, NULL);
	rs_fdseen_after_fork_child();
	if (kept >= 0)
		rs_fdguard_release(kept); /* the parent's table: reopened at the next look */
	kept = -1;
	kept_failed = 0;
}

int rs_foreign_uring_found(void)
{
	if (rs_likely(__atomic_load_n(&found, __ATOMIC_ACQUIRE) == 0)) {
		long open = open_count();
		if (open > 0 && open == rs_fdseen_count())
			return 0;
	} else {
		return 1;
	}
	if (!rs_fdseen_ready())
		return 0; /* no memory for the bitmap: (nothing better to do) */
	pthread_mutex_lock(&scan_lock);
	int which = -1;
	int r = 1;
	if (!found) {
		/* (counted again under the lock: another look may have found
		 * them meanwhile) */
		long open = open_count();
		long unseen = open - rs_fdseen_count();
		r = open <= 0 || unseen < 0 ? PROBE_LIST : unseen == 0 ? 0 : probe(unseen, &which);
		if (r == PROBE_LIST) {
			rs_stat_add(RS_C_FD_LISTINGS, 1);
			r = scan(&which);
		}
	}
	if (r == 0 && open_count() > 0 && open_count() < rs_fdseen_count())
		rs_fdseen_drop_closed();
	if (r == -2) {
		/* The program holds every descriptor its limit allows (or the
		 * system's): this socket is not armed, the next arm looks again. */
		pthread_mutex_unlock(&scan_lock);
		return RS_FOREIGN_UNKNOWN;
	}
	if (r != 0 && !found) {
		__atomic_store_n(&found, 1, __ATOMIC_RELEASE);
		if (r < 0)
			rs_warn("/proc/self/fd cannot be listed: an io_uring the program made without "
				"libc could not be seen, so no socket is served by the engine");
		else
			rs_info("the program has an io_uring the library did not see made "
				"(fd %d, by its own system calls): its sockets leave the engine", which);
	}
	pthread_mutex_unlock(&scan_lock);
	return r != 0;
}

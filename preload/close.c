/* close.c - close, dup, dup2, dup3, close_range, closefrom, and the C
 * library's own closes (fclose, pclose, closedir) and fdopen.
 *
 * dup'ed descriptors share one socket record.  The engine's own
 * descriptors are invisible to the application: close() on one fails with
 * EBADF as if it were not open, close_range() skips them, and dup2()/dup3()
 * onto one moves the engine's descriptor out of the way first.
 *
 * fclose, pclose and closedir close their descriptor with the C library's
 * internal close, which no interposed call sees: without them a socket
 * given to stdio would keep its record after its close, and the look for
 * a program's own io_uring (foreign.c) would count a closed descriptor as
 * one it checked, and miss a ring made with that number next.  fdopen
 * gives a socket to stdio, whose reads and writes are the C library's
 * internal ones: the socket leaves the engine (dup).
 */
#include "preload.h"

static int fcntl_valid(int fd)
{
	return rs_syscall(SYS_fcntl, fd, F_GETFD, 0) >= 0;
}

/* A vfork child closes in its own descriptor table, but runs in the
 * parent's memory: the library's records of which descriptors are open
 * are the parent's, and stay as they are. */
static int records_mine(void)
{
	return !rs_in_vfork_child();
}

/* What a close of fd does before the descriptor goes (on: rs_enter). */
static void before_close(int on, int fd)
{
	if (on) {
		struct rs_sock *s = rs_fd_peek(fd);
		rs_count_call(s != NULL, RINGSOCK_FAM_CLOSE);
		/* A socket's close is seen (an end of stream, a reset): what
		 * this thread queued before it goes first.  (Not for files: a
		 * server that closes the file it served after queuing the
		 * response would pay a system call per request.) */
		if (s)
			rs_ring_flush_own_tx();
		if (rs_engine_on)
			rs_engine_before_close(s, fd);
		/* Forget first: a racing socket() that gets this number back
		 * must not lose its new record to us. */
		if (s)
			rs_fd_forget(fd);
	}
	if (records_mine()) {
		rs_kw_fd_gone(fd);
		rs_fdseen_gone(fd);
	}
}

RS_EXPORT int close(int fd)
{
	int on = rs_enter();
	/* Engine descriptors exist even in pass-through mode (the stats file). */
	if (rs_unlikely(rs_fdguard_is_engine(fd))) {
		errno = EBADF;
		return -1;
	}
	before_close(on, fd);
	return REAL(close)(fd);
}

/* The C library closes fd itself (fd < 0: a stream with no descriptor).
 * Its bit in fdseen goes after the close too: a look for a foreign ring
 * between the two would mark the closing descriptor checked again.
 * (Dropping a bit at worst costs one more look.) */
static void after_libc_close(int fd)
{
	if (fd >= 0 && records_mine())
		rs_fdseen_gone(fd);
}

/* fclose or pclose (real) of the stream f. */
static int stream_close(int (*real)(FILE *), FILE *f)
{
	int on = rs_enter();
	int fd = f ? fileno(f) : -1;
	if (fd >= 0)
		before_close(on, fd);
	int r = real(f);
	after_libc_close(fd);
	return r;
}

RS_EXPORT int fclose(FILE *f)
{
	return stream_close(REAL(fclose), f);
}

RS_EXPORT int pclose(FILE *f)
{
	return stream_close(REAL(pclose), f);
}

RS_EXPORT int closedir(DIR *d)
{
	int on = rs_enter();
	int fd = dirfd(d);
	if (fd >= 0)
		before_close(on, fd);
	int r = REAL(closedir)(d);
	after_libc_close(fd);
	return r;
}

/* The engine serves a socket through one descriptor only. */
static void before_dup(struct rs_sock *s, int fd)
{
	if (rs_engine_sock(s)) {
		rs_sock_before_kernel(s, fd, RINGSOCK_PT_DUP);
		rs_sock_passthrough(s, RINGSOCK_PT_DUP);
	}
}

/* stdio reads and writes the socket with the C library's internal calls:
 * what was queued for it goes first, and the engine reads nothing ahead
 * from now on. */
RS_EXPORT FILE *fdopen(int fd, const char *mode)
{
	int on = rs_enter();
	if (rs_unlikely(rs_fdguard_is_engine(fd))) {
		errno = EBADF;
		return NULL;
	}
	if (on)
		before_dup(rs_fd_peek(fd), fd);
	return REAL(fdopen)(fd, mode);
}

RS_EXPORT int dup(int fd)
{
	before_dup(rs_enter_fd(fd, RINGSOCK_FAM_CLOSE), fd);
	int nfd = REAL(dup)(fd);
	if (nfd >= 0 && rs_ready())
		rs_fd_dup(fd, nfd);
	return nfd;
}

static int dup_onto(int fd, int fd2, int flags, int use_dup3)
{
	before_dup(rs_enter_fd(fd, RINGSOCK_FAM_CLOSE), fd);
	if (rs_ready() && fd != fd2) {
		int e = rs_fdguard_evict(fd2);
		if (e < 0) {
			errno = -e;
			return -1;
		}
		/* fd2 is closed by the call if open: as close() would. */
		if (rs_engine_on && !rs_rt.passthrough && fcntl_valid(fd))
			rs_engine_before_close(rs_fd_peek(fd2), fd2);
	}
	if (fd != fd2 && records_mine()) {
		rs_kw_fd_gone(fd2);
		rs_fdseen_gone(fd2);
	}
	int r = use_dup3 ? REAL(dup3)(fd, fd2, flags) : REAL(dup2)(fd, fd2);
	if (r >= 0 && fd != fd2 && rs_ready())
		rs_fd_dup(fd, fd2);
	return r;
}

RS_EXPORT int dup2(int fd, int fd2)
{
	return dup_onto(fd, fd2, 0, 0);
}

RS_EXPORT int dup3(int fd, int fd2, int flags)
{
	return dup_onto(fd, fd2, flags, 1);
}

#ifdef RS_HAVE_CLOSE_RANGE
/* Close [first, last] except the engine's descriptors: close the gaps
 * between them. */
static int close_range_guarded(unsigned first, unsigned last, int flags)
{
	/* Engine descriptors exist even in pass-through mode (the stats file). */
	if (rs_enter())
		rs_count_call(0, RINGSOCK_FAM_CLOSE);
	int closes = !(flags & CLOSE_RANGE_CLOEXEC) && records_mine();
	if (closes)
		rs_kw_range_gone(first, last);
	if (!rs_ready() || (flags & CLOSE_RANGE_CLOEXEC)) {
		if (closes)
			rs_fdseen_range_gone(first, last);
		return REAL(close_range)(first, last, flags);
	}
	int keep[RS_MAX_ENGINE_FDS];
	int n = rs_fdguard_list(keep, RS_MAX_ENGINE_FDS); /* ascending */
	unsigned long long lo = first, end = (unsigned long long)last + 1;
	int r = 0;
	for (int i = 0; i <= n && lo < end; i++) {
		unsigned long long k = i < n ? (unsigned long long)keep[i] : end;
		if (k < lo || k > end)
			continue;
		if (k > lo) {
			if (rs_engine_on)
				for (unsigned long long f = lo; f < k && f < (1u << 17); f++)
					if (rs_fd_peek((int)f) || rs_ep_known((int)f))
						rs_engine_before_close(rs_fd_peek((int)f), (int)f);
			rs_fd_forget_range((unsigned)lo, (unsigned)(k - 1));
			/* (the gaps only: the engine's stay open, and known) */
			rs_fdseen_range_gone((unsigned)lo, (unsigned)(k - 1));
			if (REAL(close_range)((unsigned)lo, (unsigned)(k - 1), flags) < 0)
				r = -1;
		}
		lo = k + 1;
	}
	return r;
}

RS_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	if (first > last) {
		errno = EINVAL;
		return -1;
	}
	return close_range_guarded(first, last, flags);
}
#endif

#ifdef RS_HAVE_CLOSEFROM
/* glibc's closefrom calls close_range internally, past our interposer. */
RS_EXPORT void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	if (close_range_guarded((unsigned)lowfd, ~0u, 0) == 0)
		return;
	/* Kernel without close_range: close one by one, as glibc does. */
	for (int fd = lowfd; fd < 65536; fd++)
		close(fd);
}
#endif

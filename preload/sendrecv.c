/* sendrecv.c - send*, recv*, sendfile, splice. */
#include "preload.h"

#include <sys/ioctl.h>

/* Engine sockets passed in SCM_RIGHTS go back to the kernel path first:
 * the receiving process reads the kernel socket. */
static void passing_fds(const struct msghdr *msg)
{
	if (!msg || !msg->msg_control || msg->msg_controllen < sizeof(struct cmsghdr) || !rs_engine_on)
		return;
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)msg); c;
	     c = CMSG_NXTHDR((struct msghdr *)msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int *fds = (int *)CMSG_DATA(c);
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			struct rs_sock *s = rs_fd_peek(fds[i]);
			if (s)
				s->passed = 1;
			if (rs_engine_sock(s)) {
				rs_sock_before_kernel(s, fds[i], RINGSOCK_PT_DUP);
				rs_sock_passthrough(s, RINGSOCK_PT_DUP);
			}
		}
	}
}

RS_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	if (rs_engine_data(s, flags)) {
		struct iovec v = { (void *)buf, n };
		ssize_t r = rs_engine_send(s, fd, &v, 1, flags, NULL, 0);
		if (r != RS_PASS)
			return rs_engine_ret(s, RS_C_BYTES_SENT, r);
	}
	ssize_t r = REAL(send)(fd, buf, n, flags);
	rs_after_send(s, fd, r, NULL, 0);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

RS_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, RS_CSA addr, socklen_t len)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	if (rs_engine_data(s, flags)) {
		struct iovec v = { (void *)buf, n };
		ssize_t r = rs_engine_send(s, fd, &v, 1, flags, RS_SA_PTR(addr), len);
		if (r != RS_PASS)
			return rs_engine_ret(s, RS_C_BYTES_SENT, r);
	}
	ssize_t r = REAL(sendto)(fd, buf, n, flags, addr, len);
	rs_after_send(s, fd, r, RS_SA_PTR(addr), len);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

RS_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	passing_fds(msg);
	if (rs_engine_data(s, flags) && msg) {
		struct rs_send m = { msg->msg_iov, msg->msg_iovlen > IOV_MAX ? -1 : (int)msg->msg_iovlen, flags,
				     msg->msg_name, msg->msg_namelen, msg->msg_controllen != 0 };
		ssize_t r = rs_sock_send(s, fd, &m);
		if (r != RS_PASS)
			return rs_engine_ret(s, RS_C_BYTES_SENT, r);
	}
	ssize_t r = REAL(sendmsg)(fd, msg, flags);
	if (!msg || !msg->msg_controllen || r < 0) /* (a control message's success proves nothing) */
		rs_after_send(s, fd, r, msg ? msg->msg_name : NULL, msg ? msg->msg_namelen : 0);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

/* Bytes moved by the first r messages of an mmsghdr vector. */
static long mmsg_bytes(const struct mmsghdr *vec, int r)
{
	long total = 0;
	for (int i = 0; i < r; i++)
		total += vec[i].msg_len;
	return total;
}

RS_EXPORT int sendmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, RS_MMSG_FLAGS flags)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	for (unsigned i = 0; vec && i < vlen; i++)
		passing_fds(&vec[i].msg_hdr);
	if (rs_engine_sock(s)) {
		/* the kernel's (n -1), after what is queued */
		struct rs_send m = { NULL, -1, flags, NULL, 0, 0 };
		ssize_t e = rs_sock_send(s, fd, &m);
		if (e != RS_PASS)
			return (int)rs_ret(e);
	}
	int r = REAL(sendmmsg)(fd, vec, vlen, flags);
	if (r < 0)
		rs_after_send(s, fd, r, NULL, 0); /* (a full buffer: EAGAIN) */
	if (s && r > 0)
		rs_count_bytes(s, RS_C_BYTES_SENT, mmsg_bytes(vec, r));
	return r;
}

RS_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	if (rs_engine_data(s, flags)) {
		struct iovec v = { buf, n };
		ssize_t r = rs_sock_recv(s, fd, &v, 1, flags, NULL);
		if (r != RS_PASS)
			return rs_engine_ret(s, RS_C_BYTES_RECEIVED, r);
	}
	ssize_t r = REAL(recv)(fd, buf, n, flags);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, RS_SA addr, socklen_t *len)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	if (rs_engine_data(s, flags)) {
		struct iovec v = { buf, n };
		struct rs_dgram_from f = { RS_SA_PTR(addr), len, 0 };
		ssize_t r = rs_sock_recv(s, fd, &v, 1, flags, &f);
		if (r != RS_PASS)
			return rs_engine_ret(s, RS_C_BYTES_RECEIVED, r);
	}
	ssize_t r = REAL(recvfrom)(fd, buf, n, flags, addr, len);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	if (rs_engine_data(s, flags) && msg && msg->msg_iovlen <= IOV_MAX) {
		struct rs_dgram_from f = { msg->msg_name, &msg->msg_namelen, 0 };
		ssize_t r = rs_sock_recv(s, fd, msg->msg_iov, (int)msg->msg_iovlen, flags, &f);
		if (r != RS_PASS) {
			if (r >= 0) {
				msg->msg_controllen = 0;
				msg->msg_flags = f.flags;
			}
			return rs_engine_ret(s, RS_C_BYTES_RECEIVED, r);
		}
	}
	ssize_t r = REAL(recvmsg)(fd, msg, flags);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, RS_MMSG_FLAGS flags,
		       struct timespec *tmo)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	if (rs_engine_sock(s)) {
		int r = rs_sock_recvmmsg(s, fd, vec, vlen, flags, tmo);
		if (r != (int)RS_PASS) {
			if (r > 0)
				rs_count_bytes(s, RS_C_BYTES_RECEIVED, mmsg_bytes(vec, r));
			return (int)rs_ret(r);
		}
	}
	int r = REAL(recvmmsg)(fd, vec, vlen, flags, tmo);
	if (s && r > 0)
		rs_count_bytes(s, RS_C_BYTES_RECEIVED, mmsg_bytes(vec, r));
	return r;
}

RS_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t n)
{
	struct rs_sock *s = rs_enter_fd(out_fd, RINGSOCK_FAM_SENDRECV);
	if (rs_engine_sock(s))
		rs_sock_before_kernel(s, out_fd, -1); /* queued bytes first */
	ssize_t r = REAL(sendfile)(out_fd, in_fd, off, n);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

#ifdef __GLIBC__
RS_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *off, size_t n)
{
	struct rs_sock *s = rs_enter_fd(out_fd, RINGSOCK_FAM_SENDRECV);
	if (rs_engine_sock(s))
		rs_sock_before_kernel(s, out_fd, -1);
	ssize_t r = REAL(sendfile64)(out_fd, in_fd, off, n);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}
#endif

/* Write to a pipe without waiting: through the program's description if
 * it is nonblocking, else through a new one (open of /proc/self/fd/N), so
 * the program's own O_NONBLOCK is never changed under it. */
static long pipe_write_nb(int fd, const void *buf, size_t n)
{
	long fl = rs_syscall(SYS_fcntl, fd, F_GETFL, 0);
	if (fl < 0)
		return fl;
	if (fl & O_NONBLOCK)
		return rs_syscall(SYS_write, fd, buf, n);
	char path[32];
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	long w = rs_syscall(SYS_openat, AT_FDCWD, path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (w < 0)
		return w;
	long r = rs_syscall(SYS_write, (int)w, buf, n);
	rs_sys_close((int)w);
	return r;
}

/* splice from an engine socket that still holds bytes it read ahead (it
 * has just left the engine): those come first, into the pipe, as splice
 * would have moved them from the kernel's queue: up to len, as much as
 * the pipe has room for (waiting for room unless SPLICE_F_NONBLOCK or the
 * pipe is nonblocking), then the kernel's queue if it has bytes too, as
 * one splice would have taken both.  RS_PASS when nothing is held. */
static ssize_t splice_held(struct rs_sock *s, int fd_in, int fd_out, size_t len, unsigned flags)
{
	size_t held = rs_sock_held(s, fd_in); /* (it has left the engine: no more come) */
	if (!held || !len)
		return RS_PASS;
	char buf[16384];
	size_t want = len < held ? len : held;
	if (want > sizeof(buf))
		want = sizeof(buf);
	struct iovec v = { buf, want };
	ssize_t n = rs_sock_recv(s, fd_in, &v, 1, MSG_PEEK | MSG_DONTWAIT, NULL);
	if (n <= 0)
		return n == 0 ? RS_PASS : n;
	long w;
	for (;;) {
		w = pipe_write_nb(fd_out, buf, (size_t)n);
		if (w != -EAGAIN || (flags & SPLICE_F_NONBLOCK) ||
		    (rs_syscall(SYS_fcntl, fd_out, F_GETFL, 0) & O_NONBLOCK))
			break;
		struct pollfd p = { fd_out, POLLOUT, 0 };
		long pr = rs_syscall(SYS_ppoll, &p, 1, NULL, NULL, 0);
		if (pr < 0)
			return pr; /* (EINTR: nothing moved) */
	}
	if (w <= 0)
		return w;
	/* what went into the pipe is taken (from the held bytes: w <= held) */
	v.iov_len = (size_t)w;
	if (rs_sock_recv(s, fd_in, &v, 1, MSG_DONTWAIT, NULL) != w)
		rs_warn("splice: fd %d: the held bytes changed under the call", fd_in);
	if ((size_t)w == held && (size_t)w < len) {
		/* all held went: the kernel's queue next, without waiting */
		int k = 0;
		if (rs_syscall(SYS_ioctl, fd_in, FIONREAD, &k) == 0 && k > 0) {
			long more = rs_syscall(SYS_splice, fd_in, NULL, fd_out, NULL, len - (size_t)w,
					       flags | SPLICE_F_NONBLOCK);
			if (more > 0)
				w += more;
		}
	}
	return w;
}

RS_EXPORT ssize_t splice(int fd_in, RS_OFF64 *off_in, int fd_out, RS_OFF64 *off_out, size_t len,
			 unsigned int flags)
{
	struct rs_sock *in = rs_enter_fd(fd_in, RINGSOCK_FAM_SENDRECV);
	struct rs_sock *out = rs_ready() && !rs_rt.passthrough ? rs_fd_peek(fd_out) : NULL;
	if (rs_engine_sock(out))
		rs_sock_before_kernel(out, fd_out, -1);
	if (rs_engine_sock(in)) {
		/* The kernel's from now on (splice reads its queue); what the
		 * engine read ahead goes into the pipe first. */
		rs_sock_before_kernel(in, fd_in, RINGSOCK_PT_OPTION);
		rs_sock_passthrough(in, RINGSOCK_PT_OPTION);
		ssize_t h = off_in ? (ssize_t)RS_PASS : splice_held(in, fd_in, fd_out, len, flags);
		if (h != RS_PASS) {
			rs_count_bytes(in, RS_C_BYTES_RECEIVED, h);
			return rs_ret(h);
		}
	}
	ssize_t r = REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
	rs_count_bytes(in, RS_C_BYTES_RECEIVED, r);
	rs_count_bytes(out, RS_C_BYTES_SENT, r);
	return r;
}

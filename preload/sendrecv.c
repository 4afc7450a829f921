/* sendrecv.c - send*, recv*, sendfile, splice. */
#include "preload.h"

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
	if (rs_engine_sock(s)) {
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

/* An address given to a send on a connected TCP socket is ignored by the
 * kernel (once it has checked its length), unless it is a fast-open
 * connect: such sends are served like any other (the engine arms only
 * connected sockets). */
static int stream_addr_ignored(struct rs_sock *s, socklen_t len, int flags)
{
	return s->type == SOCK_STREAM && len <= (socklen_t)sizeof(struct sockaddr_storage) &&
	       !(flags & MSG_FASTOPEN);
}

RS_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, RS_CSA addr, socklen_t len)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	if (rs_engine_sock(s)) {
		ssize_t r = RS_PASS;
		if (s->type == SOCK_DGRAM || RS_SA_PTR(addr) == NULL || stream_addr_ignored(s, len, flags)) {
			struct iovec v = { (void *)buf, n };
			r = rs_engine_send(s, fd, &v, 1, flags, RS_SA_PTR(addr), len);
		} else {
			rs_sock_before_kernel(s, fd, -1);
		}
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
	if (rs_engine_sock(s) && msg) {
		ssize_t r = RS_PASS;
		if (s->type == SOCK_DGRAM)
			/* (a control message, or more than IOV_MAX: the kernel's) */
			r = rs_engine_send(s, fd, msg->msg_iov,
					   msg->msg_controllen || msg->msg_iovlen > IOV_MAX ? -1 : (int)msg->msg_iovlen,
					   flags, msg->msg_name, msg->msg_namelen);
		else if ((!msg->msg_name || stream_addr_ignored(s, msg->msg_namelen, flags)) && !msg->msg_controllen &&
			 msg->msg_iovlen <= IOV_MAX)
			r = rs_engine_send(s, fd, msg->msg_iov, (int)msg->msg_iovlen, flags, NULL, 0);
		else
			rs_sock_before_kernel(s, fd, -1);
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
	if (rs_engine_sock(s) && s->type == SOCK_DGRAM) {
		/* the kernel's (n -1: none queued), after what is queued */
		ssize_t e = rs_udp_send_call(s, fd, NULL, -1, flags, NULL, 0);
		if (e != RS_PASS)
			return (int)rs_ret(e);
	} else if (rs_engine_sock(s)) {
		rs_sock_before_kernel(s, fd, -1);
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
	if (rs_engine_sock(s)) {
		struct iovec v = { buf, n };
		ssize_t r = rs_engine_recv(s, fd, &v, 1, flags, NULL);
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
	if (rs_engine_sock(s)) {
		struct iovec v = { buf, n };
		struct rs_dgram_from f = { RS_SA_PTR(addr), len, 0 };
		ssize_t r = rs_engine_recv(s, fd, &v, 1, flags, &f);
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
	if (rs_engine_sock(s) && msg && msg->msg_iovlen <= IOV_MAX) {
		struct rs_dgram_from f = { msg->msg_name, &msg->msg_namelen, 0 };
		ssize_t r = rs_engine_recv(s, fd, msg->msg_iov, (int)msg->msg_iovlen, flags, &f);
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
	if (rs_engine_sock(s) && s->type == SOCK_DGRAM && vec) {
		int r = rs_udp_recvmmsg(s, fd, vec, vlen, flags, tmo);
		if (r != (int)RS_PASS) {
			if (r > 0)
				rs_count_bytes(s, RS_C_BYTES_RECEIVED, mmsg_bytes(vec, r));
			return (int)rs_ret(r);
		}
		rs_flush_own_tx(); /* (the kernel's read next: it may wait) */
	} else if (rs_engine_sock(s)) {
		rs_sock_before_kernel(s, fd, RINGSOCK_PT_OPTION);
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

RS_EXPORT ssize_t splice(int fd_in, RS_OFF64 *off_in, int fd_out, RS_OFF64 *off_out, size_t len,
			 unsigned int flags)
{
	struct rs_sock *in = rs_enter_fd(fd_in, RINGSOCK_FAM_SENDRECV);
	struct rs_sock *out = rs_ready() && !rs_rt.passthrough ? rs_fd_peek(fd_out) : NULL;
	if (rs_engine_sock(in))
		rs_sock_before_kernel(in, fd_in, RINGSOCK_PT_OPTION); /* held data first */
	if (rs_engine_sock(out))
		rs_sock_before_kernel(out, fd_out, -1);
	ssize_t r = REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
	rs_count_bytes(in, RS_C_BYTES_RECEIVED, r);
	rs_count_bytes(out, RS_C_BYTES_SENT, r);
	return r;
}

/* sendrecv.c - send*, recv*, sendfile, splice. */
#include "preload.h"

RS_EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	ssize_t r = REAL(send)(fd, buf, n, flags);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

RS_EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, RS_CSA addr, socklen_t len)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	ssize_t r = REAL(sendto)(fd, buf, n, flags, addr, len);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

RS_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	ssize_t r = REAL(sendmsg)(fd, msg, flags);
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
	int r = REAL(sendmmsg)(fd, vec, vlen, flags);
	if (s && r > 0)
		rs_count_bytes(s, RS_C_BYTES_SENT, mmsg_bytes(vec, r));
	return r;
}

RS_EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	ssize_t r = REAL(recv)(fd, buf, n, flags);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, RS_SA addr, socklen_t *len)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	ssize_t r = REAL(recvfrom)(fd, buf, n, flags, addr, len);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	ssize_t r = REAL(recvmsg)(fd, msg, flags);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT int recvmmsg(int fd, struct mmsghdr *vec, unsigned int vlen, RS_MMSG_FLAGS flags,
		       struct timespec *tmo)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_SENDRECV);
	int r = REAL(recvmmsg)(fd, vec, vlen, flags, tmo);
	if (s && r > 0)
		rs_count_bytes(s, RS_C_BYTES_RECEIVED, mmsg_bytes(vec, r));
	return r;
}

RS_EXPORT ssize_t sendfile(int out_fd, int in_fd, off_t *off, size_t n)
{
	struct rs_sock *s = rs_enter_fd(out_fd, RINGSOCK_FAM_SENDRECV);
	ssize_t r = REAL(sendfile)(out_fd, in_fd, off, n);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

#ifdef __GLIBC__
RS_EXPORT ssize_t sendfile64(int out_fd, int in_fd, off64_t *off, size_t n)
{
	struct rs_sock *s = rs_enter_fd(out_fd, RINGSOCK_FAM_SENDRECV);
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
	ssize_t r = REAL(splice)(fd_in, off_in, fd_out, off_out, len, flags);
	rs_count_bytes(in, RS_C_BYTES_RECEIVED, r);
	rs_count_bytes(out, RS_C_BYTES_SENT, r);
	return r;
}

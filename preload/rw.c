/* rw.c - read, write, readv, writev. */
#include "preload.h"

/* read and readv of nothing return 0 at once, before any error, the end
 * or a datagram is looked at (the kernel's sock_read_iter): left to it. */

RS_EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_RW);
	if (rs_engine_data(s, 0) && n) {
		struct iovec v = { buf, n };
		ssize_t r = rs_sock_recv(s, fd, &v, 1, 0, NULL);
		if (r != RS_PASS)
			return rs_engine_ret(s, RS_C_BYTES_RECEIVED, r);
	}
	ssize_t r = REAL(read)(fd, buf, n);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_RW);
	if (rs_engine_data(s, 0)) {
		struct iovec v = { (void *)buf, n };
		ssize_t r = rs_engine_send(s, fd, &v, 1, 0, NULL, 0);
		if (r != RS_PASS)
			return rs_engine_ret(s, RS_C_BYTES_SENT, r);
	}
	ssize_t r = REAL(write)(fd, buf, n);
	rs_after_send(s, fd, r, NULL, 0);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

RS_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_RW);
	if (rs_engine_data(s, 0) && cnt > 0 && cnt <= IOV_MAX && rs_iov_total(iov, cnt)) {
		ssize_t r = rs_sock_recv(s, fd, iov, cnt, 0, NULL);
		if (r != RS_PASS)
			return rs_engine_ret(s, RS_C_BYTES_RECEIVED, r);
	}
	ssize_t r = REAL(readv)(fd, iov, cnt);
	rs_count_bytes(s, RS_C_BYTES_RECEIVED, r);
	return r;
}

RS_EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_RW);
	if (rs_engine_data(s, 0) && cnt > 0 && cnt <= IOV_MAX) {
		ssize_t r = rs_engine_send(s, fd, iov, cnt, 0, NULL, 0);
		if (r != RS_PASS)
			return rs_engine_ret(s, RS_C_BYTES_SENT, r);
	}
	ssize_t r = REAL(writev)(fd, iov, cnt);
	rs_after_send(s, fd, r, NULL, 0);
	rs_count_bytes(s, RS_C_BYTES_SENT, r);
	return r;
}

/* ctl.c - fcntl, fcntl64, ioctl, getsockopt, setsockopt, getsockname,
 * getpeername. */
#include "preload.h"

#ifndef SO_RCVTIMEO_OLD
#define SO_RCVTIMEO_OLD 20
#define SO_SNDTIMEO_OLD 21
#endif
#ifndef SO_RCVTIMEO_NEW
#define SO_RCVTIMEO_NEW 66
#define SO_SNDTIMEO_NEW 67
#endif

/* Options that add control messages, newer than some headers. */
#define RS_SO_TIMESTAMP_NEW 63
#define RS_SO_TIMESTAMPNS_NEW 64
#define RS_SO_TIMESTAMPING_NEW 65
#define RS_SO_RCVMARK 75
#define RS_SO_RCVPRIORITY 82

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <linux/sockios.h>

static void *va_ptr(va_list ap)
{
	/* Like libc: every fcntl/ioctl argument travels as one word. */
	return va_arg(ap, void *);
}

/* O_NONBLOCK set or cleared on an engine socket.  The engine serves both
 * modes (each call reads the flag), so the socket stays; only what the
 * thread queued is sent first, as its sends' mode is the one they were
 * made in.  With RINGSOCK_BLOCKING=kernel a blocking socket is the
 * kernel's: it leaves the engine, for good (counted as blocking). */
static void blocking_toggled(struct rs_sock *s, int fd)
{
	if (!s->nonblock || rs_rt.cfg.v[RS_K_BLOCKING] != RS_BLOCKING_KERNEL) {
		rs_sock_before_kernel(s, fd, -1);
		return;
	}
	rs_sock_before_kernel(s, fd, RINGSOCK_PT_BLOCKING);
	rs_sock_passthrough(s, RINGSOCK_PT_BLOCKING);
}

static int fcntl_common(int fd, int cmd, void *arg, int use64)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	if (rs_engine_sock(s)) {
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) {
			rs_sock_before_kernel(s, fd, RINGSOCK_PT_DUP);
			rs_sock_passthrough(s, RINGSOCK_PT_DUP);
		} else if (cmd == F_SETFL && !((long)arg & O_NONBLOCK) != !s->nonblock) {
			blocking_toggled(s, fd);
		} else if (cmd == F_SETOWN || cmd == F_SETSIG || cmd == F_SETOWN_EX ||
			   (cmd == F_SETFL && ((long)arg & O_ASYNC))) {
			rs_sock_before_kernel(s, fd, RINGSOCK_PT_OPTION); /* SIGIO */
			rs_sock_passthrough(s, RINGSOCK_PT_OPTION);
		}
	}
	int r;
#ifdef __GLIBC__
	r = use64 ? REAL(fcntl64)(fd, cmd, arg) : REAL(fcntl)(fd, cmd, arg);
#else
	(void)use64;
	r = REAL(fcntl)(fd, cmd, arg);
#endif
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && rs_ready())
		rs_fd_dup(fd, r);
	if (r >= 0 && s && cmd == F_SETFL)
		s->nonblock = !!((long)arg & O_NONBLOCK);
	return r;
}

RS_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_ptr(ap);
	va_end(ap);
	return fcntl_common(fd, cmd, arg, 0);
}

#ifdef __GLIBC__
RS_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_ptr(ap);
	va_end(ap);
	return fcntl_common(fd, cmd, arg, 1);
}
#endif

RS_EXPORT int ioctl(int fd, RS_IOCTL_REQ req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_ptr(ap);
	va_end(ap);
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	if (rs_engine_sock(s)) {
		if (req == FIONREAD) {
			int r = rs_sock_fionread(s, fd, arg);
			if (r != RS_PASS)
				return (int)rs_ret(r);
		} else if (req == FIONBIO) {
			if (arg && !*(int *)arg != !s->nonblock)
				blocking_toggled(s, fd);
		} else if (req == SIOCATMARK) {
			/* Bytes the engine holds come before any mark. */
			rs_sock_urgent(s, fd);
			if (arg && rs_sock_held(s, fd) > 0) {
				*(int *)arg = 0;
				return 0;
			}
		} else if (req == FIOASYNC) {
			rs_sock_before_kernel(s, fd, RINGSOCK_PT_OPTION);
			rs_sock_passthrough(s, RINGSOCK_PT_OPTION);
		} else {
			rs_sock_before_kernel(s, fd, -1); /* SIOCOUTQ and friends see every byte */
		}
	}
	int r = REAL(ioctl)(fd, req, arg);
	if (r == 0 && s && req == FIONBIO && arg)
		s->nonblock = !!*(int *)arg;
	return r;
}

RS_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	int lowat = s ? __atomic_load_n(&s->rcvlowat, __ATOMIC_RELAXED) : 0;
	if (lowat && level == SOL_SOCKET && name == SO_RCVLOWAT && val && len && *len >= (socklen_t)sizeof(int)) {
		/* the application's mark, not the one lowered for held bytes */
		int r = REAL(getsockopt)(fd, level, name, val, len);
		if (r == 0)
			*(int *)val = lowat;
		return r;
	}
	if (rs_engine_sock(s) && level == SOL_SOCKET && name == SO_ERROR && val && len &&
	    *len >= (socklen_t)sizeof(int)) {
		/* An error the engine saw first is the socket's pending error. */
		int e = rs_sock_so_error(s, fd);
		if (e) {
			*(int *)val = e;
			*len = sizeof(int);
			return 0;
		}
	}
	return REAL(getsockopt)(fd, level, name, val, len);
}

/* Options that change what a receive returns, which the engine does not
 * emulate: the socket goes (or stays) on the kernel path. */
static int rx_option(int level, int name, const void *val, socklen_t len)
{
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_RCVLOWAT:
			return !(val && len >= (socklen_t)sizeof(int) && *(const int *)val <= 1);
		case SO_TIMESTAMP: case SO_TIMESTAMPNS: case SO_TIMESTAMPING:
		case SO_RXQ_OVFL: case SO_ATTACH_FILTER: case SO_ATTACH_BPF:
		case SO_BUSY_POLL: case SO_PEEK_OFF: case SO_PASSCRED: case SO_PASSSEC:
		case RS_SO_TIMESTAMP_NEW: case RS_SO_TIMESTAMPNS_NEW: case RS_SO_TIMESTAMPING_NEW:
		case RS_SO_RCVMARK: case RS_SO_RCVPRIORITY:
			return 1;
		}
		return 0;
	}
	if (level == IPPROTO_TCP)
		return name == TCP_INQ || name == TCP_ZEROCOPY_RECEIVE || name == TCP_REPAIR;
	/* (what only a send or a bind looks at: path MTU discovery, as DNS
	 * and QUIC servers set it, and the port left to connect) */
	if (level == IPPROTO_IP)
		return name != IP_TOS && name != IP_TTL && name != IP_MTU_DISCOVER && name != IP_BIND_ADDRESS_NO_PORT;
	if (level == IPPROTO_IPV6)
		return name != IPV6_TCLASS && name != IPV6_UNICAST_HOPS && name != IPV6_V6ONLY &&
		       name != IPV6_MTU_DISCOVER;
	return 1;
}

RS_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	if (rs_engine_sock(s)) {
		if (level == SOL_SOCKET && name == SO_OOBINLINE) {
			rs_sock_urgent(s, fd);
		} else if (rx_option(level, name, val, len)) {
			rs_sock_before_kernel(s, fd, RINGSOCK_PT_OPTION);
			rs_sock_passthrough(s, RINGSOCK_PT_OPTION);
		} else {
			rs_sock_before_kernel(s, fd, -1); /* TCP_CORK, NODELAY: after queued bytes */
		}
	}
	if (s && level == SOL_SOCKET && name == SO_RCVLOWAT && val && len >= (socklen_t)sizeof(int)) {
		/* what the engine still holds counts toward the kernel's mark */
		int want = *(const int *)val, k = rs_sock_kernel_lowat(s, want);
		int r = REAL(setsockopt)(fd, level, name, &k, sizeof(k));
		if (r == 0) {
			__atomic_store_n(&s->rcvlowat, want < 1 ? 1 : want, __ATOMIC_RELAXED);
			__atomic_store_n(&s->kernel_lowat, k, __ATOMIC_RELAXED);
			if (rs_engine_sock(s))
				rs_sock_lowat_set(s, fd);
		}
		return r;
	}
	int r = REAL(setsockopt)(fd, level, name, val, len);
	if (r == 0 && s && level == SOL_SOCKET &&
	    (name == SO_RCVTIMEO_OLD || name == SO_RCVTIMEO_NEW || name == SO_SNDTIMEO_OLD || name == SO_SNDTIMEO_NEW))
		s->timeo_known = 0; /* the engine reads them again when it needs them */
	if (r == 0 && s && level == SOL_SOCKET && val && len >= (socklen_t)sizeof(int)) {
		if (name == SO_RCVBUF || name == SO_RCVBUFFORCE)
			s->rcvbuf = *(const int *)val;
		else if (name == SO_SNDBUF || name == SO_SNDBUFFORCE)
			s->sndbuf = *(const int *)val;
	}
	if (r == 0 && level == SOL_SOCKET && (name == SO_SNDBUF || name == SO_SNDBUFFORCE) && rs_engine_sock(s))
		rs_sock_sndbuf_set(s, fd);
	return r;
}

RS_EXPORT int getsockname(int fd, RS_SA addr, socklen_t *len)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	return REAL(getsockname)(fd, addr, len);
}

RS_EXPORT int getpeername(int fd, RS_SA addr, socklen_t *len)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CTL);
	return REAL(getpeername)(fd, addr, len);
}

/* libc's sockatmark asks the kernel past our ioctl. */
RS_EXPORT int sockatmark(int fd)
{
	int at = 0;
	if (ioctl(fd, SIOCATMARK, &at) < 0)
		return -1;
	return at;
}

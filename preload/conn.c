/* conn.c - bind, listen, accept, accept4, connect, shutdown. */
#include "preload.h"

RS_EXPORT int bind(int fd, RS_CSA addr, socklen_t len)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	return REAL(bind)(fd, addr, len);
}

RS_EXPORT int listen(int fd, int backlog)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	int r = REAL(listen)(fd, backlog);
	if (s && r == 0) {
		s->conn_state = RS_CONN_LISTEN;
		if (rs_ready())
			rs_sock_listening(s, fd);
	}
	return r;
}

/* A new connection inherits the listener's domain and type. */
static void accepted(struct rs_sock *l, int fd, int flags)
{
	if (fd < 0)
		return;
	if (l) {
		rs_count_domain(l->domain, 1);
		rs_new_fd(fd, l->domain, l->type, l->protocol);
		rs_new_sock_state(fd, !!(flags & SOCK_NONBLOCK), RS_CONN_UP);
	} else {
		rs_fd_forget(fd);
	}
}

RS_EXPORT int accept(int fd, RS_SA addr, socklen_t *len)
{
	struct rs_sock *l = rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	int nfd = REAL(accept)(fd, addr, len);
	accepted(l, nfd, 0);
	return nfd;
}

RS_EXPORT int accept4(int fd, RS_SA addr, socklen_t *len, int flags)
{
	struct rs_sock *l = rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	int nfd = REAL(accept4)(fd, addr, len, flags);
	accepted(l, nfd, flags);
	return nfd;
}

RS_EXPORT int connect(int fd, RS_CSA addr, socklen_t len)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	if (rs_engine_sock(s))
		rs_sock_before_connect(s, fd); /* datagrams queued for the old peer go first */
	int self = s && rs_ready() && rs_sock_to_self(s, RS_SA_PTR(addr), len);
	int r = REAL(connect)(fd, addr, len);
	if (s) {
		int e = errno;
		if (self && (r == 0 || e == EINPROGRESS))
			rs_sock_connected_self(fd);
		if (r == 0)
			s->conn_state = RS_CONN_UP;
		else if (e == EINPROGRESS || e == EALREADY)
			s->conn_state = RS_CONN_CONNECTING;
		errno = e;
	}
	return r;
}

RS_EXPORT int shutdown(int fd, int how)
{
	struct rs_sock *s = rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	if (rs_engine_sock(s)) {
		rs_ring_flush_own_tx(); /* (what the thread queued before goes first) */
		int r = rs_sock_shutdown(s, fd, how);
		if (r != (int)RS_PASS)
			return (int)rs_ret(r);
	}
	int r = REAL(shutdown)(fd, how);
	/* For the engine, should it arm the socket later: what the kernel now
	 * holds as shut down.  inet_shutdown marks an unconnected socket too,
	 * answering ENOTCONN (a UDP socket's reads then return 0 at once); a
	 * listener it stops without marking. */
	if (s && (r == 0 || errno == ENOTCONN) && s->conn_state != RS_CONN_LISTEN) {
		if (how == SHUT_RD || how == SHUT_RDWR)
			s->shut_rd = 1;
		if (how == SHUT_WR || how == SHUT_RDWR)
			s->shut_wr = 1;
	}
	return r;
}

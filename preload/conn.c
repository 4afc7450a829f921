/* conn.c - bind, listen, accept, accept4, connect, shutdown. */
#include "preload.h"

RS_EXPORT int bind(int fd, RS_CSA addr, socklen_t len)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	return REAL(bind)(fd, addr, len);
}

RS_EXPORT int listen(int fd, int backlog)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	return REAL(listen)(fd, backlog);
}

/* A new connection inherits the listener's domain and type. */
static void accepted(struct rs_sock *l, int fd)
{
	if (fd < 0)
		return;
	if (l) {
		rs_count_domain(l->domain, 1);
		rs_new_fd(fd, l->domain, l->type, l->protocol);
	} else {
		rs_fd_forget(fd);
	}
}

RS_EXPORT int accept(int fd, RS_SA addr, socklen_t *len)
{
	struct rs_sock *l = rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	int nfd = REAL(accept)(fd, addr, len);
	accepted(l, nfd);
	return nfd;
}

RS_EXPORT int accept4(int fd, RS_SA addr, socklen_t *len, int flags)
{
	struct rs_sock *l = rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	int nfd = REAL(accept4)(fd, addr, len, flags);
	accepted(l, nfd);
	return nfd;
}

RS_EXPORT int connect(int fd, RS_CSA addr, socklen_t len)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	return REAL(connect)(fd, addr, len);
}

RS_EXPORT int shutdown(int fd, int how)
{
	rs_enter_fd(fd, RINGSOCK_FAM_CONN);
	return REAL(shutdown)(fd, how);
}

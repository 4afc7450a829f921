/* socket.c - socket, socketpair. */
#include "preload.h"

#define TYPE_MASK (~(SOCK_NONBLOCK | SOCK_CLOEXEC))

RS_EXPORT int socket(int domain, int type, int protocol)
{
	int on = rs_enter();
	int fd = REAL(socket)(domain, type, protocol);
	if (on) {
		int ours = rs_sock_eligible(domain, type & TYPE_MASK, protocol);
		rs_count_call(ours, RINGSOCK_FAM_SOCKET);
		if (fd >= 0) {
			rs_count_domain(domain, 1);
			rs_new_fd(fd, domain, type & TYPE_MASK, protocol);
			rs_new_sock_state(fd, !!(type & SOCK_NONBLOCK), RS_CONN_UNKNOWN);
		}
	}
	return fd;
}

RS_EXPORT int socketpair(int domain, int type, int protocol, int sv[2])
{
	int on = rs_enter();
	int r = REAL(socketpair)(domain, type, protocol, sv);
	if (on) {
		rs_count_call(0, RINGSOCK_FAM_SOCKET);
		if (r == 0) {
			/* Only AF_UNIX makes pairs today, but keep the table exact. */
			rs_count_domain(domain, 2);
			rs_new_fd(sv[0], domain, type & TYPE_MASK, protocol);
			rs_new_fd(sv[1], domain, type & TYPE_MASK, protocol);
		}
	}
	return r;
}

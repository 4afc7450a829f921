/* selfconn.c - the process's connections with itself: the ports its TCP
 * listeners are bound to and the local ports of the sockets it connected
 * to one of them: a read of such a connection runs the ring first
 * (tcp_recv.c self_peer), as what the process sent itself may still be in
 * the ring.  Lock-free tables; two system calls at most per look.
 */
#include <sys/socket.h>
#include <netinet/in.h>

#include "engine_int.h"
#include "sys.h"

/* ---- connections with itself ---------------------------------------------
 * The ports the process's TCP listeners are bound to, and the local ports
 * of the sockets it connected to one of them (any address: the listener
 * may be bound to it).  A socket whose local or peer port is one of the
 * latter may be talking to this very process.  When the listeners' table
 * is full, every socket may be (looking costs a little, never looking
 * would miss one). */
#define LISTEN_PORTS 64
static _Atomic uint16_t listen_ports[LISTEN_PORTS];
static int listen_overflow; /* [hint, set only] */
static _Atomic unsigned long self_ports[65536 / (8 * sizeof(unsigned long))];
int rs_self_connect;

static uint16_t port_of(const struct sockaddr *a, socklen_t len)
{
	if (a->sa_family == AF_INET && len >= sizeof(struct sockaddr_in))
		return ntohs(((const struct sockaddr_in *)a)->sin_port);
	if (a->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		return ntohs(((const struct sockaddr_in6 *)a)->sin6_port);
	return 0;
}

static uint16_t fd_port(int fd, int peer)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (rs_syscall(peer ? SYS_getpeername : SYS_getsockname, fd, &ss, &len) < 0)
		return 0;
	return port_of((struct sockaddr *)&ss, len);
}

void rs_sock_listening(struct rs_sock *s, int fd)
{
	if (s->type != SOCK_STREAM)
		return;
	uint16_t port = fd_port(fd, 0);
	if (!port)
		return;
	for (int i = 0; i < LISTEN_PORTS; i++) {
		uint16_t expect = 0;
		if (atomic_load(&listen_ports[i]) == port ||
		    atomic_compare_exchange_strong(&listen_ports[i], &expect, port))
			return;
	}
	RS_STORE(listen_overflow, 1);
}

int rs_sock_to_self(struct rs_sock *s, const struct sockaddr *to, socklen_t len)
{
	uint16_t port = to && s->type == SOCK_STREAM ? port_of(to, len) : 0;
	if (!port)
		return 0;
	if (RS_LOAD(listen_overflow))
		return 1;
	for (int i = 0; i < LISTEN_PORTS; i++) {
		uint16_t p = atomic_load(&listen_ports[i]);
		if (!p)
			return 0;
		if (p == port)
			return 1;
	}
	return 0;
}

void rs_sock_connected_self(int fd)
{
	uint16_t port = fd_port(fd, 0);
	if (!port)
		return;
	const unsigned w = 8 * sizeof(unsigned long);
	atomic_fetch_or(&self_ports[port / w], 1UL << (port % w));
	RS_STORE(rs_self_connect, 1);
}

int rs_sock_self_peer(int fd)
{
	if (RS_LOAD(listen_overflow))
		return 1;
	const unsigned w = 8 * sizeof(unsigned long);
	for (int peer = 0; peer < 2; peer++) {
		uint16_t port = fd_port(fd, peer);
		if (port && (atomic_load(&self_ports[port / w]) >> (port % w)) & 1)
			return 1;
	}
	return 0;
}

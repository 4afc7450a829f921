/* netinfo.h - network links and routes through libnl (rtnetlink). */
#ifndef RS_NETINFO_H
#define RS_NETINFO_H
#include <stdio.h>
#include <sys/socket.h>
/* Print one line per network link (name, MTU, state).  Returns the number
 * of links, or -1 with a reason printed when libnl is not built in or the
 * netlink query fails. */
int rs_netinfo_print_links(FILE *out, const char *indent);

/* Every unicast route of the main tables (IPv4 and IPv6), through libnl:
 * fn gets its destination prefix, the address the policy is asked about
 * (the gateway, else the prefix's own address) and its device's name.
 * Returns how many, or -1 (why in err). */
int rs_netinfo_routes(void (*fn)(const char *prefix, const struct sockaddr *probe, socklen_t len,
				 const char *dev, void *arg),
		      void *arg, char *err, size_t errlen);

/* The kernel's view of a TCP socket (inet_diag through libnl). */
struct rs_tcp_diag {
	unsigned inode;
	unsigned state;          /* TCP_ESTABLISHED... */
	unsigned rtt_us, rttvar_us;
	unsigned cwnd;
	unsigned rqueue, wqueue; /* recv-q, send-q */
	unsigned rmem, wmem, fmem, tmem; /* skmem */
};
/* Every TCP socket of this network namespace (IPv4 and IPv6): fn is
 * called for each.  Returns how many, or -1 (no libnl, or the query
 * failed: why in err). */
int rs_netinfo_tcp_diag(void (*fn)(const struct rs_tcp_diag *d, void *arg), void *arg, char *err, size_t errlen);

/* The kernel's view of a UDP socket: sock_diag (inet_diag for
 * IPPROTO_UDP), asked with the CLI's own netlink request, since libnl's
 * idiag speaks only the old TCP-only request. */
struct rs_udp_diag {
	unsigned inode;
	unsigned rqueue, wqueue;  /* bytes in the receive and send queues */
	unsigned rmem, rcvbuf;    /* skmem: receive memory held, SO_RCVBUF */
	unsigned drops;           /* skmem: datagrams the kernel dropped
				   * (0 from kernels without the field,
				   * before 4.7: none the engine runs on) */
};
/* Every UDP socket of this network namespace (IPv4 and IPv6): fn is
 * called for each.  Returns how many, or -1 (the query failed, e.g. no
 * udp_diag module: why in err). */
int rs_netinfo_udp_diag(void (*fn)(const struct rs_udp_diag *d, void *arg), void *arg, char *err, size_t errlen);
#endif

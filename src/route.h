/* route.h - which way a destination's packets leave, and what the engine
 * may do on that way (route.c). */
#ifndef RS_ROUTE_H
#define RS_ROUTE_H
#include <stdint.h>
#include <sys/socket.h>

struct rs_route {
	int ifindex;            /* output device, 0 unknown */
	char ifname[16];
	char driver[32];        /* ethtool's driver name ("" unknown) */
	unsigned mtu;           /* path MTU (the route's, else the device's) */
	uint8_t local;          /* delivered on this host (a local address, loopback) */
	uint8_t physical;       /* the device sits on a bus (ethtool bus_info) */
	uint8_t sg, txcsum;     /* scatter-gather, transmit checksum offload on */
	/* The decisions. */
	uint8_t zc;             /* zero-copy sends may pay (above the break-even size) */
	uint16_t gso_max;       /* largest datagram payload sent as UDP_SEGMENT; 0: none */
	const char *zc_why;     /* why (not), for `ringsock check` */
	const char *gso_why;
};

/* The route to dst (AF_INET or AF_INET6, v4-mapped addresses as IPv4),
 * from a cache or one rtnetlink query plus device ioctls: 0, or -errno
 * (then *out holds the conservative answer: no zero-copy, no UDP GSO).
 * Never waits for the network (the kernel answers at once; its ethtool
 * ioctls take the rtnl lock briefly); cached answers are kept
 * RS_ROUTE_TTL_S seconds. */
#define RS_ROUTE_TTL_S 5
int rs_route_lookup(const struct sockaddr *dst, socklen_t len, struct rs_route *out);
/* The same, bypassing the cache (`ringsock check --route`). */
int rs_route_query(const struct sockaddr *dst, socklen_t len, struct rs_route *out);
#endif

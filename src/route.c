/* route.c - route-aware send policy.
 *
 * Where the engine decides how to send, it asks which way the packets
 * go: one RTM_GETROUTE query on a NETLINK_ROUTE socket (the kernel's own
 * route lookup for the destination: output device, route type, path
 * MTU), then the device's flags, MTU and offloads through ioctls
 * (SIOCGIF*, SIOCETHTOOL).  The library cannot link libnl (it must need
 * nothing but libc at run time: tests/integration/exports.sh), so it
 * speaks rtnetlink itself; `ringsock check` lists the routes through
 * libnl and shows these decisions for each.
 *
 * The decisions:
 *  - zero-copy sends (IORING_OP_SEND_ZC) pay only where the packets leave
 *    the host through a device that takes them by DMA: a device on a bus,
 *    with scatter-gather and checksum offload.  Delivered on this host
 *    (loopback, a local address) or through a virtual device (veth, tun,
 *    a bridge of them), the kernel copies the pages when it hands the
 *    packet on, so zero-copy only adds the pinning and the notification;
 *    without offloads it falls back to copying.
 *  - UDP_SEGMENT (GSO) needs transmit checksum offload on the device (else
 *    the kernel refuses it with EIO), and a segment that fits the path
 *    MTU (else EINVAL).
 * Answers are cached process-wide for RS_ROUTE_TTL_S seconds, keyed by
 * the destination address, and a device's facts keyed by its index (a new
 * destination through a known device costs the route query alone): a
 * route or device change reaches the policy within that time.  Neither decision changes what the program sees (a wrong
 * one costs speed, not bytes: the UDP send path falls back to single
 * datagrams on any refusal).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <linux/ethtool.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/ioctl.h>

#include "route.h"
#include "sys.h"

/* ---- the query ---------------------------------------------------------------- */

static void decide(struct rs_route *o, int family)
{
	if (o->local) {
		o->zc = 0;
		o->zc_why = "delivered on this host: the kernel copies the data on delivery";
	} else if (!o->ifindex) {
		o->zc = 0;
		o->zc_why = "no route found";
	} else if (!o->physical) {
		o->zc = 0;
		o->zc_why = "a virtual device: the kernel copies the data where it hands packets on";
	} else if (!o->sg || !o->txcsum) {
		o->zc = 0;
		o->zc_why = "no scatter-gather or checksum offload: the kernel copies";
	} else {
		o->zc = 1;
		o->zc_why = "a device on a bus with scatter-gather and checksum offload";
	}
	unsigned hdr = family == AF_INET6 ? 48 : 28;
	unsigned eth = family == AF_INET6 ? 1452 : 1472; /* the largest datagram the send queue takes */
	if (!o->ifindex) {
		o->gso_max = 0;
		o->gso_why = "no route found";
	} else if (!o->txcsum) {
		o->gso_max = 0;
		o->gso_why = "no transmit checksum offload: the kernel refuses UDP_SEGMENT";
	} else if (o->mtu <= hdr) {
		o->gso_max = 0;
		o->gso_why = "path MTU unknown";
	} else {
		unsigned m = o->mtu - hdr;
		o->gso_max = (uint16_t)(m < eth ? m : eth);
		o->gso_why = m < eth ? "checksum offload; segments limited by the path MTU" : "checksum offload";
	}
}

static void dev_info(int fd, struct rs_route *o)
{
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_ifindex = o->ifindex;
	if (rs_syscall(SYS_ioctl, fd, SIOCGIFNAME, &ifr) < 0) {
		o->ifindex = 0;
		return;
	}
	memcpy(o->ifname, ifr.ifr_name, sizeof(o->ifname));
	o->ifname[sizeof(o->ifname) - 1] = 0;
	if (rs_syscall(SYS_ioctl, fd, SIOCGIFFLAGS, &ifr) == 0 && (ifr.ifr_flags & IFF_LOOPBACK))
		o->local = 1;
	if (!o->mtu && rs_syscall(SYS_ioctl, fd, SIOCGIFMTU, &ifr) == 0 && ifr.ifr_mtu > 0)
		o->mtu = (unsigned)ifr.ifr_mtu;
	struct ethtool_drvinfo di = { .cmd = ETHTOOL_GDRVINFO };
	ifr.ifr_data = (void *)&di;
	if (rs_syscall(SYS_ioctl, fd, SIOCETHTOOL, &ifr) == 0) {
		memcpy(o->driver, di.driver, sizeof(o->driver));
		o->driver[sizeof(o->driver) - 1] = 0;
		/* A device on a bus names it ("0000:00:03.0", "virtio0");
		 * veth, bridges, dummies and loopback name none, tun and tap
		 * name themselves.  (Bonds and VLANs over a real NIC count as
		 * virtual: the conservative side.) */
		static const char *const virt[] = { "tun", "tap", "veth", "bridge", "dummy", "vrf", "vxlan",
						    "geneve", "wireguard", "macvlan", "macvtap", "ipvlan", "netdevsim" };
		o->physical = di.bus_info[0] && strcmp(di.bus_info, "N/A") != 0;
		for (size_t i = 0; i < sizeof(virt) / sizeof(virt[0]); i++)
			if (!strcmp(di.driver, virt[i]) || !strcmp(di.bus_info, virt[i]))
				o->physical = 0;
	}
	struct ethtool_value v = { .cmd = ETHTOOL_GSG };
	ifr.ifr_data = (void *)&v;
	o->sg = rs_syscall(SYS_ioctl, fd, SIOCETHTOOL, &ifr) == 0 && v.data;
	v = (struct ethtool_value){ .cmd = ETHTOOL_GTXCSUM };
	ifr.ifr_data = (void *)&v;
	o->txcsum = rs_syscall(SYS_ioctl, fd, SIOCETHTOOL, &ifr) == 0 && v.data;
}

/* The kernel's route to the address (4 or 16 bytes): device, type, MTU. */
static int nl_route(int fd, int family, const void *addr, struct rs_route *o)
{
	struct {
		struct nlmsghdr h;
		struct rtmsg r;
		char attr[RTA_SPACE(16)];
	} req;
	size_t alen = family == AF_INET ? 4 : 16;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = (uint32_t)NLMSG_LENGTH(sizeof(struct rtmsg) + RTA_SPACE(alen));
	req.h.nlmsg_type = RTM_GETROUTE;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.h.nlmsg_seq = 1;
	req.r.rtm_family = (unsigned char)family;
	req.r.rtm_dst_len = (unsigned char)(alen * 8);
	struct rtattr *a = (struct rtattr *)req.attr;
	a->rta_type = RTA_DST;
	a->rta_len = (unsigned short)RTA_LENGTH(alen);
	memcpy(RTA_DATA(a), addr, alen);
	struct sockaddr_nl k = { .nl_family = AF_NETLINK };
	long n = rs_syscall(SYS_sendto, fd, &req, req.h.nlmsg_len, 0, &k, sizeof(k));
	if (n < 0)
		return (int)n;
	/* The kernel answers a route query before sendto returns. */
	union {
		struct nlmsghdr h;
		char b[4096];
	} buf;
	n = rs_syscall(SYS_recvfrom, fd, buf.b, sizeof(buf.b), MSG_DONTWAIT, NULL, NULL);
	if (n < 0)
		return (int)n;
	for (struct nlmsghdr *h = &buf.h; NLMSG_OK(h, (unsigned)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(h);
			return e->error ? e->error : -ENOENT;
		}
		if (h->nlmsg_type != RTM_NEWROUTE)
			continue;
		struct rtmsg *r = NLMSG_DATA(h);
		if (r->rtm_type == RTN_LOCAL)
			o->local = 1;
		if (r->rtm_type == RTN_UNREACHABLE || r->rtm_type == RTN_BLACKHOLE || r->rtm_type == RTN_PROHIBIT)
			return -ENETUNREACH;
		int len = (int)RTM_PAYLOAD(h);
		for (struct rtattr *x = RTM_RTA(r); RTA_OK(x, len); x = RTA_NEXT(x, len)) {
			if (x->rta_type == RTA_OIF && RTA_PAYLOAD(x) >= sizeof(int))
				memcpy(&o->ifindex, RTA_DATA(x), sizeof(int));
			if (x->rta_type == RTA_METRICS) {
				int ml = (int)RTA_PAYLOAD(x);
				for (struct rtattr *m = RTA_DATA(x); RTA_OK(m, ml); m = RTA_NEXT(m, ml))
					if (m->rta_type == RTAX_MTU && RTA_PAYLOAD(m) >= sizeof(unsigned))
						memcpy(&o->mtu, RTA_DATA(m), sizeof(unsigned));
			}
		}
		return 0;
	}
	return -ENOENT;
}

/* The address family and bytes of dst (v4-mapped as IPv4). */
static int dst_addr(const struct sockaddr *dst, socklen_t len, unsigned char addr[16])
{
	if (dst->sa_family == AF_INET && len >= sizeof(struct sockaddr_in)) {
		memcpy(addr, &((const struct sockaddr_in *)dst)->sin_addr, 4);
		return AF_INET;
	}
	if (dst->sa_family == AF_INET6 && len >= sizeof(struct sockaddr_in6)) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)dst)->sin6_addr;
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(addr, &a->s6_addr[12], 4);
			return AF_INET;
		}
		memcpy(addr, a, 16);
		return AF_INET6;
	}
	return -1;
}

/* ---- the caches --------------------------------------------------------------- */

/* (The engine asks only under a ring's lock or a detached socket's mutex,
 * which fork holds: no fork child inherits this lock held.) */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* A device's facts (name, driver, flags, MTU, offloads), kept per ifindex:
 * a new destination then costs one route query, not the device's ioctls
 * too (which take the kernel's rtnl lock). */
#define DEVS 16
static struct {
	int64_t until;
	struct rs_route d; /* ifindex, ifname, driver, local (loopback), mtu (the device's), physical, sg, txcsum */
} devs[DEVS];
static unsigned dev_next;

static void dev_facts(int fd, struct rs_route *o, int cached, int64_t now)
{
	struct rs_route d = { .ifindex = o->ifindex };
	int have = 0;
	if (cached) {
		pthread_mutex_lock(&cache_lock);
		for (unsigned i = 0; i < DEVS && !have; i++)
			if (devs[i].d.ifindex == o->ifindex && devs[i].until > now) {
				d = devs[i].d;
				have = 1;
			}
		pthread_mutex_unlock(&cache_lock);
	}
	if (!have) {
		dev_info(fd, &d);
		if (cached && d.ifindex) {
			pthread_mutex_lock(&cache_lock);
			unsigned i = dev_next++ % DEVS;
			devs[i].d = d;
			devs[i].until = now + (int64_t)RS_ROUTE_TTL_S * 1000000000;
			pthread_mutex_unlock(&cache_lock);
		}
	}
	o->ifindex = d.ifindex;
	memcpy(o->ifname, d.ifname, sizeof(o->ifname));
	memcpy(o->driver, d.driver, sizeof(o->driver));
	o->local |= d.local;
	if (!o->mtu)
		o->mtu = d.mtu;
	o->physical = d.physical;
	o->sg = d.sg;
	o->txcsum = d.txcsum;
}

static int query(int family, const unsigned char *addr, struct rs_route *out, int cached, int64_t now)
{
	memset(out, 0, sizeof(*out));
	int e = 0;
	long fd = rs_syscall(SYS_socket, AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0) {
		e = (int)fd;
	} else {
		e = nl_route((int)fd, family, addr, out);
		if (!e && out->ifindex)
			dev_facts((int)fd, out, cached, now);
		rs_sys_close((int)fd);
	}
	if (e)
		memset(out, 0, sizeof(*out));
	decide(out, family);
	return e;
}

int rs_route_query(const struct sockaddr *dst, socklen_t len, struct rs_route *out)
{
	unsigned char addr[16];
	int family = dst_addr(dst, len, addr);
	if (family < 0) {
		memset(out, 0, sizeof(*out));
		decide(out, AF_INET);
		return -EAFNOSUPPORT;
	}
	return query(family, addr, out, 0, 0);
}

/* Destinations' answers, kept RS_ROUTE_TTL_S. */
#define CACHE 32
static struct {
	int family;
	unsigned char addr[16];
	int64_t until;
	int err;
	struct rs_route r;
} cache[CACHE];
static unsigned cache_next;

int rs_route_lookup(const struct sockaddr *dst, socklen_t len, struct rs_route *out)
{
	unsigned char addr[16];
	int family = dst_addr(dst, len, addr);
	if (family < 0)
		return rs_route_query(dst, len, out);
	size_t alen = family == AF_INET ? 4 : 16;
	int64_t now = rs_now_ns();
	pthread_mutex_lock(&cache_lock);
	for (unsigned i = 0; i < CACHE; i++) {
		if (cache[i].family == family && cache[i].until > now && !memcmp(cache[i].addr, addr, alen)) {
			*out = cache[i].r;
			int e = cache[i].err;
			pthread_mutex_unlock(&cache_lock);
			return e;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	int e = query(family, addr, out, 1, now);
	pthread_mutex_lock(&cache_lock);
	unsigned i = cache_next++ % CACHE;
	cache[i].family = family;
	memcpy(cache[i].addr, addr, alen);
	cache[i].until = now + (int64_t)RS_ROUTE_TTL_S * 1000000000;
	cache[i].err = e;
	cache[i].r = *out;
	pthread_mutex_unlock(&cache_lock);
	return e;
}

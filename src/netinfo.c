/* netinfo.c - link information from rtnetlink through libnl, TCP sockets
 * from inet_diag through libnl-idiag (built only where libnl is available:
 * not in the musl build), UDP sockets from sock_diag asked directly. */
#include "netinfo.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>

#ifdef RS_HAVE_LIBNL
#include <net/if.h>
#include <netinet/tcp.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <netlink/route/nexthop.h>
#include <netinet/in.h>
#include <string.h>
#ifdef RS_HAVE_LIBNL_IDIAG
#include <netlink/idiag/idiagnl.h>
#include <netlink/idiag/meminfo.h>
#include <netlink/idiag/msg.h>
#endif
#include <stdio.h>

int rs_netinfo_print_links(FILE *out, const char *indent)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_cache *cache = NULL;
	int n = 0, err;
	if (!sk)
		return -1;
	if ((err = nl_connect(sk, NETLINK_ROUTE)) < 0 ||
	    (err = rtnl_link_alloc_cache(sk, AF_UNSPEC, &cache)) < 0) {
		fprintf(out, "%s(netlink query failed: %s)\n", indent, nl_geterror(err));
		nl_socket_free(sk);
		return -1;
	}
	for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
		struct rtnl_link *l = (struct rtnl_link *)o;
		unsigned flags = rtnl_link_get_flags(l);
		fprintf(out, "%s%-12s mtu %-6u %s%s\n", indent, rtnl_link_get_name(l),
			rtnl_link_get_mtu(l), (flags & IFF_UP) ? "up" : "down",
			(flags & IFF_LOOPBACK) ? " loopback" : "");
		n++;
	}
	nl_cache_free(cache);
	nl_socket_free(sk);
	return n;
}

int rs_netinfo_routes(void (*fn)(const char *prefix, const struct sockaddr *probe, socklen_t len,
				 const char *dev, void *arg),
		      void *arg, char *err, size_t errlen)
{
	struct nl_sock *sk = nl_socket_alloc();
	struct nl_cache *routes = NULL, *links = NULL;
	int n = 0, e;
	if (!sk) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	if ((e = nl_connect(sk, NETLINK_ROUTE)) < 0 || (e = rtnl_link_alloc_cache(sk, AF_UNSPEC, &links)) < 0 ||
	    (e = rtnl_route_alloc_cache(sk, AF_UNSPEC, 0, &routes)) < 0) {
		snprintf(err, errlen, "netlink query failed: %s", nl_geterror(e));
		if (links)
			nl_cache_free(links);
		nl_socket_free(sk);
		return -1;
	}
	for (struct nl_object *o = nl_cache_get_first(routes); o; o = nl_cache_get_next(o)) {
		struct rtnl_route *r = (struct rtnl_route *)o;
		int fam = rtnl_route_get_family(r);
		if (rtnl_route_get_table(r) != RT_TABLE_MAIN || rtnl_route_get_type(r) != RTN_UNICAST ||
		    (fam != AF_INET && fam != AF_INET6) || rtnl_route_get_nnexthops(r) < 1)
			continue;
		struct rtnl_nexthop *nh = rtnl_route_nexthop_n(r, 0);
		struct nl_addr *dst = rtnl_route_get_dst(r), *gw = rtnl_route_nh_get_gateway(nh);
		char prefix[INET6_ADDRSTRLEN + 8] = "default", dev[IF_NAMESIZE] = "?";
		if (dst && nl_addr_get_prefixlen(dst))
			nl_addr2str(dst, prefix, sizeof(prefix));
		rtnl_link_i2name(links, rtnl_route_nh_get_ifindex(nh), dev, sizeof(dev));
		/* The policy is asked about the gateway, else the prefix's
		 * address; a default route with neither (a point-to-point
		 * device) is asked about through check --route. */
		struct nl_addr *a = gw ? gw : dst;
		if (!gw && (!dst || !nl_addr_get_prefixlen(dst))) {
			fn(prefix, NULL, 0, dev, arg);
			n++;
			continue;
		}
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		memset(&ss, 0, sizeof(ss));
		if (!a || nl_addr_fill_sockaddr(a, (struct sockaddr *)&ss, &sl) < 0) {
			ss.ss_family = (sa_family_t)fam; /* (the unspecified address) */
			sl = fam == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
		}
		fn(prefix, (struct sockaddr *)&ss, sl, dev, arg);
		n++;
	}
	nl_cache_free(routes);
	nl_cache_free(links);
	nl_socket_free(sk);
	return n;
}
#endif

#if defined(RS_HAVE_LIBNL) && defined(RS_HAVE_LIBNL_IDIAG)
int rs_netinfo_tcp_diag(void (*fn)(const struct rs_tcp_diag *d, void *arg), void *arg, char *err, size_t errlen)
{
	int total = 0;
	static const int families[] = { AF_INET, AF_INET6 };
	for (int f = 0; f < 2; f++) {
		struct nl_sock *sk = nl_socket_alloc();
		struct nl_cache *cache = NULL;
		int e;
		if (!sk) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		if ((e = idiagnl_connect(sk)) < 0 || (e = idiagnl_msg_alloc_cache(sk, families[f], IDIAGNL_SS_ALL, &cache)) < 0) {
			snprintf(err, errlen, "inet_diag: %s", nl_geterror(e));
			nl_socket_free(sk);
			return -1;
		}
		for (struct nl_object *o = nl_cache_get_first(cache); o; o = nl_cache_get_next(o)) {
			struct idiagnl_msg *m = (struct idiagnl_msg *)o;
			struct tcp_info ti = idiagnl_msg_get_tcpinfo(m);
			struct idiagnl_meminfo *mi = idiagnl_msg_get_meminfo(m);
			struct rs_tcp_diag d = {
				.inode = idiagnl_msg_get_inode(m),
				.state = idiagnl_msg_get_state(m),
				.rtt_us = ti.tcpi_rtt,
				.rttvar_us = ti.tcpi_rttvar,
				.cwnd = ti.tcpi_snd_cwnd,
				.rqueue = idiagnl_msg_get_rqueue(m),
				.wqueue = idiagnl_msg_get_wqueue(m),
			};
			if (mi) {
				d.rmem = idiagnl_meminfo_get_rmem(mi);
				d.wmem = idiagnl_meminfo_get_wmem(mi);
				d.fmem = idiagnl_meminfo_get_fmem(mi);
				d.tmem = idiagnl_meminfo_get_tmem(mi);
			}
			fn(&d, arg);
			total++;
		}
		nl_cache_free(cache);
		nl_socket_free(sk);
	}
	return total;
}
#else
int rs_netinfo_tcp_diag(void (*fn)(const struct rs_tcp_diag *d, void *arg), void *arg, char *err, size_t errlen)
{
	(void)fn;
	(void)arg;
	snprintf(err, errlen, "this build has no libnl inet_diag");
	return -1;
}
#endif

#ifndef RS_HAVE_LIBNL
int rs_netinfo_print_links(FILE *out, const char *indent)
{
	fprintf(out, "%s(not available: this build has no libnl)\n", indent);
	return -1;
}

int rs_netinfo_routes(void (*fn)(const char *prefix, const struct sockaddr *probe, socklen_t len,
				 const char *dev, void *arg),
		      void *arg, char *err, size_t errlen)
{
	(void)fn;
	(void)arg;
	snprintf(err, errlen, "this build has no libnl");
	return -1;
}
#endif

/* ---- UDP: sock_diag without libnl ------------------------------------------------ */
/* libnl-idiag sends the old TCPDIAG_GETSOCK request, which has no protocol
 * field; UDP needs SOCK_DIAG_BY_FAMILY with inet_diag_req_v2.  Plain
 * netlink, so the musl build (no libnl) has it too. */

static int udp_diag_family(int family, void (*fn)(const struct rs_udp_diag *d, void *arg), void *arg, char *err,
			   size_t errlen)
{
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0) {
		snprintf(err, errlen, "sock_diag: %s", strerror(errno));
		return -1;
	}
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP, .nlmsg_seq = 1 },
		.r = { .sdiag_family = (unsigned char)family, .sdiag_protocol = IPPROTO_UDP,
		       .idiag_ext = 1 << (INET_DIAG_SKMEMINFO - 1), .idiag_states = ~0u },
	};
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		snprintf(err, errlen, "sock_diag: %s", strerror(errno));
		close(fd);
		return -1;
	}
	/* (aligned for the headers; the kernel fills each part of a dump
	 * to what the reader's buffer takes) */
	long buf[8192 / sizeof(long)];
	int n = 0;
	for (;;) {
		ssize_t len = recv(fd, buf, sizeof(buf), 0);
		if (len < 0 && errno == EINTR)
			continue;
		if (len <= 0) {
			snprintf(err, errlen, "sock_diag: %s", len < 0 ? strerror(errno) : "end of data");
			close(fd);
			return -1;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len); h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				close(fd);
				return n;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				int code = h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) ? -e->error : EPROTO;
				snprintf(err, errlen, "sock_diag for UDP: %s%s", strerror(code),
					 code == ENOENT ? " (no udp_diag module?)" : "");
				close(fd);
				return -1;
			}
			if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
				continue;
			const struct inet_diag_msg *m = NLMSG_DATA(h);
			struct rs_udp_diag d = { .inode = m->idiag_inode, .rqueue = m->idiag_rqueue,
						 .wqueue = m->idiag_wqueue };
			int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
			for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen)) {
				if (a->rta_type != INET_DIAG_SKMEMINFO)
					continue;
				const __u32 *mi = RTA_DATA(a);
				size_t cnt = RTA_PAYLOAD(a) / sizeof(__u32);
				if (cnt > SK_MEMINFO_RCVBUF) {
					d.rmem = mi[SK_MEMINFO_RMEM_ALLOC];
					d.rcvbuf = mi[SK_MEMINFO_RCVBUF];
				}
				if (cnt > SK_MEMINFO_DROPS)
					d.drops = mi[SK_MEMINFO_DROPS];
			}
			fn(&d, arg);
			n++;
		}
	}
}

int rs_netinfo_udp_diag(void (*fn)(const struct rs_udp_diag *d, void *arg), void *arg, char *err, size_t errlen)
{
	int a = udp_diag_family(AF_INET, fn, arg, err, errlen);
	int b = a < 0 ? -1 : udp_diag_family(AF_INET6, fn, arg, err, errlen);
	return b < 0 ? -1 : a + b;
}

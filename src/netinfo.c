/* netinfo.c - link information from rtnetlink through libnl.  Built only
 * where libnl is available (not in the musl build). */
#include "netinfo.h"

#ifdef RS_HAVE_LIBNL
#include <net/if.h>
#include <netlink/netlink.h>
#include <netlink/route/link.h>

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
#else
int rs_netinfo_print_links(FILE *out, const char *indent)
{
	fprintf(out, "%s(not available: this build has no libnl)\n", indent);
	return -1;
}
#endif

/* IPv6 loopback: TCP and UDP, v4-mapped addresses, IPV6_V6ONLY.
 * ENGINE_MIN_ACCELERATED=6 */
#include "../scn.h"

int main(void)
{
	int c, s;
	char buf[64];
	int probe = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 t = { .sin6_family = AF_INET6, .sin6_addr = in6addr_loopback };
	if (probe < 0 || bind(probe, (struct sockaddr *)&t, sizeof(t))) {
		say("no IPv6 loopback here");
		return 0;
	}
	close(probe);
	tcp_pair_family(AF_INET6, &c, &s);
	R("send v6", send(c, "six", 3, 0));
	long n = R("recv v6", recv(s, buf, sizeof(buf), 0));
	show("got", buf, n);
	struct sockaddr_in6 pa;
	socklen_t pl = sizeof(pa);
	R("getpeername v6", getpeername(s, (struct sockaddr *)&pa, &pl));
	say("family %d len %u loopback %d", pa.sin6_family, (unsigned)pl,
	    !memcmp(&pa.sin6_addr, &in6addr_loopback, sizeof(pa.sin6_addr)));

	/* dual-stack listener accepts an IPv4 client with a mapped address */
	int l = socket(AF_INET6, SOCK_STREAM, 0);
	int off = 0;
	R("IPV6_V6ONLY 0", setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)));
	struct sockaddr_in6 any = { .sin6_family = AF_INET6, .sin6_addr = in6addr_any };
	socklen_t al = sizeof(any);
	bind(l, (struct sockaddr *)&any, sizeof(any));
	listen(l, 4);
	getsockname(l, (struct sockaddr *)&any, &al);
	int c4 = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = any.sin6_port,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	R("v4 connect to dual-stack", connect(c4, (struct sockaddr *)&a4, sizeof(a4)));
	pl = sizeof(pa);
	int s4 = RFD("accept", accept(l, (struct sockaddr *)&pa, &pl));
	say("mapped %d", IN6_IS_ADDR_V4MAPPED(&pa.sin6_addr));
	send(c4, "mapped", 6, 0);
	n = R("recv", recv(s4, buf, sizeof(buf), 0));
	show("got", buf, n);

	/* UDP v6 */
	int u1 = socket(AF_INET6, SOCK_DGRAM, 0), u2 = socket(AF_INET6, SOCK_DGRAM, 0);
	struct sockaddr_in6 ua = { .sin6_family = AF_INET6, .sin6_addr = in6addr_loopback };
	socklen_t ul = sizeof(ua);
	bind(u1, (struct sockaddr *)&ua, sizeof(ua));
	getsockname(u1, (struct sockaddr *)&ua, &ul);
	R("sendto v6", sendto(u2, "dgram6", 6, 0, (struct sockaddr *)&ua, ul));
	n = R("recv v6 datagram", recv(u1, buf, sizeof(buf), 0));
	show("got", buf, n);
	return 0;
}

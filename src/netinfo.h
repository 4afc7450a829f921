/* netinfo.h - network links and routes through libnl (rtnetlink). */
#ifndef RS_NETINFO_H
#define RS_NETINFO_H
#include <stdio.h>
/* Print one line per network link (name, MTU, state).  Returns the number
 * of links, or -1 with a reason printed when libnl is not built in or the
 * netlink query fails. */
int rs_netinfo_print_links(FILE *out, const char *indent);
#endif

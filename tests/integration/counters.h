/* counters.h - for integration programs that read this process's ringsock
 * counters (ringsock_stats_snapshot, found at run time: the library is
 * preloaded) around a loopback connection of their own. */
#ifndef RS_TEST_COUNTERS_H
#define RS_TEST_COUNTERS_H
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <ringsock.h>

static int (*snap)(struct ringsock_stats *);

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* Find the library's snapshot call; 0 if the library is not loaded. */
static int counters_init(void)
{
	snap = (int (*)(struct ringsock_stats *))dlsym(RTLD_DEFAULT, "ringsock_stats_snapshot");
	return snap != NULL;
}

/* The counters now; exits when the layout is older than min_version. */
static struct ringsock_stats now_at_least(unsigned min_version)
{
	struct ringsock_stats st;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (snap(&st) != 0 || st.version < min_version) {
		fprintf(stderr, "snapshot failed or too old\n");
		exit(1);
	}
	return st;
}

/* A listening TCP socket on 127.0.0.1, any port: *a is its address. */
static int loopback_listener(struct sockaddr_in *a)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	socklen_t alen = sizeof(*a);
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (l < 0 || bind(l, (struct sockaddr *)a, sizeof(*a)) < 0 || listen(l, 4) < 0 ||
	    getsockname(l, (struct sockaddr *)a, &alen) < 0)
		die("listen");
	return l;
}
#endif

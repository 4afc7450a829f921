/* api_client: uses the public API through dlsym, as a program that may or
 * may not run under the library would.  Prints what it sees. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ringsock.h>

int main(void)
{
	const char *(*version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "ringsock_version");
	int (*snap)(struct ringsock_stats *) =
		(int (*)(struct ringsock_stats *))dlsym(RTLD_DEFAULT, "ringsock_stats_snapshot");
	if (!version || !snap) {
		printf("ringsock not loaded\n");
		return 0;
	}
	printf("ringsock %s (header %s)\n", version(), RINGSOCK_VERSION_STRING);
	int a = socket(AF_INET, SOCK_STREAM, 0), b = socket(AF_INET6, SOCK_DGRAM, 0);
	int u = socket(AF_UNIX, SOCK_STREAM, 0);
	struct ringsock_stats st;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	if (snap(&st) != 0) {
		printf("snapshot failed\n");
		return 1;
	}
	printf("inet %llu inet6 %llu unix %llu tracked %llu accelerated %llu\n",
	       (unsigned long long)st.sockets_created[RINGSOCK_DOM_INET],
	       (unsigned long long)st.sockets_created[RINGSOCK_DOM_INET6],
	       (unsigned long long)st.sockets_created[RINGSOCK_DOM_UNIX],
	       (unsigned long long)st.sockets_tracked,
	       (unsigned long long)st.sockets_accelerated);
	/* Calls on non-socket descriptors: counted only with RINGSOCK_STATS. */
	int dn = open("/dev/null", O_WRONLY);
	for (int i = 0; i < 3; i++)
		if (write(dn, "x", 1) != 1)
			return 1;
	close(dn);
	st.size = sizeof(st);
	snap(&st);
	printf("other_rw %llu\n", (unsigned long long)st.calls_other[RINGSOCK_FAM_RW]);
	close(a);
	close(b);
	close(u);
	return 0;
}

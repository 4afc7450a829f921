/* fdstorm: behaves like a daemon that closes every descriptor it did not
 * open, then opens a socket and exits normally.  Under the library, the
 * engine's own descriptor (the RINGSOCK_STATS file) must survive, so the
 * report still arrives. */
#define _GNU_SOURCE
#include <netinet/in.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	int top = rl.rlim_cur > 65536 ? 65536 : (int)rl.rlim_cur;
	int closed = 0;
	for (int fd = 3; fd < top; fd++)
		if (close(fd) == 0)
			closed++;
	/* dup2 a fresh socket over every number too */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	for (int fd = 3; fd < top; fd++)
		if (fd != s)
			dup2(s, fd);
	for (int fd = 3; fd < top; fd++)
		if (fd != s)
			close(fd);
#ifdef __GLIBC__
	close_range(3, ~0u, 0);
	closefrom(3);
#endif
	int t = socket(AF_INET, SOCK_STREAM, 0);
	printf("closed %d inherited descriptors; new socket %s\n", closed, t >= 0 ? "ok" : "failed");
	return 0;
}

/* rs-idle-conns HOST PORT CONNS ACTIVE ROUNDS [SIZE] - open CONNS
 * connections to an rs-rr-server and keep them idle; print "ready"; on a
 * line from stdin, run ROUNDS request-response rounds (SIZE bytes) on the
 * first ACTIVE connections, print "done"; on the next line, exit.  The
 * harness reads the server's memory at "ready" and at "done". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static int full(int fd, char *b, size_t n, int wr)
{
	size_t o = 0;
	while (o < n) {
		ssize_t r = wr ? write(fd, b + o, n - o) : read(fd, b + o, n - o);
		if (r <= 0)
			return -1;
		o += (size_t)r;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: rs-idle-conns HOST PORT CONNS ACTIVE ROUNDS [SIZE]\n");
		return 2;
	}
	int n = atoi(argv[3]), active = atoi(argv[4]), rounds = atoi(argv[5]);
	size_t size = argc > 6 ? (size_t)atoi(argv[6]) : 1024;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2])) };
	inet_pton(AF_INET, argv[1], &a.sin_addr);
	int *fds = calloc((size_t)n, sizeof(int));
	for (int i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] < 0 || connect(fds[i], (struct sockaddr *)&a, sizeof(a))) {
			perror("connect");
			return 1;
		}
	}
	printf("ready\n");
	fflush(stdout);
	char line[16], *buf = calloc(1, size);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < active && i < n; i++)
			if (full(fds[i], buf, size, 1) || full(fds[i], buf, size, 0)) {
				fprintf(stderr, "request failed\n");
				return 1;
			}
	printf("done\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		return 0;
	return 0;
}

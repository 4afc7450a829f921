/* rs-rr-client HOST PORT CONNS SECONDS [SIZE] - request-response load:
 * CONNS connections, each with one SIZE-byte request outstanding, for
 * SECONDS.  Prints "requests=N seconds=S p50_us=X p99_us=Y". */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct conn {
	int fd;
	size_t sent, got;
	uint64_t t0;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define HBUCKETS 100000 /* 1 us buckets up to 100 ms */
static uint64_t hist[HBUCKETS + 1];

static double pct(uint64_t total, double p)
{
	uint64_t want = (uint64_t)(total * p), seen = 0;
	for (int i = 0; i <= HBUCKETS; i++) {
		seen += hist[i];
		if (seen > want)
			return i;
	}
	return HBUCKETS;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: rs-rr-client HOST PORT CONNS SECONDS [SIZE]\n");
		return 2;
	}
	int nconn = atoi(argv[3]);
	double secs = atof(argv[4]);
	size_t size = argc > 5 ? (size_t)atoi(argv[5]) : 1024;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2])) };
	inet_pton(AF_INET, argv[1], &a.sin_addr);
	int ep = epoll_create1(0), one = 1;
	struct conn *cs = calloc((size_t)nconn, sizeof(*cs));
	char *req = calloc(1, size), *rbuf = malloc(size);
	for (int i = 0; i < nconn; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a))) {
			perror("connect");
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		int fl = 1;
		ioctl(fd, FIONBIO, &fl);
		cs[i].fd = fd;
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = &cs[i] };
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
	}
	uint64_t start = now_ns(), end = start + (uint64_t)(secs * 1e9), reqs = 0;
	for (int i = 0; i < nconn; i++) {
		cs[i].t0 = now_ns();
		if (write(cs[i].fd, req, size) != (ssize_t)size) {
			perror("write");
			return 1;
		}
	}
	struct epoll_event evs[512];
	uint64_t t = start;
	while (t < end) {
		int n = epoll_wait(ep, evs, 512, 100);
		t = now_ns();
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			ssize_t r = read(c->fd, rbuf, size - c->got);
			if (r <= 0) {
				if (r < 0 && errno == EAGAIN)
					continue;
				fprintf(stderr, "connection lost\n");
				return 1;
			}
			c->got += (size_t)r;
			if (c->got < size)
				continue;
			c->got = 0;
			uint64_t us = (t - c->t0) / 1000;
			hist[us > HBUCKETS ? HBUCKETS : us]++;
			reqs++;
			if (t >= end)
				continue;
			c->t0 = t;
			size_t off = 0;
			while (off < size) {
				ssize_t w = write(c->fd, req + off, size - off);
				if (w > 0)
					off += (size_t)w;
				else if (w < 0 && errno != EAGAIN) {
					perror("write");
					return 1;
				}
			}
		}
	}
	double elapsed = (double)(now_ns() - start) / 1e9;
	printf("requests=%llu seconds=%.3f p50_us=%.0f p99_us=%.0f\n", (unsigned long long)reqs, elapsed,
	       pct(reqs, 0.50), pct(reqs, 0.99));
	for (int i = 0; i < nconn; i++)
		close(cs[i].fd);
	return 0;
}

/* udp_flood.c - a UDP receiver and a sender for the datagram benchmarks.
 *
 *   rs-udp-sink PORT recvfrom|recvmmsg [ADDR]
 *       binds ADDR:PORT (127.0.0.1 by default) and receives with one
 *       recvfrom per datagram, or recvmmsg 64 at a time (MSG_WAITFORONE),
 *       blocking; from the first datagram on, it stops after 500 ms with
 *       none and prints "received N".
 *   rs-udp-blast ADDR PORT SIZE SECS [sendto|gso]
 *       sends SIZE-byte datagrams to ADDR:PORT for SECS seconds, 32 per
 *       sendmmsg on a connected socket, as fast as the kernel takes them,
 *       and prints "sent N"; with sendto, one sendto per datagram on an
 *       unconnected socket (the way most programs send), reading the
 *       clock every 64; with gso, 64 datagrams per send as one
 *       UDP_SEGMENT message on a connected socket (the way QUIC stacks
 *       send), which offers more than a receiver reading one datagram per
 *       system call can take: the receive rows' overload shape.
 *
 * In the receive rows the sink is the program under test (kernel path or
 * ringsock) and the sender runs on the kernel path; in the send rows both
 * are.  bench/run divides what arrived by the sender's time and compares
 * what was lost. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int sink(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	int mmsg = !strcmp(argv[2], "recvmmsg");
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[1])) };
	inet_pton(AF_INET, argc > 3 ? argv[3] : "127.0.0.1", &a.sin_addr);
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("sink");
		return 1;
	}
	unsigned long long got = 0;
	enum { N = 64 };
	static char bufs[N][2048];
	struct mmsghdr v[N];
	struct iovec iov[N];
	for (int i = 0; i < N; i++) {
		iov[i] = (struct iovec){ bufs[i], sizeof(bufs[i]) };
		memset(&v[i], 0, sizeof(v[i]));
		v[i].msg_hdr.msg_iov = &iov[i];
		v[i].msg_hdr.msg_iovlen = 1;
	}
	for (;;) {
		long r;
		if (mmsg) {
			r = recvmmsg(s, v, N, MSG_WAITFORONE, NULL);
		} else {
			struct sockaddr_in from;
			socklen_t fl = sizeof(from);
			r = recvfrom(s, bufs[0], sizeof(bufs[0]), 0, (struct sockaddr *)&from, &fl) >= 0 ? 1 : -1;
		}
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN && got)
				break; /* 500 ms with nothing: the sender is done */
			if (errno == EAGAIN)
				continue;
			perror("receive");
			return 1;
		}
		if (!got) { /* from the first datagram on, the end is a pause */
			struct timeval tv = { 0, 500000 };
			setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		}
		got += (unsigned long long)r;
	}
	printf("received %llu\n", got);
	return 0;
}

static int blast(int argc, char **argv)
{
	if (argc < 5)
		return 2;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[2])) };
	inet_pton(AF_INET, argv[1], &a.sin_addr);
	size_t size = (size_t)atol(argv[3]);
	double secs = atof(argv[4]);
	int per = argc > 5 && !strcmp(argv[5], "sendto");
	int gso = argc > 5 && !strcmp(argv[5], "gso");
	enum { N = 32, SEGS = 64 };
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || (!per && connect(s, (struct sockaddr *)&a, sizeof(a)) < 0) || size > 65507 ||
	    (gso && (!size || size * SEGS > 65507))) {
		perror("blast");
		return 1;
	}
	int seg = (int)size;
	if (gso && setsockopt(s, IPPROTO_UDP, UDP_SEGMENT, &seg, sizeof(seg)) < 0) {
		perror("blast: UDP_SEGMENT");
		return 1;
	}
	char *buf = calloc(1, size ? size * (gso ? SEGS : 1) : 1);
	struct mmsghdr v[N];
	struct iovec iov = { buf, size };
	for (int i = 0; i < N; i++) {
		memset(&v[i], 0, sizeof(v[i]));
		v[i].msg_hdr.msg_iov = &iov;
		v[i].msg_hdr.msg_iovlen = 1;
	}
	unsigned long long sent = 0;
	double end = now() + secs;
	while (per && now() < end) {
		for (int i = 0; i < 64; i++) {
			if (sendto(s, buf, size, 0, (struct sockaddr *)&a, sizeof(a)) >= 0)
				sent++;
			else if (errno != EINTR && errno != ENOBUFS && errno != EAGAIN) {
				perror("sendto");
				return 1;
			}
		}
	}
	while (gso && now() < end) {
		if (send(s, buf, size * SEGS, 0) >= 0)
			sent += SEGS;
		else if (errno != EINTR && errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED) {
			perror("send");
			return 1;
		}
	}
	while (!per && !gso && now() < end) {
		int r = sendmmsg(s, v, N, 0);
		if (r < 0) {
			if (errno == EINTR || errno == ENOBUFS || errno == EAGAIN || errno == ECONNREFUSED)
				continue;
			perror("sendmmsg");
			return 1;
		}
		sent += (unsigned long long)r;
	}
	printf("sent %llu\n", sent);
	return 0;
}

int main(int argc, char **argv)
{
	const char *me = strrchr(argv[0], '/');
	me = me ? me + 1 : argv[0];
	if (!strcmp(me, "rs-udp-blast"))
		return blast(argc, argv);
	return sink(argc, argv);
}

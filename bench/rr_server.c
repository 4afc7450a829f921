/* rs-rr-server PORT [SIZE [ADDR]] - a plain epoll request-response server
 * on ADDR (default 127.0.0.1): each
 * connection sends fixed-size requests (SIZE, default 1 KiB) and gets a
 * response of the same size back.  Single-threaded, level-triggered,
 * nonblocking: what a typical event-loop server does.  Runs until SIGTERM
 * or SIGINT. */
#define _GNU_SOURCE
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

struct conn {
	int fd;
	size_t got;   /* request bytes received */
	size_t owed;  /* response bytes still to write */
	char buf[];   /* request size */
};

static volatile sig_atomic_t stop;
static void on_sig(int s) { (void)s; stop = 1; }

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rs-rr-server PORT [SIZE [ADDR]]\n");
		return 2;
	}
	size_t size = argc > 2 ? (size_t)atoi(argv[2]) : 1024;
	struct sigaction sa = { .sa_handler = on_sig };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[1])),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (argc > 3 && inet_pton(AF_INET, argv[3], &a.sin_addr) != 1) {
		fprintf(stderr, "rs-rr-server: bad address %s\n", argv[3]);
		return 2;
	}
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4096)) {
		perror("listen");
		return 1;
	}
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	epoll_ctl(ep, EPOLL_CTL_ADD, l, &ev);
	struct epoll_event evs[256];
	char *resp = calloc(1, size);
	while (!stop) {
		int n = epoll_wait(ep, evs, 256, 1000);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			if (!c) {
				int fd;
				while ((fd = accept4(l, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					struct conn *nc = calloc(1, sizeof(*nc) + size);
					nc->fd = fd;
					struct epoll_event e = { .events = EPOLLIN, .data.ptr = nc };
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e);
				}
				continue;
			}
			int dead = 0;
			if (c->owed == 0) {
				ssize_t r = read(c->fd, c->buf + c->got, size - c->got);
				if (r > 0) {
					c->got += (size_t)r;
					if (c->got == size) {
						c->got = 0;
						c->owed = size;
					}
				} else if (r == 0 || errno != EAGAIN) {
					dead = 1;
				}
			}
			while (!dead && c->owed) {
				ssize_t w = write(c->fd, resp + (size - c->owed), c->owed);
				if (w > 0) {
					c->owed -= (size_t)w;
				} else if (w < 0 && errno == EAGAIN) {
					struct epoll_event e = { .events = EPOLLOUT, .data.ptr = c };
					epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
					break;
				} else {
					dead = 1;
				}
			}
			if (!dead && !c->owed && (evs[i].events & EPOLLOUT)) {
				struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &e);
			}
			if (dead) {
				close(c->fd);
				free(c);
			}
		}
	}
	return 0;
}

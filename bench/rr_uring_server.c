/* rs-rr-uring-server PORT [SIZE] [NBUFS] - the native io_uring reference:
 * what a user gets by rewriting the epoll server (rr_server.c) for
 * io_uring by hand.  Multishot accept, multishot recv into a provided-buffer
 * ring (NBUFS x 4 KiB, default 1024), one send in flight per connection,
 * consumed buffers returned in one batch per loop, one submit-and-wait per
 * loop, SINGLE_ISSUER + DEFER_TASKRUN when the kernel has them (else
 * COOP_TASKRUN, else plain).  Runs until SIGTERM or SIGINT. */
#define _GNU_SOURCE
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#ifndef IORING_SETUP_DEFER_TASKRUN
#define IORING_SETUP_DEFER_TASKRUN (1U << 13)
#endif

enum { OP_ACCEPT = 1, OP_RECV = 2, OP_SEND = 3 };
#define UD(op, idx) (((uint64_t)(op) << 32) | (uint32_t)(idx))
#define BGID 1
#define BUFSZ 4096

struct conn {
	int fd;
	size_t got;       /* bytes of the current request received */
	size_t pending;   /* whole responses owed */
	size_t inflight;  /* bytes of the send in flight (0: none) */
};

static volatile sig_atomic_t stop;
static void on_sig(int s) { (void)s; stop = 1; }

static struct io_uring ring;
static struct conn *conns;
static int nconns_max = 65536;
static char *resp;
static size_t size;

static struct io_uring_sqe *sqe_get(void)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
	if (!sqe) {
		io_uring_submit(&ring);
		sqe = io_uring_get_sqe(&ring);
	}
	return sqe;
}

static void arm_recv(int idx)
{
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_recv_multishot(sqe, conns[idx].fd, NULL, 0, 0);
	sqe->flags |= IOSQE_BUFFER_SELECT;
	sqe->buf_group = BGID;
	io_uring_sqe_set_data64(sqe, UD(OP_RECV, idx));
}

static void start_send(int idx)
{
	struct conn *c = &conns[idx];
	if (c->inflight || !c->pending)
		return;
	c->inflight = size;
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_send(sqe, c->fd, resp, size, MSG_NOSIGNAL);
	io_uring_sqe_set_data64(sqe, UD(OP_SEND, idx));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rs-rr-uring-server PORT [SIZE] [NBUFS]\n");
		return 2;
	}
	size = argc > 2 ? (size_t)atoi(argv[2]) : 1024;
	unsigned nbufs = argc > 3 ? (unsigned)atoi(argv[3]) : 1024;
	struct sigaction sa = { .sa_handler = on_sig };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	struct io_uring_params p;
	unsigned flag_sets[] = { IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN,
				 IORING_SETUP_COOP_TASKRUN, 0 };
	int r = -1;
	for (unsigned i = 0; i < 3 && r < 0; i++) {
		memset(&p, 0, sizeof(p));
		p.flags = flag_sets[i] | IORING_SETUP_CQSIZE;
		p.cq_entries = 8192;
		r = io_uring_queue_init_params(2048, &ring, &p);
	}
	if (r < 0) {
		fprintf(stderr, "io_uring_queue_init: %s\n", strerror(-r));
		return 1;
	}
	/* provided-buffer ring */
	size_t rbytes = nbufs * sizeof(struct io_uring_buf);
	struct io_uring_buf_ring *br = mmap(NULL, rbytes, PROT_READ | PROT_WRITE,
					    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *bufs = malloc((size_t)nbufs * BUFSZ);
	struct io_uring_buf_reg reg = { .ring_addr = (unsigned long)br, .ring_entries = nbufs, .bgid = BGID };
	if (br == MAP_FAILED || !bufs || io_uring_register_buf_ring(&ring, &reg, 0)) {
		fprintf(stderr, "buffer ring registration failed\n");
		return 1;
	}
	io_uring_buf_ring_init(br);
	unsigned mask = io_uring_buf_ring_mask(nbufs);
	for (unsigned i = 0; i < nbufs; i++)
		io_uring_buf_ring_add(br, bufs + (size_t)i * BUFSZ, BUFSZ, (unsigned short)i, mask, (int)i);
	io_uring_buf_ring_advance(br, (int)nbufs);

	conns = calloc((size_t)nconns_max, sizeof(*conns));
	resp = calloc(1, size);
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((unsigned short)atoi(argv[1])),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4096)) {
		perror("listen");
		return 1;
	}
	struct io_uring_sqe *sqe = sqe_get();
	io_uring_prep_multishot_accept(sqe, l, NULL, NULL, 0);
	io_uring_sqe_set_data64(sqe, UD(OP_ACCEPT, 0));

	while (!stop) {
		r = io_uring_submit_and_wait(&ring, 1);
		if (r < 0 && r != -EINTR && r != -ETIME) {
			fprintf(stderr, "submit_and_wait: %s\n", strerror(-r));
			break;
		}
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		int returned = 0;
		io_uring_for_each_cqe(&ring, head, cqe) {
			seen++;
			unsigned op = (unsigned)(cqe->user_data >> 32);
			int idx = (int)(uint32_t)cqe->user_data;
			if (op == OP_ACCEPT) {
				if (cqe->res >= 0 && cqe->res < nconns_max) {
					int fd = cqe->res;
					setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					memset(&conns[fd], 0, sizeof(conns[fd]));
					conns[fd].fd = fd;
					arm_recv(fd);
				}
				if (!(cqe->flags & IORING_CQE_F_MORE)) {
					sqe = sqe_get();
					io_uring_prep_multishot_accept(sqe, l, NULL, NULL, 0);
					io_uring_sqe_set_data64(sqe, UD(OP_ACCEPT, 0));
				}
			} else if (op == OP_RECV) {
				struct conn *c = &conns[idx];
				if (cqe->flags & IORING_CQE_F_BUFFER) {
					unsigned bid = cqe->flags >> IORING_CQE_BUFFER_SHIFT;
					io_uring_buf_ring_add(br, bufs + (size_t)bid * BUFSZ, BUFSZ,
							      (unsigned short)bid, mask, returned++);
				}
				if (cqe->res > 0) {
					c->got += (size_t)cqe->res;
					c->pending += c->got / size;
					c->got %= size;
					start_send(idx);
					if (!(cqe->flags & IORING_CQE_F_MORE))
						arm_recv(idx);
				} else if (cqe->res == -ENOBUFS) {
					if (!(cqe->flags & IORING_CQE_F_MORE))
						arm_recv(idx);
				} else if (!(cqe->flags & IORING_CQE_F_MORE)) {
					if (!c->inflight)
						close(c->fd);
					c->fd = -1;
				}
			} else if (op == OP_SEND) {
				struct conn *c = &conns[idx];
				if (cqe->res <= 0) {
					c->inflight = 0;
					continue;
				}
				c->inflight -= (size_t)cqe->res;
				if (c->inflight) { /* short send: the rest */
					sqe = sqe_get();
					io_uring_prep_send(sqe, c->fd, resp + (size - c->inflight), c->inflight,
							   MSG_NOSIGNAL);
					io_uring_sqe_set_data64(sqe, UD(OP_SEND, idx));
					continue;
				}
				c->pending--;
				if (c->fd < 0)
					close(idx);
				else
					start_send(idx);
			}
		}
		io_uring_cq_advance(&ring, seen);
		if (returned)
			io_uring_buf_ring_advance(br, returned); /* one tail update per loop */
	}
	io_uring_queue_exit(&ring);
	return 0;
}

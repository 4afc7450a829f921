/* metrics.c - `ringsock stat --openmetrics` and `--serve`: the copies the
 * processes publish (src/publish.h, read by stat.c) in the Prometheus text
 * exposition format (version 0.0.4, what Prometheus asks for and promtool
 * checks), and a small HTTP server for them.
 *
 * Counts go per process (labels pid and command), never per socket: the
 * number of series stays bounded by the processes, whatever they open.
 * Sockets are counted by their engine state (a state label) and
 * pass-through by reason (a reason label); the per-socket table stays in
 * `stat --sockets`.  A process that exits is gone from the next scrape
 * (its copy is stale, stat.c skips it).
 *
 * The server is one thread, one connection at a time (a scrape is a few
 * kilobytes, made in well under a millisecond): each connection has
 * RS_HTTP_READ_MS to send its request and RS_HTTP_WRITE_MS to take the
 * answer, so a slow or silent client delays the others by that much at
 * most, and never hangs the server. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "names.h"
#include "publish.h"

#define RS_HTTP_READ_MS 5000
#define RS_HTTP_WRITE_MS 10000
#define RS_HTTP_MAX_REQUEST 8192

/* ---- the exposition ---------------------------------------------------------- */

/* Label values of the socket states (stat.c's names, as label values). */
static const char *const state_labels[] = { "tracked", "armed", "armed_kernel_reads", "leaving", "kernel", "passed",
					    "busy" };
_Static_assert(sizeof(state_labels) / sizeof(state_labels[0]) == RS_PUB_BUSY + 1, "a state without a label");

/* The engine's counters (struct ringsock_stats from `rings` on, in
 * rs_engine_names' order): ringsock_NAME_total, but frag_chunks, a count
 * of live chunks (a gauge). */
static const char *const engine_help[RS_ENGINE_COUNTERS] = {
	"Per-thread io_uring instances the engine created.",
	"io_uring_enter system calls the engine made.",
	"Socket calls the engine answered without any system call.",
	"Send operations the engine submitted to io_uring.",
	"Multishot receives stopped by an empty buffer ring.",
	"Times a socket hit its bound on the data the engine holds.",
	"Buffer-ring tail advances returning consumed buffers.",
	"Times free send memory went back to the operating system.",
	"Send frag chunks allocated and not yet freed.",
	"Served sockets handed back to the kernel path.",
	"Sends and receives made straight to the kernel.",
	"Sends finished by the drain thread after the kernel's send buffer filled.",
	"Enters that found completions the full completion queue had held back.",
	"Received buffers queued through the ring's overflow slots.",
	"Times a socket's reads went to the kernel.",
	"Times a socket's reads came back to the engine.",
	"Times a thread's receive buffers grew.",
	"Datagrams the engine received but dropped: the socket held its SO_RCVBUF already.",
	"Datagrams the engine queued and sent in batches.",
	"Messages that carried several queued datagrams as one UDP GSO send.",
	"Queued datagrams the kernel refused.",
	"Zero-copy sends of queued TCP bytes.",
	"Zero-copy sends the kernel reported it copied after all.",
	"Zero-copy sends the kernel refused, sent again copied.",
	"Edge-triggered epoll registrations the library registered anew with the kernel when a socket changed hands (each can report its readiness once more than the kernel path would).",
	"Listings of /proc/self/fd made to look for an io_uring the program made without the C library.",
	"Sockets handed back to the kernel for good because their thread served one socket per wake-up (nothing to batch).",
};

static void family(FILE *o, const char *name, const char *type, const char *help)
{
	fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The labels every sample has: pid and command (escaped as the format
 * asks: backslash and double quote; stat.c already made the rest
 * printable). */
static void series(FILE *o, const char *name, const struct rs_pub *p, const char *extra, const char *value)
{
	char comm[32];
	fprintf(o, "%s{pid=\"%d\",command=\"", name, p->pid);
	for (const char *c = rs_stat_comm(p, comm, sizeof(comm)); *c; c++)
		fprintf(o, *c == '\\' || *c == '"' ? "\\%c" : "%c", *c);
	fputc('"', o);
	if (extra)
		fprintf(o, ",%s=\"%s\"", extra, value); /* (our own names: nothing to escape) */
	fputs("} ", o);
}

static void sample(FILE *o, const char *name, const struct rs_pub *p, uint64_t v)
{
	series(o, name, p, NULL, NULL);
	fprintf(o, "%" PRIu64 "\n", v);
}

static int64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define STR(x) #x
#define XSTR(x) STR(x)

/* One scalar family over every process. */
#define SCALAR(name, type, help, expr)                                  \
	do {                                                            \
		family(o, name, type, help);                            \
		for (int i = 0; i < n; i++) {                           \
			const struct rs_pub *p = ps[i].p;               \
			sample(o, name, p, (uint64_t)(expr));           \
		}                                                       \
	} while (0)

void rs_metrics_print(FILE *o, const struct proc *ps, int n)
{
	char name[96];
	SCALAR("ringsock_engine_running", "gauge",
	       "Whether the io_uring engine serves the process's sockets (0: every socket passes through).",
	       p->engine_on && !p->pt_reason);
	SCALAR("ringsock_sockets_tracked_total", "counter", "TCP and UDP sockets the library gave a record.",
	       p->stats.sockets_tracked);
	SCALAR("ringsock_sockets_served_total", "counter", "TCP and UDP sockets the io_uring engine served.",
	       p->stats.sockets_accelerated);
	family(o, "ringsock_sockets_passed_through_total", "counter",
	       "TCP and UDP sockets passed through to the kernel, by reason.");
	for (int i = 0; i < n; i++)
		for (int r = 0; r < RINGSOCK_PT_COUNT; r++) {
			series(o, "ringsock_sockets_passed_through_total", ps[i].p, "reason", rs_pt_names[r]);
			fprintf(o, "%" PRIu64 "\n", ps[i].p->stats.passthrough[r]);
		}
	family(o, "ringsock_sockets", "gauge", "Open TCP and UDP sockets the process published, by engine state.");
	for (int i = 0; i < n; i++) {
		uint64_t by[RS_PUB_BUSY + 1] = { 0 };
		for (uint32_t j = 0; j < ps[i].p->nsocks; j++)
			by[ps[i].p->socks[j].state <= RS_PUB_BUSY ? ps[i].p->socks[j].state : RS_PUB_TRACKED]++;
		for (int st = 0; st <= RS_PUB_BUSY; st++) {
			series(o, "ringsock_sockets", ps[i].p, "state", state_labels[st]);
			fprintf(o, "%" PRIu64 "\n", by[st]);
		}
	}
	SCALAR("ringsock_sockets_unpublished", "gauge",
	       "Open TCP and UDP sockets left out of the published table (it holds " XSTR(RS_PUB_MAX_SOCKS) " per process).",
	       p->nsocks_total > p->nsocks ? p->nsocks_total - p->nsocks : 0);
	SCALAR("ringsock_sent_bytes_total", "counter", "Bytes accepted by send calls on TCP and UDP sockets.",
	       p->stats.bytes_sent);
	SCALAR("ringsock_received_bytes_total", "counter", "Bytes returned by receive calls on TCP and UDP sockets.",
	       p->stats.bytes_received);
	family(o, "ringsock_socket_calls_total", "counter", "Socket API calls on TCP and UDP sockets.");
	for (int i = 0; i < n; i++) {
		uint64_t calls = 0;
		for (int f = 0; f < RINGSOCK_FAM_COUNT; f++)
			calls += ps[i].p->stats.calls_socket[f];
		sample(o, "ringsock_socket_calls_total", ps[i].p, calls);
	}
	static const char *const held[2][2] = {
		{ "ringsock_held_receive_bytes", "Bytes the engine holds for the program's reads (sockets whose ring was free to read)." },
		{ "ringsock_held_send_bytes", "Bytes the engine queued, not yet the kernel's (sockets whose ring was free to read)." },
	};
	for (int h = 0; h < 2; h++) {
		family(o, held[h][0], "gauge", held[h][1]);
		for (int i = 0; i < n; i++) {
			uint64_t sum = 0;
			for (uint32_t j = 0; j < ps[i].p->nsocks; j++) {
				int64_t v = h ? ps[i].p->socks[j].tx_held : ps[i].p->socks[j].rx_held;
				sum += v > 0 ? (uint64_t)v : 0; /* (-1: unknown this time) */
			}
			sample(o, held[h][0], ps[i].p, sum);
		}
	}
	for (int c = 0; c < RS_ENGINE_COUNTERS; c++) {
		int gauge = !strcmp(rs_engine_names[c], "frag_chunks");
		snprintf(name, sizeof(name), "ringsock_%s%s", rs_engine_names[c], gauge ? "" : "_total");
		family(o, name, gauge ? "gauge" : "counter", engine_help[c]);
		for (int i = 0; i < n; i++)
			sample(o, name, ps[i].p, (&ps[i].p->stats.rings)[c]);
	}
	/* Times: the copies carry CLOCK_MONOTONIC; the start is given in Unix
	 * time, as Prometheus's process_start_time_seconds is. */
	int64_t mono = clock_ns(CLOCK_MONOTONIC), real = clock_ns(CLOCK_REALTIME);
	family(o, "ringsock_start_time_seconds", "gauge", "When the library started in the process, in Unix time.");
	for (int i = 0; i < n; i++) {
		series(o, "ringsock_start_time_seconds", ps[i].p, NULL, NULL);
		fprintf(o, "%.3f\n", (double)(real - (mono - ps[i].p->started_ns)) / 1e9);
	}
	family(o, "ringsock_copy_age_seconds", "gauge",
	       "Age of the copy the process published (a process without the engine's thread refreshes it rarely).");
	for (int i = 0; i < n; i++) {
		series(o, "ringsock_copy_age_seconds", ps[i].p, NULL, NULL);
		fprintf(o, "%.3f\n", (double)(mono - ps[i].p->updated_ns) / 1e9);
	}
}

/* ---- the server ---------------------------------------------------------------- */

static volatile sig_atomic_t stop;
static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

/* [ADDR:]PORT, [IPV6]:PORT; no address (or an empty one): loopback.  0,
 * or -1 after a message. */
static int parse_spec(const char *spec, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2] = "127.0.0.1";
	const char *port = spec, *colon = strrchr(spec, ':');
	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');
		if (!close || close[1] != ':' || (size_t)(close - spec - 1) >= sizeof(host))
			goto bad;
		snprintf(host, sizeof(host), "%.*s", (int)(close - spec - 1), spec + 1);
		port = close + 2;
	} else if (colon) {
		if ((size_t)(colon - spec) >= sizeof(host))
			goto bad;
		if (colon > spec)
			snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		port = colon + 1;
	}
	char *end;
	long pn = strtol(port, &end, 10);
	if (!*port || *end || port[0] == '-' || port[0] == '+' || pn < 0 || pn > 65535)
		goto bad;
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)pn);
		*len = sizeof(*a4);
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)pn);
		*len = sizeof(*a6);
	} else {
		goto bad;
	}
	return 0;
bad:
	fprintf(stderr, "ringsock stat: --serve '%s': not [ADDR:]PORT (an IPv4 address, or an IPv6 one in [ ],"
			" and a port from 0 to 65535)\n", spec);
	return -1;
}

static void addr_text(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char h[INET6_ADDRSTRLEN] = "?";
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof(h));
		snprintf(out, len, "[%s]:%u", h, ntohs(a->sin6_port));
	} else {
		const struct sockaddr_in *a = (const void *)ss;
		inet_ntop(AF_INET, &a->sin_addr, h, sizeof(h));
		snprintf(out, len, "%s:%u", h, ntohs(a->sin_port));
	}
}

/* Wait for fd to be ready for ev until the deadline (CLOCK_MONOTONIC ns):
 * 1 ready, 0 timed out or stopped. */
static int wait_fd(int fd, short ev, int64_t deadline)
{
	for (;;) {
		int64_t left = (deadline - clock_ns(CLOCK_MONOTONIC)) / 1000000;
		if (left <= 0 || stop)
			return 0;
		struct pollfd pf = { fd, ev, 0 };
		int r = poll(&pf, 1, (int)left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return 0;
	}
}

static void send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
		if (w > 0) {
			buf += w;
			len -= (size_t)w;
		} else if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (!wait_fd(fd, POLLOUT, deadline))
				return;
		} else {
			return; /* (the client went away) */
		}
	}
}

static void respond(int fd, const char *status, const char *extra, const char *type, const char *body, size_t len,
		    int head)
{
	char hdr[512];
	int hl = snprintf(hdr, sizeof(hdr),
			  "HTTP/1.0 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n", status,
			  type, len, extra);
	int64_t deadline = clock_ns(CLOCK_MONOTONIC) + (int64_t)RS_HTTP_WRITE_MS * 1000000;
	send_all(fd, hdr, (size_t)hl, deadline);
	if (!head)
		send_all(fd, body, len, deadline);
}

static void error_page(int fd, const char *status, const char *extra, const char *msg)
{
	respond(fd, status, extra, "text/plain; charset=utf-8", msg, strlen(msg), 0);
}

/* One connection: read the request head (bounded in size and time),
 * answer, close. */
static void serve_one(int fd)
{
	char req[RS_HTTP_MAX_REQUEST + 1];
	size_t got = 0;
	int64_t deadline = clock_ns(CLOCK_MONOTONIC) + (int64_t)RS_HTTP_READ_MS * 1000000;
	for (;;) {
		req[got] = 0;
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
		if (got == RS_HTTP_MAX_REQUEST) {
			error_page(fd, "431 Request Header Fields Too Large", "", "request too large\n");
			return;
		}
		ssize_t r = recv(fd, req + got, RS_HTTP_MAX_REQUEST - got, 0);
		if (r > 0) {
			got += (size_t)r;
		} else if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (!wait_fd(fd, POLLIN, deadline))
				return; /* (too slow, or stopping: no answer) */
		} else {
			return; /* (closed before its request was whole) */
		}
	}
	/* METHOD SP TARGET SP HTTP/x.y */
	char method[16], target[1024], version[16];
	if (sscanf(req, "%15[A-Z] %1023[^ \r\n] %15[^ \r\n]", method, target, version) != 3 ||
	    strncmp(version, "HTTP/1.", 7)) {
		error_page(fd, "400 Bad Request", "", "bad request\n");
		return;
	}
	target[strcspn(target, "?#")] = 0; /* (a query string changes nothing) */
	if (strcmp(target, "/metrics")) {
		error_page(fd, "404 Not Found", "", "not found: ringsock serves /metrics only\n");
		return;
	}
	int head = !strcmp(method, "HEAD");
	if (!head && strcmp(method, "GET")) {
		error_page(fd, "405 Method Not Allowed", "Allow: GET, HEAD\r\n", "method not allowed: GET /metrics\n");
		return;
	}
	/* (Prometheus accepts gzip; the answer is sent as it is, which every
	 * client must take) */
	struct proc *ps;
	int n;
	rs_stat_gather(0, NULL, &ps, &n);
	char *body = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&body, &len);
	if (!m) {
		rs_stat_free(ps, n);
		error_page(fd, "500 Internal Server Error", "", "out of memory\n");
		return;
	}
	rs_metrics_print(m, ps, n);
	fclose(m);
	rs_stat_free(ps, n);
	respond(fd, "200 OK", "", "text/plain; version=0.0.4; charset=utf-8", body, len, head);
	free(body);
}

int rs_metrics_serve(const char *spec)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char where[INET6_ADDRSTRLEN + 16];
	if (parse_spec(spec, &ss, &sl) < 0)
		return 2;
	addr_text(&ss, where, sizeof(where));
	int lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(lfd, (struct sockaddr *)&ss, sl) < 0 || listen(lfd, 64) < 0) {
		int e = errno;
		fprintf(stderr, "ringsock stat: --serve %s: %s\n", where,
			e == EADDRINUSE	    ? "address already in use (another server has the port)"
			: e == EADDRNOTAVAIL ? "not an address of this machine"
			: e == EACCES	    ? "permission denied (a port below 1024 needs privilege)"
					    : strerror(e));
		if (lfd >= 0)
			close(lfd);
		return 2;
	}
	sl = sizeof(ss);
	getsockname(lfd, (struct sockaddr *)&ss, &sl); /* (port 0: the one the kernel chose) */
	addr_text(&ss, where, sizeof(where));
	fprintf(stderr, "ringsock stat: serving http://%s/metrics\n", where);
	/* (no SA_RESTART: poll returns on the signal) */
	struct sigaction sa = { .sa_handler = on_stop };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	while (!stop) {
		struct pollfd pf = { lfd, POLLIN, 0 };
		if (poll(&pf, 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "ringsock stat: poll: %s\n", strerror(errno));
			close(lfd);
			return 1;
		}
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			/* (EAGAIN, a connection reset before accept: the next
			 * one; out of descriptors: the connection waits in the
			 * backlog, and this loop must not spin on it) */
			if (errno == EMFILE || errno == ENFILE) {
				struct timespec ts = { 0, 100000000 };
				nanosleep(&ts, NULL);
			}
			continue;
		}
		serve_one(fd);
		close(fd);
	}
	close(lfd);
	return 0;
}

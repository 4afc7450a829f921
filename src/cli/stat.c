/* stat.c - `ringsock stat`: the processes running under the library, read
 * from the segments they publish (src/publish.h), with their sockets and
 * the kernel's own view of each (/proc/PID/net and, for TCP, inet_diag
 * through libnl: src/netinfo.c).
 *
 *   ringsock stat [--sockets] [--json] [--watch[=SECONDS]] [--count N] [PID...]
 *
 * A segment whose process is gone (or whose pid now names another
 * process) is stale: it is removed, where this user may.  Exit status: 0;
 * 1 when a PID asked for is not running under the library or cannot be
 * read; 2 for a usage error. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "names.h"
#include "netinfo.h"
#include "publish.h"

struct proc {
	struct rs_pub *p; /* a consistent copy */
	struct proc *prev_sample; /* (--watch: the same process one interval ago) */
};

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Field 22 of /proc/PID/stat, 0 if the process is gone (or a zombie:
 * it will never update its segment again). */
static uint64_t start_time(int pid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	char *p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X')
		return 0;
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	return field == 22 ? strtoull(p, NULL, 10) : 0;
}

/* A consistent copy of the segment at path: 0, -errno, or -ESTALE (its
 * process is gone: the segment was removed if this user may). */
static int read_pub(const char *path, struct rs_pub **out)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || (size_t)st.st_size < sizeof(struct rs_pub)) {
		close(fd);
		return -EINVAL;
	}
	const struct rs_pub *m = mmap(NULL, sizeof(struct rs_pub), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	struct rs_pub *c = malloc(sizeof(*c));
	int r = -EAGAIN;
	for (int tries = 0; c && tries < 100 && r == -EAGAIN; tries++) {
		uint32_t s1 = __atomic_load_n(&m->seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
			continue;
		}
		memcpy(c, m, sizeof(*c));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&m->seq, __ATOMIC_RELAXED) == s1)
			r = 0;
	}
	munmap((void *)m, sizeof(struct rs_pub));
	if (r == 0 && (c->magic != RS_PUB_MAGIC || c->version != RS_PUB_VERSION))
		r = -EPROTO;
	if (r == 0 && (!c->starttime || start_time(c->pid) != c->starttime)) {
		unlink(path); /* (stale: its process is gone) */
		r = -ESTALE;
	}
	if (r < 0) {
		free(c);
		return r;
	}
	*out = c;
	return 0;
}

static void seg_path(char *buf, size_t len, unsigned uid, int pid)
{
	snprintf(buf, len, RS_PUB_DIR "/" RS_PUB_PREFIX "%u.%d", uid, pid);
}

/* Every readable live segment (and the stale ones removed on the way). */
static int list_all(struct proc **out)
{
	DIR *d = opendir(RS_PUB_DIR);
	int n = 0, cap = 0;
	*out = NULL;
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		unsigned uid;
		int pid;
		char tail;
		if (sscanf(de->d_name, RS_PUB_PREFIX "%u.%d%c", &uid, &pid, &tail) != 2)
			continue;
		char path[300];
		seg_path(path, sizeof(path), uid, pid);
		struct rs_pub *p;
		if (read_pub(path, &p) < 0)
			continue; /* (another user's, stale, or not ours to read) */
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = realloc(*out, (size_t)cap * sizeof(**out));
		}
		(*out)[n++] = (struct proc){ p, NULL };
	}
	closedir(d);
	return n;
}

/* The segment of one pid, whoever's it is (an error message when none). */
static int find_pid(int pid, struct proc *out)
{
	DIR *d = opendir(RS_PUB_DIR);
	int err = -ESRCH;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		unsigned uid;
		int p2;
		char tail;
		if (sscanf(de->d_name, RS_PUB_PREFIX "%u.%d%c", &uid, &p2, &tail) != 2 || p2 != pid)
			continue;
		char path[300];
		seg_path(path, sizeof(path), uid, pid);
		err = read_pub(path, &out->p);
		out->prev_sample = NULL;
		break;
	}
	if (d)
		closedir(d);
	if (err == -ESTALE)
		err = -ESRCH;
	return err;
}

/* ---- sockets: the kernel's view -------------------------------------------------- */

struct kview {
	unsigned inode;
	char local[64], peer[64];
	unsigned state, txq, rxq;
	int have_diag;
	struct rs_tcp_diag diag;
};
struct kviews {
	struct kview *v;
	size_t n, cap;
};

static const char *const tcp_states[] = { "?", "ESTAB", "SYN-SENT", "SYN-RECV", "FIN-WAIT-1", "FIN-WAIT-2",
					  "TIME-WAIT", "UNCONN", "CLOSE-WAIT", "LAST-ACK", "LISTEN", "CLOSING" };

static const char *state_name(unsigned s, int udp)
{
	if (udp)
		return s == 1 ? "ESTAB" : "UNCONN";
	return s < sizeof(tcp_states) / sizeof(tcp_states[0]) ? tcp_states[s] : "?";
}

/* "0100007F:1F90" (IPv4) or 32 hex digits (IPv6, four host-order words). */
static void addr_text(const char *hex, int v6, char *out, size_t len)
{
	const char *colon = strchr(hex, ':');
	unsigned port = colon ? (unsigned)strtoul(colon + 1, NULL, 16) : 0;
	if (!v6) {
		unsigned a = (unsigned)strtoul(hex, NULL, 16);
		snprintf(out, len, "%u.%u.%u.%u:%u", a & 255, (a >> 8) & 255, (a >> 16) & 255, a >> 24, port);
		return;
	}
	unsigned w[4];
	char word[9] = { 0 };
	for (int i = 0; i < 4; i++) {
		memcpy(word, hex + 8 * i, 8);
		w[i] = (unsigned)strtoul(word, NULL, 16);
	}
	unsigned char b[16];
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 4; j++)
			b[4 * i + j] = (unsigned char)(w[i] >> (8 * j));
	char t[48];
	int o = 0;
	for (int i = 0; i < 16; i += 2)
		o += snprintf(t + o, sizeof(t) - (size_t)o, "%s%x", i ? ":" : "", (b[i] << 8) | b[i + 1]);
	snprintf(out, len, "[%s]:%u", t, port);
}

static void read_net(struct kviews *kv, int pid, const char *file, int v6)
{
	char path[64], line[512];
	snprintf(path, sizeof(path), "/proc/%d/net/%s", pid, file);
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (!fgets(line, sizeof(line), f)) { /* (the header) */
		fclose(f);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		char la[80], ra[80];
		unsigned st, txq, rxq, inode;
		if (sscanf(line, "%*s %79s %79s %x %x:%x %*s %*s %*s %*s %u", la, ra, &st, &txq, &rxq, &inode) != 6)
			continue;
		if (kv->n == kv->cap) {
			kv->cap = kv->cap ? kv->cap * 2 : 64;
			kv->v = realloc(kv->v, kv->cap * sizeof(*kv->v));
		}
		struct kview *k = &kv->v[kv->n++];
		memset(k, 0, sizeof(*k));
		k->inode = inode;
		k->state = st;
		k->txq = txq;
		k->rxq = rxq;
		addr_text(la, v6, k->local, sizeof(k->local));
		addr_text(ra, v6, k->peer, sizeof(k->peer));
	}
	fclose(f);
}

static struct kview *kv_find(struct kviews *kv, unsigned inode)
{
	for (size_t i = 0; i < kv->n; i++)
		if (kv->v[i].inode == inode)
			return &kv->v[i];
	return NULL;
}

static void add_diag(const struct rs_tcp_diag *d, void *arg)
{
	struct kview *k = kv_find(arg, d->inode);
	if (k) {
		k->have_diag = 1;
		k->diag = *d;
	}
}

static unsigned fd_inode(int pid, int fd)
{
	char path[64], link[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
	ssize_t n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = 0;
	unsigned ino = 0;
	return sscanf(link, "socket:[%u]", &ino) == 1 ? ino : 0;
}

/* ---- output ---------------------------------------------------------------------------- */

static const char *const sock_states[] = { "tracked", "armed", "armed (kernel reads)", "leaving", "kernel", "passed" };

static const char *engine_text(const struct rs_pub *p)
{
	if (p->engine_on && !p->pt_reason)
		return "on";
	return "off";
}

static const char *reason_name(int r)
{
	return r >= 0 && r < RINGSOCK_PT_COUNT ? rs_pt_names[r] : "?";
}

static void human(char *out, size_t len, double v)
{
	static const char *const u[] = { "", "K", "M", "G", "T" };
	int i = 0;
	while (v >= 1024 && i < 4) {
		v /= 1024;
		i++;
	}
	snprintf(out, len, i ? "%.1f%s" : "%.0f%s", v, u[i]);
}

static uint64_t calls_total(const struct ringsock_stats *s)
{
	uint64_t n = 0;
	for (int i = 0; i < RINGSOCK_FAM_COUNT; i++)
		n += s->calls_socket[i];
	return n;
}

static void json_str(FILE *o, const char *s)
{
	fputc('"', o);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(o, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(o, "\\u%04x", *s);
		else
			fputc(*s, o);
	}
	fputc('"', o);
}

/* Rates: per second over the interval since prev (--watch), else since
 * the process started. */
static void rates(const struct proc *pr, double *sent, double *recv, double *calls)
{
	const struct rs_pub *p = pr->p, *q = pr->prev_sample ? pr->prev_sample->p : NULL;
	double secs = (double)(p->updated_ns - (q ? q->updated_ns : p->started_ns)) / 1e9;
	if (secs <= 0) {
		*sent = *recv = *calls = 0;
		return;
	}
	*sent = (double)(p->stats.bytes_sent - (q ? q->stats.bytes_sent : 0)) / secs;
	*recv = (double)(p->stats.bytes_received - (q ? q->stats.bytes_received : 0)) / secs;
	*calls = (double)(calls_total(&p->stats) - (q ? calls_total(&q->stats) : 0)) / secs;
}

static void print_text(FILE *o, struct proc *ps, int n, int sockets)
{
	fprintf(o, "%-8s %-16s %-6s %-19s %10s %10s %10s %9s %9s %9s\n", "PID", "COMMAND", "ENGINE",
		"SOCKETS trk/srv/pt", "SENT", "RECEIVED", "CALLS", "SENT/s", "RECV/s", "CALLS/s");
	for (int i = 0; i < n; i++) {
		const struct rs_pub *p = ps[i].p;
		const struct ringsock_stats *s = &p->stats;
		uint64_t passed = 0;
		for (int r = 0; r < RINGSOCK_PT_COUNT; r++)
			passed += s->passthrough[r];
		char socks[32], sent[16], recv[16], calls[16], rs_[16], rr[16], rc[16];
		double vs, vr, vc;
		rates(&ps[i], &vs, &vr, &vc);
		snprintf(socks, sizeof(socks), "%" PRIu64 "/%" PRIu64 "/%" PRIu64, s->sockets_tracked,
			 s->sockets_accelerated, passed);
		human(sent, sizeof(sent), (double)s->bytes_sent);
		human(recv, sizeof(recv), (double)s->bytes_received);
		human(calls, sizeof(calls), (double)calls_total(s));
		human(rs_, sizeof(rs_), vs);
		human(rr, sizeof(rr), vr);
		human(rc, sizeof(rc), vc);
		fprintf(o, "%-8d %-16s %-6s %-19s %10s %10s %10s %9s %9s %9s\n", p->pid, p->comm, engine_text(p), socks,
			sent, recv, calls, rs_, rr, rc);
		if (strcmp(engine_text(p), "on"))
			fprintf(o, "         engine off: %s\n", reason_name(p->pt_reason));
		if (passed) {
			fprintf(o, "         passed through:");
			for (int r = 0; r < RINGSOCK_PT_COUNT; r++)
				if (s->passthrough[r])
					fprintf(o, " %s=%" PRIu64, rs_pt_names[r], s->passthrough[r]);
			fputc('\n', o);
		}
		if (!sockets)
			continue;
		struct kviews kv = { 0 };
		read_net(&kv, p->pid, "tcp", 0);
		read_net(&kv, p->pid, "tcp6", 1);
		read_net(&kv, p->pid, "udp", 0);
		read_net(&kv, p->pid, "udp6", 1);
		char err[128] = "";
		int diag = rs_netinfo_tcp_diag(add_diag, &kv, err, sizeof(err));
		fprintf(o, "  %5s %-5s %-22s %-22s %-20s %9s %9s  %s\n", "FD", "KIND", "LOCAL", "PEER", "ENGINE",
			"RX_HELD", "TX_HELD", "KERNEL");
		for (uint32_t j = 0; j < p->nsocks; j++) {
			const struct rs_pub_sock *k = &p->socks[j];
			struct kview *v = kv_find(&kv, fd_inode(p->pid, k->fd));
			char kind[8], state[48], rx[24] = "-", tx[24] = "-";
			snprintf(kind, sizeof(kind), "%s%d", k->kind == RS_PUB_UDP ? "udp" : "tcp", k->family);
			snprintf(state, sizeof(state), "%s%s%s", sock_states[k->state < 6 ? k->state : 0],
				 k->state == RS_PUB_PASSED ? ": " : "", k->state == RS_PUB_PASSED ? reason_name(k->reason) : "");
			if (k->rx_held >= 0)
				snprintf(rx, sizeof(rx), "%" PRId64, k->rx_held);
			if (k->tx_held >= 0)
				snprintf(tx, sizeof(tx), "%" PRId64, k->tx_held);
			fprintf(o, "  %5d %-5s %-22s %-22s %-20s %9s %9s  ", k->fd, kind, v ? v->local : "?", v ? v->peer : "?",
				state, rx, tx);
			if (!v)
				fprintf(o, "(not found in /proc/%d/net)\n", p->pid);
			else if (v->have_diag && v->state != 10 /* (LISTEN: no rtt) */)
				fprintf(o, "%s rtt %.3f/%.3f ms cwnd %u send-q %u recv-q %u skmem r%u w%u f%u t%u\n",
					state_name(v->state, 0), v->diag.rtt_us / 1000.0, v->diag.rttvar_us / 1000.0,
					v->diag.cwnd, v->diag.wqueue, v->diag.rqueue, v->diag.rmem, v->diag.wmem,
					v->diag.fmem, v->diag.tmem);
			else
				fprintf(o, "%s send-q %u recv-q %u%s\n", state_name(v->state, k->kind == RS_PUB_UDP), v->txq,
					v->rxq, k->kind == RS_PUB_TCP && diag < 0 ? " (no inet_diag)" : "");
		}
		if (p->nsocks < p->nsocks_total)
			fprintf(o, "  (%u more sockets not listed)\n", p->nsocks_total - p->nsocks);
		free(kv.v);
	}
}

static void print_json(FILE *o, struct proc *ps, int n, int sockets)
{
	fprintf(o, "{\"processes\":[");
	for (int i = 0; i < n; i++) {
		const struct rs_pub *p = ps[i].p;
		const struct ringsock_stats *s = &p->stats;
		double vs, vr, vc;
		rates(&ps[i], &vs, &vr, &vc);
		fprintf(o, "%s{\"pid\":%d,\"command\":", i ? "," : "", p->pid);
		json_str(o, p->comm);
		fprintf(o, ",\"engine\":\"%s\",\"reason\":\"%s\",\"uptime_s\":%.3f,", engine_text(p),
			p->pt_reason ? reason_name(p->pt_reason) : "", (double)(p->updated_ns - p->started_ns) / 1e9);
		fprintf(o, "\"sockets_tracked\":%" PRIu64 ",\"sockets_served\":%" PRIu64 ",\"passthrough\":{",
			s->sockets_tracked, s->sockets_accelerated);
		for (int r = 0; r < RINGSOCK_PT_COUNT; r++)
			fprintf(o, "%s\"%s\":%" PRIu64, r ? "," : "", rs_pt_names[r], s->passthrough[r]);
		fprintf(o, "},\"bytes_sent\":%" PRIu64 ",\"bytes_received\":%" PRIu64 ",\"calls\":%" PRIu64
			   ",\"rates\":{\"sent_per_s\":%.1f,\"received_per_s\":%.1f,\"calls_per_s\":%.1f},\"engine_counters\":{",
			s->bytes_sent, s->bytes_received, calls_total(s), vs, vr, vc);
		const uint64_t *ec = &s->rings;
		for (int c = 0; c < RS_ENGINE_COUNTERS; c++)
			fprintf(o, "%s\"%s\":%" PRIu64, c ? "," : "", rs_engine_names[c], ec[c]);
		fputc('}', o);
		if (sockets) {
			struct kviews kv = { 0 };
			read_net(&kv, p->pid, "tcp", 0);
			read_net(&kv, p->pid, "tcp6", 1);
			read_net(&kv, p->pid, "udp", 0);
			read_net(&kv, p->pid, "udp6", 1);
			char err[128];
			rs_netinfo_tcp_diag(add_diag, &kv, err, sizeof(err));
			fprintf(o, ",\"sockets\":[");
			for (uint32_t j = 0; j < p->nsocks; j++) {
				const struct rs_pub_sock *k = &p->socks[j];
				struct kview *v = kv_find(&kv, fd_inode(p->pid, k->fd));
				fprintf(o, "%s{\"fd\":%d,\"kind\":\"%s%d\",\"engine\":\"%s\",\"reason\":\"%s\",\"rx_held\":%" PRId64
					   ",\"tx_held\":%" PRId64,
					j ? "," : "", k->fd, k->kind == RS_PUB_UDP ? "udp" : "tcp", k->family,
					sock_states[k->state < 6 ? k->state : 0],
					k->state == RS_PUB_PASSED ? reason_name(k->reason) : "", k->rx_held, k->tx_held);
				if (v) {
					fprintf(o, ",\"local\":\"%s\",\"peer\":\"%s\",\"kernel\":{\"state\":\"%s\",\"send_q\":%u,\"recv_q\":%u",
						v->local, v->peer, state_name(v->state, k->kind == RS_PUB_UDP),
						v->have_diag ? v->diag.wqueue : v->txq, v->have_diag ? v->diag.rqueue : v->rxq);
					if (v->have_diag)
						fprintf(o, ",\"rtt_us\":%u,\"rttvar_us\":%u,\"cwnd\":%u,\"skmem\":{\"r\":%u,\"w\":%u,\"f\":%u,\"t\":%u}",
							v->diag.rtt_us, v->diag.rttvar_us, v->diag.cwnd, v->diag.rmem,
							v->diag.wmem, v->diag.fmem, v->diag.tmem);
					fputc('}', o);
				}
				fputc('}', o);
			}
			fprintf(o, "],\"sockets_listed\":%u,\"sockets_open\":%u", p->nsocks, p->nsocks_total);
			free(kv.v);
		}
		fputc('}', o);
	}
	fprintf(o, "]}\n");
}

static volatile sig_atomic_t stop;
static void on_int(int sig)
{
	(void)sig;
	stop = 1;
}

static void free_procs(struct proc *ps, int n)
{
	for (int i = 0; i < n; i++)
		free(ps[i].p);
	free(ps);
}

/* Gather what the arguments ask for; 0, or 1 after an error message. */
static int gather(int npids, const int *pids, struct proc **out, int *n)
{
	if (!npids) {
		*n = list_all(out);
		return 0;
	}
	int bad = 0;
	*out = calloc((size_t)npids, sizeof(**out));
	*n = 0;
	for (int i = 0; i < npids; i++) {
		int e = find_pid(pids[i], &(*out)[*n]);
		if (e == 0) {
			(*n)++;
			continue;
		}
		bad = 1;
		if (e == -ESRCH)
			fprintf(stderr, "ringsock stat: %d: no such process running under ringsock\n", pids[i]);
		else if (e == -EACCES || e == -EPERM)
			fprintf(stderr, "ringsock stat: %d: permission denied (another user's process)\n", pids[i]);
		else
			fprintf(stderr, "ringsock stat: %d: %s\n", pids[i], strerror(-e));
	}
	return bad;
}

int rs_cli_stat(int argc, char **argv)
{
	int sockets = 0, json = 0, watch = 0, npids = 0, count = 0;
	double interval = 2;
	int *pids = calloc((size_t)argc + 1, sizeof(int));
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		char *end;
		if (!strcmp(a, "--sockets") || !strcmp(a, "-s")) {
			sockets = 1;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--watch") || !strcmp(a, "-w")) {
			watch = 1;
			if (i + 1 < argc && strtod(argv[i + 1], &end) > 0 && !*end)
				interval = strtod(argv[++i], NULL);
		} else if (!strncmp(a, "--watch=", 8)) {
			watch = 1;
			interval = strtod(a + 8, &end);
			if (*end || interval <= 0) {
				fprintf(stderr, "ringsock stat: bad interval '%s'\n", a + 8);
				free(pids);
				return 2;
			}
		} else if (!strcmp(a, "--count") || !strcmp(a, "-n")) {
			long v = i + 1 < argc ? strtol(argv[i + 1], &end, 10) : 0;
			if (i + 1 >= argc || *end || v <= 0 || v > 1000000) {
				fprintf(stderr, "ringsock stat: --count needs a positive number\n");
				free(pids);
				return 2;
			}
			count = (int)v;
			watch = 1;
			i++;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf("Usage: ringsock stat [--sockets] [--json] [--watch[=SECONDS]] [--count N] [PID...]\n"
			       "Processes running under ringsock: engine state, sockets, bytes, calls and rates;\n"
			       "--sockets adds one line per socket with the engine's and the kernel's view;\n"
			       "--watch refreshes every SECONDS (2), rates over the interval, until interrupted\n"
			       "or --count N refreshes; --json for scripts (one document per refresh).\n");
			free(pids);
			return 0;
		} else {
			long v = strtol(a, &end, 10);
			if (*end || v <= 0 || v > 0x7fffffff) {
				fprintf(stderr, "ringsock stat: unknown argument '%s' (a PID, --sockets, --json, --watch)\n", a);
				free(pids);
				return 2;
			}
			pids[npids++] = (int)v;
		}
	}
	struct proc *ps, *prev = NULL;
	int n, nprev = 0, rc;
	if (!watch) {
		rc = gather(npids, pids, &ps, &n);
		if (json)
			print_json(stdout, ps, n, sockets);
		else if (n)
			print_text(stdout, ps, n, sockets);
		else if (!npids)
			printf("no process is running under ringsock (that this user may see)\n");
		free_procs(ps, n);
		free(pids);
		return rc;
	}
	struct sigaction sa = { .sa_handler = on_int };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rc = 0;
	for (int round = 0; !stop && (!count || round < count); round++) {
		rc = gather(npids, pids, &ps, &n);
		for (int i = 0; i < n; i++)
			for (int j = 0; j < nprev; j++)
				if (prev[j].p->pid == ps[i].p->pid && prev[j].p->starttime == ps[i].p->starttime)
					ps[i].prev_sample = &prev[j];
		if (!json)
			printf("\033[H\033[2J");
		if (json)
			print_json(stdout, ps, n, sockets);
		else
			print_text(stdout, ps, n, sockets);
		fflush(stdout);
		for (int i = 0; i < n; i++)
			ps[i].prev_sample = NULL;
		free_procs(prev, nprev);
		prev = ps;
		nprev = n;
		int64_t until = mono_ns() + (int64_t)(interval * 1e9);
		while (!stop && (!count || round + 1 < count) && mono_ns() < until) {
			struct timespec ts = { 0, 50000000 };
			nanosleep(&ts, NULL);
		}
	}
	free_procs(prev, nprev);
	free(pids);
	return rc;
}

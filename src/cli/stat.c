/* stat.c - `ringsock stat`: the processes running under the library, read
 * from the segments they publish (src/publish.h), with their sockets and
 * the kernel's own view of each (/proc/PID/net; for TCP, inet_diag through
 * libnl; for UDP, sock_diag: src/netinfo.c).  The same copies as
 * Prometheus metrics: metrics.c.
 *
 *   ringsock stat [--sockets] [--json] [--watch[=SECONDS]] [--count N] [PID...]
 *   ringsock stat --openmetrics [PID...]
 *   ringsock stat --serve [ADDR:]PORT
 *
 * A segment whose process is gone (or whose pid now names another
 * process) is stale: it is removed, where this user may.  Exit status: 0;
 * 1 when a PID asked for is not running under the library or cannot be
 * read; 2 for a usage error. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <inttypes.h>
#include <stddef.h>
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

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Field 22 of /proc/PID/stat, 0 if the process is gone (or a zombie
 * with no thread left: it will never write its file again). */
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
	char state = 0;
	unsigned long long start = rs_pub_stat_start(buf, &state);
	if (state == 'Z' || state == 'X') {
		/* (a leader that called pthread_exit is a zombie while its
		 * other threads run) */
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		DIR *d = opendir(path);
		int tasks = 0;
		for (struct dirent *de; d && (de = readdir(d));)
			tasks += de->d_name[0] != '.';
		if (d)
			closedir(d);
		if (tasks <= 1)
			return 0;
	}
	return start;
}

static uint64_t my_pidns(void)
{
	char link[64];
	ssize_t n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = 0;
	return rs_pub_ns_inode(link);
}

/* A file name of ours: ringsock.UID.PID.START, exactly (no other spelling
 * of the same numbers). */
static int parse_name(const char *name, unsigned *uid, int *pid, unsigned long long *start)
{
	char back[128];
	if (sscanf(name, RS_PUB_PREFIX "%u.%d.%llu", uid, pid, start) != 3 || *pid <= 0)
		return -1;
	snprintf(back, sizeof(back), RS_PUB_PREFIX "%u.%d.%llu", *uid, *pid, *start);
	return strcmp(back, name) ? -1 : 0;
}

static int pread_all(int fd, void *buf, size_t len, off_t off)
{
	return pread(fd, buf, len, off) == (ssize_t)len ? 0 : -EIO;
}

/* A consistent, checked copy of the file name (in RS_PUB_DIR): 0, -errno,
 * -ESTALE (its process is gone: the file was removed if this user may),
 * -EXDEV (another pid namespace's: neither shown nor removed), -EPROTO (not
 * a file this version reads), -EBUSY (being written for too long). */
static int read_pub(const char *name, struct rs_pub **out)
{
	unsigned uid;
	int pid;
	unsigned long long start;
	if (parse_name(name, &uid, &pid, &start) < 0)
		return -EINVAL;
	char path[300];
	snprintf(path, sizeof(path), RS_PUB_DIR "/%s", name);
	/* (O_NONBLOCK: a FIFO of that name must not hang us) */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != uid || st.st_nlink != 1) {
		close(fd);
		return -EPROTO;
	}
	if ((size_t)st.st_size != sizeof(struct rs_pub)) {
		/* Another version's layout.  Its header (magic to starttime)
		 * is the same in every version since 2 (version 1 had no
		 * pidns: its files are left alone): a file of this namespace
		 * whose process is gone is stale all the same (one left by a
		 * killed process before an upgrade would stay for good). */
		uint32_t magic;
		int32_t hpid;
		uint64_t hns, hstart;
		if ((size_t)st.st_size >= offsetof(struct rs_pub, comm) &&
		    pread_all(fd, &magic, sizeof(magic), offsetof(struct rs_pub, magic)) == 0 &&
		    pread_all(fd, &hpid, sizeof(hpid), offsetof(struct rs_pub, pid)) == 0 &&
		    pread_all(fd, &hns, sizeof(hns), offsetof(struct rs_pub, pidns)) == 0 &&
		    pread_all(fd, &hstart, sizeof(hstart), offsetof(struct rs_pub, starttime)) == 0 &&
		    magic == RS_PUB_MAGIC && hpid == pid && hstart == start && hns == my_pidns() &&
		    start_time(pid) != start)
			unlink(path); /* (stale: its process is gone) */
		close(fd);
		return -EPROTO;
	}
	struct rs_pub *c = malloc(sizeof(*c));
	size_t head = offsetof(struct rs_pub, socks);
	int r = -EBUSY;
	for (int tries = 0; c && tries < 100 && r == -EBUSY; tries++) {
		uint32_t s1, s2;
		if (pread_all(fd, c, head, 0) < 0) {
			r = -EIO;
			break;
		}
		s1 = c->seq;
		if (s1 & 1) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
			continue;
		}
		if (c->nsocks > RS_PUB_MAX_SOCKS)
			c->nsocks = RS_PUB_MAX_SOCKS;
		if (pread_all(fd, c->socks, c->nsocks * sizeof(c->socks[0]), (off_t)head) < 0 ||
		    pread_all(fd, &s2, sizeof(s2), (off_t)offsetof(struct rs_pub, seq)) < 0) {
			r = -EIO;
			break;
		}
		if (s1 == s2)
			r = 0;
	}
	close(fd);
	if (!c)
		return -ENOMEM;
	if (r == 0 && (c->magic != RS_PUB_MAGIC || c->version != RS_PUB_VERSION || c->stats.size != sizeof(c->stats) ||
		       c->pid != pid || c->starttime != start))
		r = -EPROTO;
	if ((r == 0 || r == -EBUSY) && c->pidns != my_pidns())
		r = -EXDEV;
	if ((r == 0 || r == -EBUSY) && start_time(pid) != start) {
		unlink(path); /* (stale: its process is gone) */
		r = -ESTALE;
	}
	if (r < 0) {
		free(c);
		return r;
	}
	c->comm[sizeof(c->comm) - 1] = 0;
	*out = c;
	return 0;
}

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);
	if (!q) {
		fprintf(stderr, "ringsock stat: out of memory\n");
		exit(1);
	}
	return q;
}

/* Every readable live file of this pid namespace (the stale ones removed
 * on the way). */
static int list_all(struct proc **out)
{
	DIR *d = opendir(RS_PUB_DIR);
	int n = 0, cap = 0;
	*out = NULL;
	if (!d)
		return 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		struct rs_pub *p;
		if (strncmp(de->d_name, RS_PUB_PREFIX, strlen(RS_PUB_PREFIX)) || read_pub(de->d_name, &p) < 0)
			continue; /* (another user's, stale, another namespace's, not ours to read) */
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			*out = xrealloc(*out, (size_t)cap * sizeof(**out));
		}
		(*out)[n++] = (struct proc){ p, NULL };
	}
	closedir(d);
	return n;
}

/* The file of one pid: its name from /proc/PID (the real uid, the start
 * time). */
static int find_pid(int pid, struct proc *out)
{
	char path[64], line[256], name[128];
	unsigned long long start = start_time(pid);
	unsigned uid = 0;
	int have_uid = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	FILE *f = start ? fopen(path, "re") : NULL;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Uid: %u", &uid) == 1) {
			have_uid = 1;
			break;
		}
	if (f)
		fclose(f);
	if (!have_uid)
		return -ESRCH;
	snprintf(name, sizeof(name), RS_PUB_PREFIX "%u.%d.%llu", uid, pid, start);
	out->prev_sample = NULL;
	int e = read_pub(name, &out->p);
	return e == -ENOENT || e == -ESTALE || e == -EXDEV ? -ESRCH : e;
}

/* ---- sockets: the kernel's view -------------------------------------------------- */

struct kview {
	unsigned inode;
	char local[64], peer[64];
	unsigned state, txq, rxq;
	int have_diag, have_udiag;
	struct rs_tcp_diag diag;
	struct rs_udp_diag udiag;
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

/* "0100007F:1F90" (IPv4) or 32 hex digits (IPv6): the address's 32-bit
 * words as the kernel printed them (%08X of each, in this host's order:
 * their bytes in memory are the address's). */
static void addr_text(const char *hex, int v6, char *out, size_t len)
{
	const char *colon = strchr(hex, ':');
	unsigned port = colon ? (unsigned)strtoul(colon + 1, NULL, 16) : 0;
	uint32_t w[4] = { 0 };
	char word[9] = { 0 };
	for (int i = 0; i < (v6 ? 4 : 1); i++) {
		memcpy(word, hex + 8 * i, 8);
		w[i] = (uint32_t)strtoul(word, NULL, 16);
	}
	char t[INET6_ADDRSTRLEN] = "?";
	inet_ntop(v6 ? AF_INET6 : AF_INET, w, t, sizeof(t));
	snprintf(out, len, v6 ? "[%s]:%u" : "%s:%u", t, port);
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
			kv->v = xrealloc(kv->v, kv->cap * sizeof(*kv->v));
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

static void add_udiag(const struct rs_udp_diag *d, void *arg)
{
	struct kview *k = kv_find(arg, d->inode);
	if (k) {
		k->have_udiag = 1;
		k->udiag = *d;
	}
}

/* The kernel's view of a process's sockets: *tcp_diag and *udp_diag say
 * whether inet_diag and sock_diag answered. */
static void kernel_view(struct kviews *kv, int pid, int *tcp_diag, int *udp_diag)
{
	char err[128];
	memset(kv, 0, sizeof(*kv));
	read_net(kv, pid, "tcp", 0);
	read_net(kv, pid, "tcp6", 1);
	read_net(kv, pid, "udp", 0);
	read_net(kv, pid, "udp6", 1);
	*tcp_diag = rs_netinfo_tcp_diag(add_diag, kv, err, sizeof(err)) >= 0;
	*udp_diag = rs_netinfo_udp_diag(add_udiag, kv, err, sizeof(err)) >= 0;
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

static const char *const sock_states[] = { "tracked", "armed", "armed (kernel reads)", "leaving", "kernel", "passed",
					   "busy" };
#define NSTATES (int)(sizeof(sock_states) / sizeof(sock_states[0]))
_Static_assert(NSTATES == RS_PUB_BUSY + 1, "a state of publish.h without a name");

/* The command name, printable (a program chooses its own). */
const char *rs_stat_comm(const struct rs_pub *p, char *buf, size_t len)
{
	size_t i = 0;
	for (; p->comm[i] && i + 1 < len && i < sizeof(p->comm); i++)
		buf[i] = (p->comm[i] > 0x20 && p->comm[i] < 0x7f) ? p->comm[i] : '?';
	buf[i] = 0;
	return buf;
}

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
		else if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f)
			fprintf(o, "\\u%04x", (unsigned char)*s); /* (a name cut mid-UTF-8 stays valid JSON) */
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
		char comm[32];
		fprintf(o, "%-8d %-16s %-6s %-19s %10s %10s %10s %9s %9s %9s\n", p->pid, rs_stat_comm(p, comm, sizeof(comm)),
			engine_text(p), socks, sent, recv, calls, rs_, rr, rc);
		double age = (double)(mono_ns() - p->updated_ns) / 1e9;
		if (age >= 1)
			fprintf(o, "         (this copy is %.0f s old: no drain thread refreshes it in this process, "
				"its own socket calls do)\n",
				age);
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
		struct kviews kv;
		int diag, udiag;
		uint64_t kdrops = 0;
		int nudp = 0;
		kernel_view(&kv, p->pid, &diag, &udiag);
		fprintf(o, "  %5s %-5s %-22s %-22s %-20s %9s %9s  %s\n", "FD", "KIND", "LOCAL", "PEER", "ENGINE",
			"RX_HELD", "TX_HELD", "KERNEL");
		for (uint32_t j = 0; j < p->nsocks; j++) {
			const struct rs_pub_sock *k = &p->socks[j];
			struct kview *v = kv_find(&kv, fd_inode(p->pid, k->fd));
			char kind[8], state[48], rx[24] = "-", tx[24] = "-";
			snprintf(kind, sizeof(kind), "%s%d", k->kind == RS_PUB_UDP ? "udp" : "tcp", k->family);
			snprintf(state, sizeof(state), "%s%s%s", sock_states[k->state < NSTATES ? k->state : 0],
				 k->state == RS_PUB_PASSED ? ": " : "", k->state == RS_PUB_PASSED ? reason_name(k->reason) : "");
			if (k->rx_held >= 0)
				snprintf(rx, sizeof(rx), "%" PRId64, k->rx_held);
			if (k->tx_held >= 0)
				snprintf(tx, sizeof(tx), "%" PRId64, k->tx_held);
			fprintf(o, "  %5d %-5s %-22s %-22s %-20s %9s %9s  ", k->fd, kind, v ? v->local : "?", v ? v->peer : "?",
				state, rx, tx);
			if (!v)
				fprintf(o, "(not found in /proc/%d/net)\n", p->pid);
			else if (v->have_udiag) {
				fprintf(o, "%s send-q %u recv-q %u drops %u skmem r%u rb%u\n", state_name(v->state, 1),
					v->udiag.wqueue, v->udiag.rqueue, v->udiag.drops, v->udiag.rmem, v->udiag.rcvbuf);
				kdrops += v->udiag.drops;
			} else if (v->have_diag && v->state != 10 /* (LISTEN: no rtt) */)
				fprintf(o, "%s rtt %.3f/%.3f ms cwnd %u send-q %u recv-q %u skmem r%u w%u f%u t%u\n",
					state_name(v->state, 0), v->diag.rtt_us / 1000.0, v->diag.rttvar_us / 1000.0,
					v->diag.cwnd, v->diag.wqueue, v->diag.rqueue, v->diag.rmem, v->diag.wmem,
					v->diag.fmem, v->diag.tmem);
			else
				fprintf(o, "%s send-q %u recv-q %u%s\n", state_name(v->state, k->kind == RS_PUB_UDP), v->txq,
					v->rxq, k->kind == RS_PUB_TCP ? (diag ? "" : " (no inet_diag)")
								       : (udiag ? "" : " (no sock_diag for UDP)"));
			nudp += k->kind == RS_PUB_UDP;
		}
		/* (the engine counts its drops per process, the kernel per socket) */
		if (nudp)
			fprintf(o, "  UDP drops: the engine's %" PRIu64 " (udp_drops, the process's), the kernel's %" PRIu64
				   " (its UDP sockets listed)\n", s->udp_drops, kdrops);
		if (p->nsocks < p->nsocks_total)
			fprintf(o, "  (%u more sockets not listed: a process publishes at most %d)\n",
				p->nsocks_total - p->nsocks, RS_PUB_MAX_SOCKS);
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
		fprintf(o, "%s{\"pid\":%d,\"age_s\":%.3f,\"command\":", i ? "," : "", p->pid,
			(double)(mono_ns() - p->updated_ns) / 1e9);
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
			struct kviews kv;
			int diag, udiag;
			kernel_view(&kv, p->pid, &diag, &udiag);
			fprintf(o, ",\"sockets\":[");
			for (uint32_t j = 0; j < p->nsocks; j++) {
				const struct rs_pub_sock *k = &p->socks[j];
				struct kview *v = kv_find(&kv, fd_inode(p->pid, k->fd));
				fprintf(o, "%s{\"fd\":%d,\"kind\":\"%s%d\",\"engine\":\"%s\",\"reason\":\"%s\",\"rx_held\":%" PRId64
					   ",\"tx_held\":%" PRId64,
					j ? "," : "", k->fd, k->kind == RS_PUB_UDP ? "udp" : "tcp", k->family,
					sock_states[k->state < NSTATES ? k->state : 0],
					k->state == RS_PUB_PASSED ? reason_name(k->reason) : "", k->rx_held, k->tx_held);
				if (v) {
					fprintf(o, ",\"local\":\"%s\",\"peer\":\"%s\",\"kernel\":{\"state\":\"%s\",\"send_q\":%u,\"recv_q\":%u",
						v->local, v->peer, state_name(v->state, k->kind == RS_PUB_UDP),
						v->have_diag ? v->diag.wqueue : v->have_udiag ? v->udiag.wqueue : v->txq,
						v->have_diag ? v->diag.rqueue : v->have_udiag ? v->udiag.rqueue : v->rxq);
					if (v->have_udiag)
						fprintf(o, ",\"drops\":%u,\"skmem\":{\"r\":%u,\"rb\":%u}", v->udiag.drops,
							v->udiag.rmem, v->udiag.rcvbuf);
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

void rs_stat_free(struct proc *ps, int n)
{
	for (int i = 0; i < n; i++)
		free(ps[i].p);
	free(ps);
}

/* Gather what the arguments ask for; 0, or 1 after an error message. */
int rs_stat_gather(int npids, const int *pids, struct proc **out, int *n)
{
	if (!npids) {
		*n = list_all(out);
		return 0;
	}
	int bad = 0;
	*out = xrealloc(NULL, (size_t)npids * sizeof(**out));
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
		else if (e == -EPROTO)
			fprintf(stderr, "ringsock stat: %d: its file is not one this ringsock reads (another version?)\n",
				pids[i]);
		else if (e == -EBUSY)
			fprintf(stderr, "ringsock stat: %d: its file was being written the whole time; try again\n", pids[i]);
		else
			fprintf(stderr, "ringsock stat: %d: %s\n", pids[i], strerror(-e));
	}
	return bad;
}

int rs_cli_stat(int argc, char **argv)
{
	int sockets = 0, json = 0, watch = 0, npids = 0, count = 0, metrics = 0;
	const char *serve = NULL;
	double interval = 2;
	int *pids = calloc((size_t)argc + 1, sizeof(int));
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		char *end;
		if (!strcmp(a, "--sockets") || !strcmp(a, "-s")) {
			sockets = 1;
		} else if (!strcmp(a, "--json")) {
			json = 1;
		} else if (!strcmp(a, "--openmetrics")) {
			metrics = 1;
		} else if (!strcmp(a, "--serve") || !strncmp(a, "--serve=", 8)) {
			if (!a[7] && i + 1 >= argc) {
				fprintf(stderr, "ringsock stat: --serve needs [ADDR:]PORT\n");
				free(pids);
				return 2;
			}
			serve = a[7] ? a + 8 : argv[++i];
		} else if (!strcmp(a, "--watch") || !strcmp(a, "-w")) {
			watch = 1;
		} else if (!strncmp(a, "--watch=", 8)) {
			watch = 1;
			interval = strtod(a + 8, &end);
			if (*end || !(interval >= 0.05 && interval <= 3600)) {
				fprintf(stderr, "ringsock stat: bad interval '%s' (0.05 to 3600 seconds)\n", a + 8);
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
			       "       ringsock stat --openmetrics [PID...]\n"
			       "       ringsock stat --serve [ADDR:]PORT\n"
			       "Processes running under ringsock: engine state, sockets, bytes, calls and rates;\n"
			       "--sockets adds one line per socket with the engine's and the kernel's view;\n"
			       "--watch refreshes every SECONDS (2), rates over the interval, until interrupted\n"
			       "or --count N refreshes; --json for scripts (one document per refresh).\n"
			       "--openmetrics prints one scrape in the Prometheus text format (per process:\n"
			       "labels pid and command); --serve answers GET /metrics over HTTP with it, on\n"
			       "127.0.0.1 unless ADDR is given (an IPv6 one in [ ]), until SIGINT or SIGTERM.\n");
			free(pids);
			return 0;
		} else {
			long v = strtol(a, &end, 10);
			if (*end || v <= 0 || v > 0x7fffffff) {
				fprintf(stderr,
					"ringsock stat: unknown argument '%s' (a PID, --sockets, --json, --watch, --openmetrics, "
					"--serve)\n", a);
				free(pids);
				return 2;
			}
			pids[npids++] = (int)v;
		}
	}
	if ((serve || metrics) && (sockets || json || watch || (serve && (metrics || npids)))) {
		fprintf(stderr, "ringsock stat: %s\n",
			serve ? "--serve takes no PID and no other option (it serves every process this user may see)"
			      : "--openmetrics goes with PIDs only (not --sockets, --json or --watch)");
		free(pids);
		return 2;
	}
	if (serve) {
		free(pids);
		return rs_metrics_serve(serve);
	}
	struct proc *ps, *prev = NULL;
	int n, nprev = 0, rc;
	if (metrics) {
		rc = rs_stat_gather(npids, pids, &ps, &n);
		rs_metrics_print(stdout, ps, n);
		rs_stat_free(ps, n);
		free(pids);
		return rc;
	}
	if (!watch) {
		rc = rs_stat_gather(npids, pids, &ps, &n);
		if (json)
			print_json(stdout, ps, n, sockets);
		else if (n)
			print_text(stdout, ps, n, sockets);
		else if (!npids)
			printf("no process is running under ringsock (that this user may see)\n");
		rs_stat_free(ps, n);
		free(pids);
		return rc;
	}
	struct sigaction sa = { .sa_handler = on_int };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	rc = 0;
	for (int round = 0; !stop && (!count || round < count); round++) {
		rc = rs_stat_gather(npids, pids, &ps, &n);
		for (int i = 0; i < n; i++)
			for (int j = 0; j < nprev; j++)
				if (prev[j].p->pid == ps[i].p->pid && prev[j].p->starttime == ps[i].p->starttime &&
				    prev[j].p->started_ns == ps[i].p->started_ns) /* (an exec starts afresh) */
					ps[i].prev_sample = &prev[j];
		if (!json && isatty(STDOUT_FILENO))
			printf("\033[H\033[2J");
		if (json)
			print_json(stdout, ps, n, sockets);
		else
			print_text(stdout, ps, n, sockets);
		fflush(stdout);
		for (int i = 0; i < n; i++)
			ps[i].prev_sample = NULL;
		rs_stat_free(prev, nprev);
		prev = ps;
		nprev = n;
		int64_t until = mono_ns() + (int64_t)(interval * 1e9);
		while (!stop && (!count || round + 1 < count) && mono_ns() < until) {
			struct timespec ts = { 0, 50000000 };
			nanosleep(&ts, NULL);
		}
	}
	rs_stat_free(prev, nprev);
	free(pids);
	return rc;
}

/* publish.c - the process's state for `ringsock stat` (publish.h): a
 * shared-memory segment the drain thread rewrites every RS_PUB_TICK_MS
 * (engine.c's watchdog), or, in a process without the engine (no drain
 * thread), when a socket is created (at most as often); removed at exit
 * and exec.  The program's own calls never write it, so it costs
 * them nothing; its descriptor is closed once mapped, so the program never
 * sees it.  RINGSOCK_PUBLISH=0 turns it off.
 *
 * What a copy holds: the process-wide counters (ringsock_stats_snapshot)
 * and one entry per tracked socket (fd, kind, state, and for sockets a
 * ring serves the bytes the engine holds each way, read under that ring's
 * lock when it is free: else -1, unknown).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "publish.h"
#include "sys.h"

static struct rs_pub *pub;      /* the mapping, NULL when none */
static char pub_path[64];
static int64_t last_ns;          /* of the last copy [pub_lock] */
static atomic_int pub_lock;      /* one writer at a time (never waits) */

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Read a small /proc file (raw system calls: nothing interposed). */
static ssize_t read_small(const char *path, char *buf, size_t len)
{
	int fd = (int)rs_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long n = rs_syscall(SYS_read, fd, buf, len - 1);
	rs_syscall(SYS_close, fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* Field 22 of /proc/self/stat (after the command's closing parenthesis). */
static uint64_t start_time(void)
{
	char buf[1024];
	if (read_small("/proc/self/stat", buf, sizeof(buf)) < 0)
		return 0;
	char *p = strrchr(buf, ')');
	if (!p)
		return 0;
	unsigned long long v = 0;
	/* state is field 3; starttime is the 20th after it */
	int field = 2;
	for (p++; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field == 22)
		v = strtoull(p, NULL, 10);
	return v;
}

static void pub_create(void)
{
	snprintf(pub_path, sizeof(pub_path), RS_PUB_DIR "/" RS_PUB_PREFIX "%u.%d", (unsigned)getuid(), rs_rt.pid);
	int fd = (int)rs_syscall(SYS_openat, AT_FDCWD, pub_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		rs_info("ringsock stat will not see this process: %s: %s", pub_path, strerror(-fd));
		return;
	}
	struct stat st;
	/* (a file of this name left by a dead process of ours is reused; one
	 * of another user's is not) */
	if (rs_syscall(SYS_fstat, fd, &st) < 0 || st.st_uid != getuid() || !S_ISREG(st.st_mode) ||
	    rs_syscall(SYS_fchmod, fd, 0600) < 0 || rs_syscall(SYS_ftruncate, fd, 0) < 0 ||
	    rs_syscall(SYS_ftruncate, fd, sizeof(struct rs_pub)) < 0) {
		rs_info("ringsock stat will not see this process: %s is not this user's file", pub_path);
		rs_syscall(SYS_close, fd);
		return;
	}
	void *m = (void *)rs_syscall(SYS_mmap, NULL, sizeof(struct rs_pub), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	rs_syscall(SYS_close, fd);
	if ((long)m < 0 && (long)m > -4096) {
		rs_syscall(SYS_unlink, pub_path);
		return;
	}
	struct rs_pub *p = m;
	p->version = RS_PUB_VERSION;
	p->pid = rs_rt.pid;
	p->starttime = start_time();
	char comm[64];
	if (read_small("/proc/self/comm", comm, sizeof(comm)) > 0) {
		comm[strcspn(comm, "\n")] = 0;
		comm[sizeof(p->comm) - 1] = 0; /* (the kernel's comm is 15 bytes) */
		memcpy(p->comm, comm, strlen(comm) + 1);
	}
	p->started_ns = mono_ns();
	__atomic_store_n(&p->magic, RS_PUB_MAGIC, __ATOMIC_RELEASE);
	pub = p;
}

void rs_publish_init(void)
{
	if (!rs_rt.cfg.v[RS_K_PUBLISH] || rs_rt.secure)
		return;
	pub_create();
	rs_publish_now(1);
}

static int sock_kind(const struct rs_sock *s)
{
	return s->type == SOCK_DGRAM ? RS_PUB_UDP : RS_PUB_TCP;
}

/* Bytes held, by fd, of the sockets the rings serve (each ring read under
 * its lock, when free). */
struct held {
	int fd;
	int64_t rx, tx;
	unsigned kread;
};

static int by_fd(const void *a, const void *b)
{
	const struct held *x = a, *y = b;
	return (x->fd > y->fd) - (x->fd < y->fd);
}

static size_t ring_held(struct held *h, size_t max)
{
	size_t n = 0;
	if (!rs_engine_on || rs_rings_trylock() != 0)
		return 0;
	for (struct rs_ring *r = rs_rings(); r; r = r->all_next) {
		if (rs_ring_trylock(r) != 0)
			continue; /* (its owner is busy: unknown this time) */
		if (!__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE))
			for (struct rs_esock *e = r->owned; e && n < max; e = e->next)
				if (e->fd >= 0 && !e->closing)
					h[n++] = (struct held){ e->fd, (int64_t)e->ops->held(e), (int64_t)e->ops->tx_held(e),
								(unsigned)e->ops->kernel_input(e) };
		rs_ring_unlock(r);
	}
	rs_rings_unlock();
	qsort(h, n, sizeof(*h), by_fd);
	return n;
}

/* (The records' fields are read without their owners' locks: a copy for
 * people to look at may be a moment stale, and records are never unmapped;
 * hence no thread-sanitizer reports for it.) */
__attribute__((no_sanitize("thread"))) static void fill_socks(struct rs_pub *p)
{
	static struct held h[RS_PUB_MAX_SOCKS];
	size_t nh = ring_held(h, RS_PUB_MAX_SOCKS);
	uint32_t n = 0, total = 0;
	struct rlimit rl = { 0, 0 };
	rs_syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, NULL, &rl);
	unsigned chunks = (unsigned)((rl.rlim_cur + RS_SLOTS_PER_CHUNK - 1) / RS_SLOTS_PER_CHUNK);
	if (chunks > RS_SLOT_DIR || !chunks)
		chunks = RS_SLOT_DIR;
	for (unsigned c = 0; c < chunks; c++) {
		atomic_uint *chunk = atomic_load_explicit(&rs_slot_dir[c], memory_order_acquire);
		if (!chunk)
			continue;
		for (unsigned i = 0; i < RS_SLOTS_PER_CHUNK; i++) {
			int fd = (int)(c * RS_SLOTS_PER_CHUNK + i);
			struct rs_sock *s = rs_fd_peek(fd);
			if (!s)
				continue;
			total++;
			if (n >= RS_PUB_MAX_SOCKS)
				continue;
			struct rs_pub_sock *o = &p->socks[n++];
			*o = (struct rs_pub_sock){ fd, (uint8_t)sock_kind(s), s->domain == AF_INET6 ? 6 : 4, RS_PUB_TRACKED,
						   s->pt_reason, -1, -1 };
			struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
			int mode = e ? RS_LOAD(e->mode) : -1;
			if (s->no_engine)
				o->state = RS_PUB_PASSED;
			else if (mode == RS_ES_ARMED)
				o->state = RS_PUB_ARMED;
			else if (mode == RS_ES_DETACHING)
				o->state = RS_PUB_LEAVING;
			else if (mode == RS_ES_DETACHED)
				o->state = RS_PUB_KERNEL;
			struct held key = { fd, 0, 0, 0 }, *f = nh ? bsearch(&key, h, nh, sizeof(*h), by_fd) : NULL;
			if (f && o->state == RS_PUB_ARMED) {
				o->rx_held = f->rx;
				o->tx_held = f->tx;
				if (f->kread)
					o->state = RS_PUB_ARMED_KREAD;
			}
		}
	}
	p->nsocks = n;
	p->nsocks_total = total;
}

void rs_publish_now(int force)
{
	struct rs_pub *p = pub;
	if (!p)
		return;
	int z = 0;
	if (!atomic_compare_exchange_strong(&pub_lock, &z, 1))
		return; /* (another thread is writing it: that copy will do) */
	int64_t now = mono_ns();
	if (force || now - last_ns >= (int64_t)RS_PUB_TICK_MS * 1000000) {
		last_ns = now;
		__atomic_store_n(&p->seq, p->seq + 1, __ATOMIC_RELEASE); /* odd: being written */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		p->engine_on = rs_engine_on;
		p->pt_reason = rs_engine_on ? __atomic_load_n(&rs_engine_refuse, __ATOMIC_ACQUIRE) : rs_rt.pt_reason;
		p->stats.size = sizeof(p->stats);
		ringsock_stats_snapshot(&p->stats);
		fill_socks(p);
		p->updated_ns = now;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		__atomic_store_n(&p->seq, p->seq + 1, __ATOMIC_RELEASE);
	}
	atomic_store(&pub_lock, 0);
}

void rs_publish_exit(void)
{
	struct rs_pub *p = pub;
	if (!p)
		return;
	pub = NULL;
	rs_syscall(SYS_unlink, pub_path);
	rs_syscall(SYS_munmap, p, sizeof(*p));
}

void rs_publish_atfork_child(void)
{
	/* The parent's segment stays the parent's: this process makes its own. */
	struct rs_pub *p = pub;
	pub = NULL;
	atomic_store(&pub_lock, 0);
	last_ns = 0;
	if (p)
		rs_syscall(SYS_munmap, p, sizeof(*p));
	if (p || (rs_rt.cfg.v[RS_K_PUBLISH] && !rs_rt.secure)) {
		pub_create();
		rs_publish_now(1);
	}
}

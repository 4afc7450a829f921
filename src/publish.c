/* publish.c - the process's state for `ringsock stat` (publish.h): a
 * shared-memory file the drain thread rewrites every RS_PUB_TICK_MS
 * (engine.c's watchdog: a process whose engine has queued a send), or, in
 * a process without a drain thread, a program's thread: when it makes a
 * socket, at the end of a call in which the engine took one (rs_pub_due),
 * and at a 256th call on sockets (at most as often); `ringsock stat` says
 * how old a copy is.  Removed at exit and exec; a fork child makes its
 * own at its first copy.  Its descriptor is closed once mapped,
 * so the program never sees it.  RINGSOCK_PUBLISH=0 turns it off.
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

#include "engine_int.h"
#include "publish.h"
#include "sys.h"

static struct rs_pub *pub;      /* the mapping, NULL when none */
static int pub_pid;              /* the process that made it */
static int pub_want;             /* publishing is on (made at the first copy) [atomic] */
static char pub_path[96];
static int64_t last_ns;          /* of the last copy [pub_lock; relaxed atomics: the fork child resets it] */
static atomic_int pub_lock;      /* one writer at a time (never waits) */

static int pub_trylock(void)
{
	int z = 0;
	if (!atomic_compare_exchange_strong(&pub_lock, &z, 1))
		return 0;
	rs_tsan_acquire(&pub_lock); /* (locks.h: inside TSan's interceptors) */
	return 1;
}

static void pub_unlock(void)
{
	rs_tsan_release(&pub_lock);
	atomic_store(&pub_lock, 0);
}

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
	return read_small("/proc/self/stat", buf, sizeof(buf)) < 0 ? 0 : rs_pub_stat_start(buf, NULL);
}

static uint64_t pid_ns(void)
{
	char link[64];
	long n = rs_syscall(SYS_readlinkat, AT_FDCWD, "/proc/self/ns/pid", link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = 0;
	return rs_pub_ns_inode(link);
}

/* Make this process's file (never an existing one: O_EXCL), its blocks
 * allocated now (a full /dev/shm must not fault later), within the
 * process's file-size limit (a larger file would raise SIGXFSZ). */
static void pub_create(void)
{
	size_t size = sizeof(struct rs_pub);
	struct rlimit fl;
	if (rs_syscall(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &fl) == 0 && fl.rlim_cur != RLIM_INFINITY &&
	    fl.rlim_cur < size) {
		rs_info("ringsock stat will not see this process: its file-size limit is below %zu bytes", size);
		return;
	}
	int pid = rs_sys_getpid();
	uint64_t st = start_time();
	snprintf(pub_path, sizeof(pub_path), RS_PUB_DIR "/" RS_PUB_PREFIX "%u.%d.%llu", (unsigned)getuid(), pid,
		 (unsigned long long)st);
	int fd = (int)rs_syscall(SYS_openat, AT_FDCWD, pub_path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				 0600);
	if (fd < 0) {
		rs_info("ringsock stat will not see this process: %s: %s", pub_path, strerror(-fd));
		return;
	}
	long e = rs_syscall(SYS_fallocate, fd, 0, 0, (long)size);
	void *m = e < 0 ? (void *)e
			: (void *)rs_syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	rs_syscall(SYS_close, fd);
	if ((long)m < 0 && (long)m > -4096) {
		rs_info("ringsock stat will not see this process: %s: %s", pub_path, strerror((int)-(long)m));
		rs_syscall(SYS_unlink, pub_path);
		return;
	}
	struct rs_pub *p = m;
	p->version = RS_PUB_VERSION;
	p->pid = pid;
	p->pidns = pid_ns();
	p->starttime = st;
	char comm[64];
	if (read_small("/proc/self/comm", comm, sizeof(comm)) > 0) {
		comm[strcspn(comm, "\n")] = 0;
		comm[sizeof(p->comm) - 1] = 0; /* (the kernel's comm is 15 bytes) */
		memcpy(p->comm, comm, strlen(comm) + 1);
	}
	p->started_ns = mono_ns();
	__atomic_store_n(&p->magic, RS_PUB_MAGIC, __ATOMIC_RELEASE);
	pub_pid = pid;
	pub = p;
}

void rs_publish_init(void)
{
	if (!rs_rt.cfg.v[RS_K_PUBLISH] || rs_rt.secure)
		return;
	__atomic_store_n(&pub_want, 1, __ATOMIC_RELEASE);
	rs_publish_now(1);
}

static int sock_kind(const struct rs_sock *s)
{
	return s->type == SOCK_DGRAM ? RS_PUB_UDP : RS_PUB_TCP;
}

/* What the rings know of the sockets they own, by fd, each ring read
 * under its lock when free (*skipped: some was busy). */
struct held {
	int fd;
	uint8_t state;
	int64_t rx, tx;
};

static int by_fd(const void *a, const void *b)
{
	const struct held *x = a, *y = b;
	return (x->fd > y->fd) - (x->fd < y->fd);
}

static size_t ring_held(struct held *h, size_t max, int *skipped)
{
	size_t n = 0;
	*skipped = 0;
	if (!rs_engine_on)
		return 0;
	if (rs_rings_trylock() != 0) {
		*skipped = 1;
		return 0;
	}
	for (struct rs_ring *r = rs_rings(); r; r = r->all_next) {
		if (rs_ring_trylock(r) != 0) {
			*skipped = 1; /* (its owner is busy: unknown this time) */
			continue;
		}
		if (!__atomic_load_n(&r->dead, __ATOMIC_ACQUIRE))
			for (struct rs_esock *e = r->owned; e && n < max; e = e->next) {
				if (e->fd < 0 || e->closing)
					continue;
				uint8_t st = e->mode == RS_ES_ARMED ? (e->ops->kernel_input(e) ? RS_PUB_ARMED_KREAD : RS_PUB_ARMED)
								    : RS_PUB_LEAVING;
				h[n++] = (struct held){ e->fd, st, (int64_t)e->ops->held(e), (int64_t)e->ops->tx_held(e) };
			}
		rs_ring_unlock(r);
	}
	rs_rings_unlock();
	qsort(h, n, sizeof(*h), by_fd);
	return n;
}

/* (The records' fields are read without their owners' locks: a copy for
 * people to look at may be a moment stale, and records are never unmapped;
 * hence no thread-sanitizer reports for it.  An engine socket's state is
 * the ring's, read under its lock: the record only says it has one.) */
__attribute__((no_sanitize("thread"))) static void fill_socks(struct rs_pub *p)
{
	static struct held h[RS_PUB_MAX_SOCKS];
	int skipped;
	size_t nh = ring_held(h, RS_PUB_MAX_SOCKS, &skipped);
	uint32_t n = 0, total = 0;
	for (unsigned c = 0; c < RS_SLOT_DIR; c++) {
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
			struct held key = { fd, 0, 0, 0 }, *f = nh ? bsearch(&key, h, nh, sizeof(*h), by_fd) : NULL;
			if (f) {
				o->state = f->state;
				o->rx_held = f->rx;
				o->tx_held = f->tx;
			} else if (s->no_engine) {
				o->state = RS_PUB_PASSED;
			} else if (atomic_load_explicit(&s->eng, memory_order_acquire)) {
				/* (on no ring read: handed back, or on a busy one) */
				o->state = skipped ? RS_PUB_BUSY : RS_PUB_KERNEL;
			}
		}
	}
	p->nsocks = n;
	p->nsocks_total = total;
}

void rs_publish_now(int force)
{
	if (!__atomic_load_n(&pub_want, __ATOMIC_ACQUIRE))
		return;
	if (!pub_trylock())
		return; /* (another thread is writing it: that copy will do) */
	if (!__atomic_load_n(&pub_want, __ATOMIC_ACQUIRE)) {
		pub_unlock(); /* (exit or exec took it away meanwhile) */
		return;
	}
	int64_t now = mono_ns();
	if (force || now - RS_LOAD(last_ns) >= (int64_t)RS_PUB_TICK_MS * 1000000) {
		RS_STORE(last_ns, now);
		if (pub && pub_pid != rs_sys_getpid())
			pub = NULL; /* a child of a fork our handlers did not see (daemon()):
				     * the parent's file stays the parent's */
		if (!pub)
			pub_create();
		struct rs_pub *p = pub;
		if (p) {
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
	}
	pub_unlock();
}

static atomic_int ticking; /* the drain thread makes the copies */
static atomic_int pub_events; /* copies asked for by rs_publish_event */

void rs_publish_tick(void)
{
	atomic_store_explicit(&ticking, 1, memory_order_relaxed);
	rs_publish_now(0);
}

void rs_publish_call(void)
{
	if (!atomic_load_explicit(&ticking, memory_order_relaxed))
		rs_publish_now(0);
}

/* Without a drain thread, a copy is made only in a program's call, and a
 * process may make no call for a long time after it has set up (bound,
 * armed, then waiting where the library cannot see): a socket taken or
 * armed is shown at the end of the call that did it, the first
 * RS_PUB_EVENT_COPIES times whatever the copy's age, then at most every
 * RS_PUB_TICK_MS (the 256th-call copies of a busy process show the rest).
 * sock.c sets rs_pub_due when the engine takes a socket; the call's
 * rs_ret (preload.h) then calls rs_publish_due. */
void rs_publish_event(void)
{
	if (atomic_load_explicit(&ticking, memory_order_relaxed))
		return;
	int saved = errno;
	rs_publish_now(atomic_fetch_add_explicit(&pub_events, 1, memory_order_relaxed) < RS_PUB_EVENT_COPIES);
	errno = saved;
}

void rs_publish_due(void)
{
	RS_STORE(rs_pub_due, 0);
	rs_publish_event();
}

/* Exit and exec: the file goes.  The mapping stays (another thread may be
 * writing it this moment; the kernel drops it with the process image). */
void rs_publish_exit(void)
{
	if (!__atomic_exchange_n(&pub_want, 0, __ATOMIC_ACQ_REL))
		return;
	/* A copy being written (the drain thread's) ends first, so none makes
	 * a new file after this; bounded, as this thread may be the writer
	 * (a fatal signal in the middle of a copy). */
	int locked = 0;
	for (long i = 0; i < (1L << 22) && !locked; i++)
		locked = pub_trylock();
	if (pub && pub_pid == rs_sys_getpid())
		rs_syscall(SYS_unlink, pub_path);
	pub = NULL;
	if (locked)
		pub_unlock();
}

/* A fork child: the parent's file stays the parent's; the child makes its
 * own at its first copy (a child that execs at once never does). */
void rs_publish_atfork_child(void)
{
	pub = NULL;
	atomic_store(&ticking, 0); /* (no drain thread until a send is queued) */
	atomic_store(&pub_events, 0);
	atomic_store(&pub_lock, 0);
	RS_STORE(last_ns, 0);
}

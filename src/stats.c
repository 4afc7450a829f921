/* stats.c - per-thread counters, summed on demand, reported at exit.
 *
 * Each thread counts into its own block in static TLS (no atomic
 * read-modify-write, no shared cache line, and no page the hot path would
 * not touch anyway: the thread control block is already in use by libc).
 * Blocks sit on a registry list so a snapshot can sum them; a thread's
 * counts are folded into `retired` when it exits.
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "locks.h"
#include "names.h"
#include "sys.h"

RS_TLS struct rs_tstats rs_tstats_tls;

static atomic_flag reg_lock = ATOMIC_FLAG_INIT;
static struct rs_tstats *reg_head;   /* registered, running threads' blocks */
static uint64_t retired[RS_C_COUNT]; /* counts of exited threads, under reg_lock */
/* What reg_lock guards is read and written with relaxed atomics
 * (RS_LOAD, RS_STORE), and the lock is annotated for ThreadSanitizer
 * (locks.h) everywhere but in tstats_thread_exit: a thread's key
 * destructors run after TSan has finished the thread, and an annotation
 * there wedged TSan's own lock for reg_lock (diff.engine_many_threads hung
 * in 5 of 10 runs); atomics are never reported as races, so the fold at
 * exit needs none. */
static pthread_key_t tstats_key;
static atomic_int key_state; /* 0 none, 1 creating, 2 ready */
static atomic_int reported;

static void reg_lock_spin(void)
{
	while (atomic_flag_test_and_set_explicit(&reg_lock, memory_order_acquire))
		;
}

static void reg_lock_clear(void)
{
	atomic_flag_clear_explicit(&reg_lock, memory_order_release);
}

static void reg_lock_take(void)
{
	reg_lock_spin();
	rs_tsan_acquire(&reg_lock); /* (locks.h: inside TSan's interceptors) */
}

static void reg_lock_drop(void)
{
	rs_tsan_release(&reg_lock);
	reg_lock_clear();
}

static void reg_unlink(struct rs_tstats *t)
{
	for (struct rs_tstats **pp = &reg_head; RS_LOAD(*pp); pp = &RS_LOAD(*pp)->next)
		if (RS_LOAD(*pp) == t) {
			RS_STORE(*pp, RS_LOAD(t->next));
			break;
		}
	RS_STORE(t->next, NULL);
}

/* Thread exit: fold the block into `retired` before its memory goes. */
static void tstats_thread_exit(void *arg)
{
	struct rs_tstats *t = arg;
	reg_lock_spin(); /* (not annotated: see reg_lock) */
	for (int i = 0; i < RS_C_COUNT; i++) {
		RS_STORE(retired[i], RS_LOAD(retired[i]) + RS_LOAD(t->c[i]));
		RS_STORE(t->c[i], 0);
	}
	reg_unlink(t);
	t->state = RS_TSTATS_DEAD;
	reg_lock_clear();
}

void rs_stat_add_slow(int idx, uint64_t n)
{
	struct rs_tstats *t = &rs_tstats_tls;
	if (t->state == RS_TSTATS_DEAD || atomic_load(&key_state) == 1)
		goto global;
	int expect = 0;
	if (atomic_compare_exchange_strong(&key_state, &expect, 1)) {
		if (pthread_key_create(&tstats_key, tstats_thread_exit) != 0) {
			atomic_store(&key_state, 0);
			goto global;
		}
		atomic_store(&key_state, 2);
	} else if (atomic_load(&key_state) != 2) {
		goto global;
	}
	reg_lock_take();
	RS_STORE(t->next, RS_LOAD(reg_head));
	RS_STORE(reg_head, t);
	t->state = RS_TSTATS_LIVE;
	reg_lock_drop();
	pthread_setspecific(tstats_key, t);
	rs_stat_add(idx, n);
	return;
global:
	reg_lock_take();
	RS_STORE(retired[idx], RS_LOAD(retired[idx]) + n);
	reg_lock_drop();
}

void rs_stats_snapshot(uint64_t out[RS_C_COUNT])
{
	reg_lock_take();
	for (int i = 0; i < RS_C_COUNT; i++)
		out[i] = RS_LOAD(retired[i]);
	for (struct rs_tstats *b = RS_LOAD(reg_head); b; b = RS_LOAD(b->next))
		for (int i = 0; i < RS_C_COUNT; i++)
			out[i] += __atomic_load_n(&b->c[i], __ATOMIC_RELAXED);
	reg_lock_drop();
}

/* Around fork: no thread may be in the middle of an update of the
 * registry when the child gets its copy (the child then starts afresh). */
void rs_stats_before_fork(void)
{
	reg_lock_take();
}

void rs_stats_after_fork(void)
{
	reg_lock_drop(); /* in both processes: a fork made inside libc
			  * (daemon()) never reaches rs_stats_atfork_child */
}

void rs_stats_atfork_child(void)
{
	/* The child has one thread and starts from zero. */
	struct rs_tstats *self = &rs_tstats_tls;
	atomic_flag_clear(&reg_lock);
	memset(retired, 0, sizeof(retired));
	memset(self->c, 0, sizeof(self->c));
	reg_head = NULL;
	self->next = NULL;
	if (self->state == RS_TSTATS_LIVE)
		reg_head = self;
	atomic_store(&reported, 0);
}

_Static_assert(RS_C_COUNT - RS_C_RINGS == RS_ENGINE_COUNTERS, "a counter without a name (names.c)");

int rs_stats_format(char *buf, size_t len)
{
	uint64_t c[RS_C_COUNT];
	size_t off = 0;
	int pid = rs_sys_getpid();

	rs_stats_snapshot(c);
#define OUT(...) do { \
		int n_ = snprintf(buf ? buf + (off < len ? off : len) : NULL, \
				  off < len ? len - off : 0, __VA_ARGS__); \
		if (n_ > 0) off += (size_t)n_; \
	} while (0)
	OUT("ringsock[%d]: stats version=%s\n", pid, ringsock_version());
	OUT("ringsock[%d]: sockets", pid);
	for (int i = 0; i < RINGSOCK_DOM_COUNT; i++)
		OUT(" %s=%llu", rs_dom_names[i], (unsigned long long)c[RS_C_SOCKETS_CREATED + i]);
	OUT(" tracked=%llu accelerated=%llu\n", (unsigned long long)c[RS_C_SOCKETS_TRACKED],
	    (unsigned long long)c[RS_C_SOCKETS_ACCELERATED]);
	OUT("ringsock[%d]: passthrough", pid);
	for (int i = 0; i < RINGSOCK_PT_COUNT; i++)
		OUT(" %s=%llu", rs_pt_names[i], (unsigned long long)c[RS_C_PASSTHROUGH + i]);
	OUT("\nringsock[%d]: bytes sent=%llu received=%llu\n", pid,
	    (unsigned long long)c[RS_C_BYTES_SENT], (unsigned long long)c[RS_C_BYTES_RECEIVED]);
	OUT("ringsock[%d]: engine", pid);
	for (int i = 0; i < RS_ENGINE_COUNTERS; i++)
		OUT(" %s=%llu", rs_engine_names[i], (unsigned long long)c[RS_C_RINGS + i]);
	OUT("\n");
	OUT("ringsock[%d]: calls.socket", pid);
	for (int i = 0; i < RINGSOCK_FAM_COUNT; i++)
		OUT(" %s=%llu", rs_fam_names[i], (unsigned long long)c[RS_C_CALLS_SOCKET + i]);
	OUT("\nringsock[%d]: calls.other", pid);
	for (int i = 0; i < RINGSOCK_FAM_COUNT; i++)
		OUT(" %s=%llu", rs_fam_names[i], (unsigned long long)c[RS_C_CALLS_OTHER + i]);
	OUT("\n");
#undef OUT
	return (int)off;
}

/* Where the report goes: fd 2, or a file opened at start-up (so a process
 * that chroots or drops privileges can still write it) and kept as an
 * engine descriptor the application cannot close. */
static int report_fd = -1;
static int report_to_stderr;

static void expand_path(const char *tmpl, char *out, size_t len)
{
	size_t o = 0;
	for (const char *p = tmpl; *p && o + 1 < len; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			int n = snprintf(out + o, len - o, "%d", rs_sys_getpid());
			if (n > 0)
				o += (size_t)n;
			p++;
		} else {
			out[o++] = *p;
		}
	}
	out[o < len ? o : len - 1] = 0;
}

static int open_report_file(void)
{
	char path[RS_STR_KNOB_MAX + 32];
	expand_path(rs_rt.cfg.s[RS_K_STATS], path, sizeof(path));
	long fd = rs_syscall(SYS_openat, AT_FDCWD, path,
			     O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		rs_warn("RINGSOCK_STATS: cannot open %s (%s); reporting to stderr", path,
			strerror((int)-fd));
		return -1;
	}
	if (rs_fdguard_adopt((int)fd, &report_fd) < 0) {
		rs_sys_close((int)fd);
		return -1;
	}
	return 0;
}

RS_HIDDEN void rs_stats_setup(void)
{
	const char *v = rs_rt.cfg.s[RS_K_STATS];
	report_to_stderr = 0;
	if (!strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no"))
		return;
	rs_rt.count_other = 1;
	if (!strcmp(v, "1") || !strcasecmp(v, "stderr") || !strcasecmp(v, "on") ||
	    !strcasecmp(v, "yes")) {
		report_to_stderr = 1;
		return;
	}
	if (open_report_file() < 0)
		report_to_stderr = 1;
}

RS_HIDDEN void rs_stats_setup_child(void)
{
	/* A per-process file name (%p) gets its own file in the child. */
	if (report_fd >= 0 && strstr(rs_rt.cfg.s[RS_K_STATS], "%p")) {
		rs_fdguard_release(report_fd);
		report_fd = -1;
		if (open_report_file() < 0)
			report_to_stderr = 1;
	}
}

void rs_stats_report_at_exit(void)
{
	char buf[2048];
	int fd = __atomic_load_n(&report_fd, __ATOMIC_ACQUIRE);
	fd = fd >= 0 ? fd : (report_to_stderr ? 2 : -1);
	if (fd < 0 || atomic_exchange(&reported, 1))
		return;
	int n = rs_stats_format(buf, sizeof(buf));
	if (n > (int)sizeof(buf) - 1)
		n = (int)sizeof(buf) - 1;
	for (int off = 0; off < n;) {
		long w = rs_sys_write(fd, buf + off, (size_t)(n - off));
		if (w == -4)
			continue;
		if (w <= 0)
			break;
		off += (int)w;
	}
}

/* Public API. */
__attribute__((visibility("default"))) int ringsock_stats_snapshot(struct ringsock_stats *out)
{
	uint64_t c[RS_C_COUNT];
	const size_t hdr = offsetof(struct ringsock_stats, calls_socket);
	_Static_assert(sizeof(struct ringsock_stats) == hdr + RS_C_COUNT * sizeof(uint64_t),
		       "ringsock_stats fields must follow the counter indexes");
	if (!out || out->size < hdr)
		return -1;
	rs_stats_snapshot(c);
	size_t n = out->size - hdr;
	if (n > sizeof(c))
		n = sizeof(c);
	out->version = 14;
	memcpy((char *)out + hdr, c, n & ~(sizeof(uint64_t) - 1));
	return 0;
}

__attribute__((visibility("default"))) int ringsock_stats_format(char *buf, size_t len)
{
	return rs_stats_format(buf, len);
}

/* internal.h - what every part of the library shares (the preload layer,
 * the engine, the unit tests): counters, fd records, the engine's own fds,
 * logging, process state, one heading per file.  The engine's own types
 * are in types.h, its calls in engine_int.h (those preload/ makes in
 * api.h), its lifecycle in engine.h.
 *
 * Conventions: engine functions return -errno (never write errno) and do
 * their own I/O with raw system calls (sys.h).  Only preload/ writes errno
 * and calls the next libc symbols.
 */
#ifndef RS_INTERNAL_H
#define RS_INTERNAL_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "ringsock.h"

#define RS_HIDDEN __attribute__((visibility("hidden")))
#define RS_VERSION_STRING RINGSOCK_VERSION_STRING
#define rs_likely(x) __builtin_expect(!!(x), 1)
#define rs_unlikely(x) __builtin_expect(!!(x), 0)
#define RS_TLS __thread __attribute__((tls_model("initial-exec")))

/* ---- log.c: messages on stderr that cannot recurse or allocate -------- */
extern int rs_log_level; /* enum rs_log_level; raised by RINGSOCK_LOG */
void rs_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define rs_err(...) rs_log(RS_LOG_ERROR, __VA_ARGS__)
#define rs_warn(...) rs_log(RS_LOG_WARN, __VA_ARGS__)
#define rs_info(...) rs_log(RS_LOG_INFO, __VA_ARGS__)
/* Debug builds (RINGSOCK_DEBUG, and every sanitizer build) check the
 * engine's invariants: a failed rs_assert names itself and aborts. */
#ifdef RS_DEBUG
void rs_assert_fail(const char *what, const char *file, int line) __attribute__((noreturn));
#define rs_assert(c) (rs_likely(c) ? (void)0 : rs_assert_fail(#c, __FILE__, __LINE__))
#else
#define rs_assert(c) ((void)0)
#endif
#define rs_debug(...) do { if (rs_unlikely(rs_log_level >= RS_LOG_DEBUG)) rs_log(RS_LOG_DEBUG, __VA_ARGS__); } while (0)

/* ---- stats.c: per-thread counters summed on demand --------------------- */
/* Counter indexes follow the uint64_t fields of struct ringsock_stats. */
enum {
	RS_C_CALLS_SOCKET = 0,
	RS_C_CALLS_OTHER = RS_C_CALLS_SOCKET + RINGSOCK_FAM_COUNT,
	RS_C_SOCKETS_CREATED = RS_C_CALLS_OTHER + RINGSOCK_FAM_COUNT,
	RS_C_SOCKETS_TRACKED = RS_C_SOCKETS_CREATED + RINGSOCK_DOM_COUNT,
	RS_C_SOCKETS_ACCELERATED,
	RS_C_PASSTHROUGH,
	RS_C_BYTES_SENT = RS_C_PASSTHROUGH + RINGSOCK_PT_COUNT,
	RS_C_BYTES_RECEIVED,
	RS_C_RINGS,            /* engine counters: see struct ringsock_stats */
	RS_C_URING_ENTERS,
	RS_C_CALLS_NOSYS,
	RS_C_SENDS_SUBMITTED,
	RS_C_ENOBUFS,
	RS_C_THROTTLED,
	RS_C_RECLAIM_BATCHES,
	RS_C_RECLAIM_RETURNS,
	RS_C_FRAG_CHUNKS,
	RS_C_DETACHED,
	RS_C_DIRECT,
	RS_C_DRAINED,          /* layout version 3 */
	RS_C_CQ_BACKLOGS,      /* layout version 5 */
	RS_C_RX_OVERFLOWS,
	RS_C_DIRECT_ON,        /* layout version 6 */
	RS_C_DIRECT_OFF,
	RS_C_BUF_GROWS,        /* layout version 7 */
	RS_C_UDP_DROPS,        /* layout version 8 */
	RS_C_UDP_QUEUED,       /* layout version 9 */
	RS_C_UDP_GSO_SENDS,
	RS_C_UDP_SEND_ERRORS,
	RS_C_ZC_SENDS,         /* layout version 10 */
	RS_C_ZC_COPIED,
	RS_C_ZC_REFUSED,
	RS_C_EP_REARMS,        /* layout version 11 */
	RS_C_FD_LISTINGS,      /* layout version 12 */
	RS_C_ALONE_HANDOVERS,  /* layout version 13 */
	RS_C_FILE_SLOTS,       /* layout version 14 */
	RS_C_COUNT
};
struct rs_tstats;
void rs_stat_add_slow(int idx, uint64_t n);
/* Add n to counter idx of the calling thread (no atomic RMW, no lock once
 * the thread is registered). */
static inline void rs_stat_add(int idx, uint64_t n);
void rs_stats_snapshot(uint64_t out[RS_C_COUNT]);
int rs_stats_format(char *buf, size_t len);
void rs_stats_before_fork(void);
void rs_stats_after_fork(void); /* parent and child */
void rs_stats_atfork_child(void);
void rs_stats_report_at_exit(void); /* once per process, if RINGSOCK_STATS asks */

/* ---- publish.c: the process's state for `ringsock stat` ---------------- */
void rs_publish_init(void);
void rs_publish_now(int force); /* a copy (force: even if one is recent) */
void rs_publish_tick(void);     /* the drain thread's look (every RS_WATCH_MS) */
void rs_publish_call(void);     /* a program's call, when no drain thread ticks
				* (at most every RS_PUB_TICK_MS) */
void rs_publish_event(void);    /* a socket made or taken: a copy now, when no
				* drain thread ticks (no lock of ours held) */
void rs_publish_due(void);      /* the same, for rs_pub_due (clears it) */
extern RS_HIDDEN int rs_pub_due; /* sock.c: the engine took a socket in this call */
void rs_publish_exit(void);     /* exit, exec: the segment goes */
void rs_publish_atfork_child(void);

/* ---- fdtab.c: process-wide fd -> socket record ------------------------- */
/* One record per open TCP/UDP socket description; dup'ed fds share it.
 * Records live in type-stable memory that is never unmapped, so a racing
 * reader of a stale pointer reads a recycled record, never freed memory. */
struct rs_sock {
	atomic_int refs;        /* fd slots referring to it + users holding it */
	uint32_t index;         /* position in the record arena (constant) */
	atomic_uint gen;        /* bumped on every reuse of this record */
	uint32_t next_free;     /* arena free list link (index + 1), 0 = end */
	atomic_int nfds;        /* descriptors referring to it */
	/* What the engine needs to know before it arms the socket, kept up to
	 * date by the trampolines (no system call needed). */
	int rcvbuf, sndbuf;     /* set by the application, 0 if not */
	int rcvlowat;           /* SO_RCVLOWAT set by the application, 0 if not */
	int kernel_lowat;       /* ...and the mark given to the kernel for it
				 * (lowered by what the engine holds) */
	unsigned born_gen;      /* rs_fork_gen when it was created */
	int born_pid;           /* the process that made it (else inherited) */
	int64_t rcvtimeo_ns, sndtimeo_ns; /* SO_RCVTIMEO, SO_SNDTIMEO (0: none) */
	uint16_t domain, type, protocol; /* as created (type without SOCK_* flags) */
	uint8_t pt_reason;      /* enum ringsock_passthrough */
	uint8_t nonblock;       /* O_NONBLOCK on the open description */
	uint8_t conn_state;     /* RS_CONN_* */
	uint8_t timeo_known;    /* ...as read from the kernel since last set */
	uint8_t no_engine;      /* never arm it (pt_reason says why) */
	uint8_t urgent;         /* the program asked about urgent data */
	uint8_t shut_rd, shut_wr; /* shut down before the engine armed it */
	uint8_t passed;         /* sent in SCM_RIGHTS: another process may hold it */
	/* before any engine state (tcp_send.c first_send, tcp_recvcall.c
	 * before_engine: a new nonblocking socket's first send and first
	 * RINGSOCK_ARM_AFTER - 1 reads are the kernel's, so a connection that
	 * ends sooner never enters the engine) */
	uint8_t sent_kernel;    /* a send went to the kernel */
	uint8_t pre_reads;      /* reads with data through the kernel */
	int err_kept;           /* an error a call that returned bytes met, for
				 * the next call (sockcall.c rs_keep_error) */
	uint8_t pt_counted;     /* counted as accelerated or passed through */
	uint8_t pt_counted_blocking; /* counted once as blocking */
	/* engine, blocking sockets (here: a blocking read ends unlocked) */
	uint8_t tx_run;         /* sends since a read got data (at most 2) */
	uint8_t pingpong;       /* one send between the last two reads */
	_Atomic(struct rs_esock *) eng; /* engine state (types.h), NULL if none */
	struct rs_epreg *regs;  /* its epoll registrations (struct rs_epreg in
				 * ep_int.h), linked by epctl.c and epreg.c:
				 * locks in ep_int.h */
};
enum { RS_CONN_UNKNOWN, RS_CONN_UP, RS_CONN_LISTEN, RS_CONN_CONNECTING };
struct rs_esock;
struct rs_epreg;
/* Bumped at every fork (both processes see the new value): a socket born
 * in an earlier generation may be open in another process too. */
extern unsigned rs_fork_gen;
/* Record for fd without taking a reference (NULL when not a tracked
 * socket).  Lock-free: two loads; inline below. */
static inline struct rs_sock *rs_fd_peek(int fd);
/* Record for fd with a reference the caller drops with rs_sock_put. */
struct rs_sock *rs_fd_get(int fd);
void rs_sock_put(struct rs_sock *s);
/* Create a record for a new socket fd and install it (replacing any stale
 * record left by an fd closed behind our back). */
int rs_fd_track(int fd, int domain, int type, int protocol);
/* fd is gone (close): drop its slot's reference. */
void rs_fd_forget(int fd);
/* newfd now refers to oldfd's open description (dup family). */
void rs_fd_dup(int oldfd, int newfd);
void rs_fd_forget_range(unsigned first, unsigned last);
size_t rs_fdtab_live(void);
/* A record's pass-through: never arm s (not yet armed), and count why,
 * once per socket. */
void rs_sock_passthrough(struct rs_sock *s, int reason);
void rs_sock_count_passthrough(struct rs_sock *s, int reason);

/* ---- fdguard.c: descriptors the engine owns ---------------------------- */
/* Move fd to a high number and mark it as the engine's; stores the new fd
 * in *owner (and again whenever it has to move) and returns it, or -errno.
 * The application cannot close or dup2 over it. */
int rs_fdguard_adopt(int fd, int *owner);
/* Two per thread that uses sockets (its ring, its wake-up eventfd), the
 * drain's, the stats file: a thread-per-connection server has hundreds. */
#define RS_MAX_ENGINE_FDS 4096
extern atomic_int rs_fdguard_lowest; /* INT_MAX when the engine has none */
int rs_fdguard_is_engine_slow(int fd);
/* Is fd one of the engine's?  One load when it is below them all. */
static inline int rs_fdguard_is_engine(int fd)
{
	if (rs_likely(fd < atomic_load_explicit(&rs_fdguard_lowest, memory_order_relaxed)))
		return 0;
	return rs_fdguard_is_engine_slow(fd);
}
/* The engine's fds in ascending order; returns how many. */
int rs_fdguard_list(int *out, int max);
void rs_fdguard_release(int fd); /* the engine closes its own fd */
/* The application wants to use fd as a dup2/dup3 target: move an engine fd
 * out of the way first.  Returns 0 or -errno. */
int rs_fdguard_evict(int fd);

/* ---- fdseen.c: descriptors the library has seen (foreign.c counts them) -- */
int rs_fdseen_ready(void);        /* 0 without memory for the bitmap */
void rs_fdseen_add(int fd);       /* a descriptor the library made, saw made, or checked */
void rs_fdseen_gone(int fd);      /* closed, or about to be replaced (dup2) */
void rs_fdseen_range_gone(unsigned first, unsigned last);
int rs_fdseen_has(int fd);
int rs_fdseen_next_unseen(int fd); /* the lowest number >= fd without a bit; -1 past the map */
long rs_fdseen_count(void);       /* bits set */
void rs_fdseen_drop_closed(void); /* drop the bits of descriptors no longer open */
/* The engine making a descriptor of its own (a ring, a moved copy): +1
 * before the system call that makes it, -1 once its bit is set, so a
 * listing does not take it for the program's. */
void rs_fdseen_making(int delta);
int rs_fdseen_making_now(void);          /* makings under way */
unsigned rs_fdseen_makings_begun(void);  /* makings begun, ever */
void rs_fdseen_after_fork_child(void);   /* none under way in the child */

/* ---- foreign.c: io_urings the program made without libc ------------------ */
/* 1 when the process holds an io_uring that is not the engine's (looked
 * for only when descriptors the library did not check can be open), or
 * when that cannot be known (no /proc).  Once 1, always 1.
 * RS_FOREIGN_UNKNOWN when it cannot be looked at now (no descriptor free
 * for the listing): the socket is not armed this time. */
#define RS_FOREIGN_UNKNOWN 2
int rs_foreign_uring_found(void);
void rs_foreign_after_fork_child(void);

/* ---- proc.c (the state) and runtime.c (init, policy, process hooks) ------ */
enum rs_state { RS_ST_UNINIT, RS_ST_INITING, RS_ST_READY };
struct rs_runtime {
	atomic_int state;   /* enum rs_state */
	int passthrough;    /* 1: RINGSOCK_DISABLE or AT_SECURE, touch nothing */
	int secure;         /* AT_SECURE: environment ignored */
	int pt_reason;      /* why eligible sockets are passed through */
	int count_other;    /* count calls on non-socket fds too (RINGSOCK_STATS
			     * set): off by default, it costs on every file read */
	int pid;            /* this process (updated in a fork child); a vfork
			     * child sees another pid and stays hands-off */
	int rr_engine;      /* request-response connections stay the engine's
			     * (RINGSOCK_REQUEST_RESPONSE, auto resolved) */
	struct rs_config cfg;
};
extern struct rs_runtime rs_rt;
/* Called once by the preload layer after the next symbols are resolved.
 * envp is the process environment.  Returns 0, or exits the process when
 * RINGSOCK_STRICT=1 and a knob is bad. */
void rs_runtime_init(char *const *envp, int secure);

/* vfork children.  A child made by vfork() (or clone(CLONE_VM|CLONE_VFORK))
 * runs in the parent's memory, on the parent thread's TLS, until it execs
 * or exits: nothing it calls may change the library's records or touch
 * the parent's rings.  The thread that is about to vfork sets this word
 * (rs_runtime_before_spawn); while it is set, the library asks the kernel
 * who is calling: another pid is the child, which gets pure pass-through;
 * our own pid is the parent after the child has gone, which clears it. */
extern RS_TLS int rs_vfork_pending;
int rs_vfork_child_slow(void);
static inline int rs_in_vfork_child(void)
{
	return rs_unlikely(rs_vfork_pending) && rs_vfork_child_slow();
}
/* Engine locks this thread holds (sig.c).  A call made while it holds
 * one comes from a signal handler that interrupted the engine (libuv's
 * SIGCHLD handler writes a pipe): it must not take them again, so it is
 * passed straight to the kernel. */
extern RS_TLS int rs_lock_depth;
/* Application signal handlers running on this thread through the
 * library's trampoline (sig.c): their calls arm no socket (arming
 * allocates, which a handler must not). */
extern RS_TLS int rs_in_handler;
/* The library serves this caller (initialised, not a vfork child, not a
 * signal handler inside the engine). */
static inline int rs_ready(void)
{
	return atomic_load_explicit(&rs_rt.state, memory_order_acquire) == RS_ST_READY &&
	       !rs_in_vfork_child() && !rs_lock_depth;
}
/* Is (domain, type) a socket the engine would serve? */
int rs_sock_eligible(int domain, int type, int protocol);
void rs_count_domain(int domain, uint64_t n);
void rs_runtime_atfork_child(void);
void rs_runtime_before_exec(void);
void rs_runtime_before_exit(void);
/* A child that shares this process's memory is about to be made (vfork,
 * posix_spawn, system, popen): it may take our sockets into a program we
 * do not see, so queued sends reach the kernel first and no receive reads
 * ahead of a reader from now on. */
void rs_runtime_before_spawn(int vfork);
void rs_stats_setup(void);       /* stats.c: open the report target */
void rs_stats_setup_child(void); /* stats.c: after fork */

/* ---- probe.c: what io_uring can do here --------------------------------- */
/* Newer than Debian 12's kernel headers (6.1): receive bundles (6.10). */
#ifndef IORING_FEAT_RECVSEND_BUNDLE
#define IORING_FEAT_RECVSEND_BUNDLE (1U << 14)
#endif
#ifndef IORING_RECVSEND_BUNDLE
#define IORING_RECVSEND_BUNDLE (1U << 4)
#endif
struct rs_probe {
	int available;       /* io_uring_setup works */
	int setup_errno;     /* errno of io_uring_setup when not */
	int disabled_sysctl; /* kernel.io_uring_disabled, -1 if absent */
	unsigned features;   /* io_uring_params.features */
	unsigned setup_flags_ok; /* IORING_SETUP_* accepted */
	int last_op;         /* highest opcode the kernel knows, -1 unknown */
	unsigned char op_ok[64]; /* per opcode: supported */
	int buf_ring;        /* IORING_REGISTER_PBUF_RING works */
	int buf_ring_inc;    /* IOU_PBUF_RING_INC accepted */
	int mshot_accept;    /* multishot accept completes with F_MORE */
	int mshot_recv;      /* multishot recv completes with F_MORE */
	int bundle;          /* IORING_FEAT_RECVSEND_BUNDLE */
	int send_zc;         /* IORING_OP_SEND_ZC */
	int sparse_files;    /* a sparse registered file table (5.19) */
};
void rs_probe_run(struct rs_probe *p);
/* Zero-copy sends here (probed once per process, on the engine's ring):
 * RS_ZC_NONE, RS_ZC_PLAIN (IORING_OP_SEND_ZC, SENDMSG_ZC), RS_ZC_USAGE
 * (and IORING_SEND_ZC_REPORT_USAGE: the notification says when the kernel
 * copied after all; rs_probe_zc_usage: Linux 6.2+). */
enum { RS_ZC_NONE = 1, RS_ZC_PLAIN, RS_ZC_USAGE };
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)     /* (Linux 6.2) */
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif
struct io_uring;
int rs_probe_send_zc(struct io_uring *ring);
int rs_probe_zc_usage(void);
/* The names of the opcodes this probe reports, NULL past the table. */
const char *rs_probe_op_name(int op);
/* Missing feature that prevents acceleration, or NULL if none.  disabled
 * is the RINGSOCK_FEATURES_DISABLE bit set (features treated as missing). */
const char *rs_probe_blocker(const struct rs_probe *p, unsigned disabled);
/* Whether the kernel reports a CPU-bug mitigation that runs on every
 * system call (probe.c: PTI, retpolines, return thunks, buffer clearing on
 * return, IBRS or IBPB at entry), read from dir (NULL: the kernel's
 * /sys/devices/system/cpu/vulnerabilities): 1, naming them in why; 0 none;
 * -1 the kernel does not say.  Never times anything. */
int rs_probe_costly_calls(const char *dir, char *why, size_t n);

/* ---- inline bodies ------------------------------------------------------ */
/* fdtab.c's two-level tables: fd -> slot chunk -> record index + 1, and
 * record index -> record chunk. */
#define RS_SLOT_SHIFT 12
#define RS_SLOTS_PER_CHUNK (1u << RS_SLOT_SHIFT)
#define RS_SLOT_DIR (1u << 14) /* 2^26 fds */
#define RS_REC_SHIFT 10
#define RS_RECS_PER_CHUNK (1u << RS_REC_SHIFT)
#define RS_REC_DIR (1u << 12) /* 2^22 records */
extern _Atomic(atomic_uint *) rs_slot_dir[RS_SLOT_DIR];
extern _Atomic(struct rs_sock *) rs_rec_dir[RS_REC_DIR];

static inline struct rs_sock *rs_fd_peek(int fd)
{
	if (rs_unlikely((unsigned)fd >= RS_SLOT_DIR * RS_SLOTS_PER_CHUNK))
		return NULL;
	atomic_uint *chunk = atomic_load_explicit(&rs_slot_dir[(unsigned)fd >> RS_SLOT_SHIFT],
						  memory_order_acquire);
	if (!chunk)
		return NULL;
	uint32_t v = atomic_load_explicit(&chunk[(unsigned)fd & (RS_SLOTS_PER_CHUNK - 1)],
					  memory_order_acquire);
	if (rs_likely(!v))
		return NULL;
	struct rs_sock *rc = atomic_load_explicit(&rs_rec_dir[(v - 1) >> RS_REC_SHIFT],
						  memory_order_acquire);
	return &rc[(v - 1) & (RS_RECS_PER_CHUNK - 1)];
}

enum { RS_TSTATS_NEW, RS_TSTATS_LIVE, RS_TSTATS_DEAD };
struct rs_tstats {
	uint64_t c[RS_C_COUNT]; /* written by the owning thread only (relaxed) */
	struct rs_tstats *next; /* registry link, under the registry lock */
	int state;              /* RS_TSTATS_*: registered, or folded at exit */
};
/* This thread's counters, in static TLS. */
extern RS_TLS struct rs_tstats rs_tstats_tls;
/* (always inline: a per-call count, read back by rs_count_call) */
static inline __attribute__((always_inline)) void rs_stat_add(int idx, uint64_t n)
{
	struct rs_tstats *t = &rs_tstats_tls;
	if (rs_likely(t->state == RS_TSTATS_LIVE))
		__atomic_store_n(&t->c[idx], t->c[idx] + n, __ATOMIC_RELAXED);
	else
		rs_stat_add_slow(idx, n);
}

#endif

/* runtime.c - start (configuration, policy) and the process hooks of the
 * preload layer around fork, exec and exit; the state is in proc.c.
 *
 * The preload layer calls rs_runtime_init() once the next libc symbols are
 * resolved, and the hooks below around fork, exec and exit.
 */
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>

#include "engine.h"
#include "internal.h"
#include "sys.h"

static void diag_to_log(void *ctx, const char *msg)
{
	(void)ctx;
	rs_warn("%s", msg);
}

/* The child's fork handler while the engine is off. */
static void after_fork_child_off(void)
{
	rs_stats_after_fork();
	rs_foreign_after_fork_child();
}

/* RINGSOCK_REQUEST_RESPONSE=auto: an event loop's request-response
 * connections stay the engine's where the kernel reports a mitigation that
 * makes every system call costly (the batching saves more than its copies
 * cost there), and go to the kernel's calls elsewhere (probe.c). */
static void request_response_mode(void)
{
	long mode = rs_rt.cfg.v[RS_K_REQUEST_RESPONSE];
	char why[512];
	int costly = mode == RS_RR_AUTO ? rs_probe_costly_calls(NULL, why, sizeof(why)) : 0;
	rs_rt.rr_engine = rs_rr_engine(mode, costly);
	if (costly > 0)
		rs_info("request-response connections: the engine's (system calls are costly here: %s)", why);
}

void rs_runtime_init(char *const *envp, int secure)
{
	int expect = RS_ST_UNINIT;
	if (!atomic_compare_exchange_strong(&rs_rt.state, &expect, RS_ST_INITING))
		return;
	rs_rt.pid = rs_sys_getpid();

	if (secure) {
		/* setuid/setgid: the environment is not ours to trust. */
		rs_config_parse(&rs_rt.cfg, NULL, NULL, NULL);
		rs_rt.secure = 1;
		rs_rt.passthrough = 1;
		rs_rt.pt_reason = RINGSOCK_PT_DISABLED;
		rs_log_level = RS_LOG_ERROR;
		atomic_store_explicit(&rs_rt.state, RS_ST_READY, memory_order_release);
		return;
	}

	/* A quiet pass for RINGSOCK_LOG, then the one that reports. */
	rs_config_parse(&rs_rt.cfg, envp, NULL, NULL);
	rs_log_level = (int)rs_rt.cfg.v[RS_K_LOG];
	int problems = rs_config_parse(&rs_rt.cfg, envp, diag_to_log, NULL);
	if (problems && rs_rt.cfg.v[RS_K_STRICT]) {
		rs_err("refusing to start: RINGSOCK_STRICT=1 and %d RINGSOCK_* problem%s above",
		       problems, problems == 1 ? "" : "s");
		rs_syscall(SYS_exit_group, 2);
	}

	rs_rt.passthrough = (int)rs_rt.cfg.v[RS_K_DISABLE];
	if (rs_rt.passthrough)
		rs_rt.pt_reason = RINGSOCK_PT_DISABLED;
	else if (rs_rt.cfg.v[RS_K_FEATURES_DISABLE] & RS_FEAT_IO_URING)
		rs_rt.pt_reason = RINGSOCK_PT_NO_IO_URING;
	else
		rs_rt.pt_reason = RINGSOCK_PT_ENGINE_OFF;
	if (!rs_rt.passthrough && rs_rt.pt_reason == RINGSOCK_PT_ENGINE_OFF) {
		request_response_mode();
		rs_engine_init();
	}
	/* No thread may be updating the counters' registry when fork copies
	 * it, and the child makes the foreign-ring scan's lock anew (another
	 * thread may have held it); with the engine on, its own fork
	 * handlers see to both, after the drain thread has stopped. */
	if (!rs_engine_on)
		pthread_atfork(rs_stats_before_fork, rs_stats_after_fork, after_fork_child_off);
	if (!rs_rt.passthrough)
		(void)rs_fdseen_ready(); /* (mapped now, before the program's threads race to) */
	rs_stats_setup();
	rs_publish_init();
	rs_info("ringsock %s loaded: %s", RS_VERSION_STRING,
		rs_rt.passthrough ? "RINGSOCK_DISABLE=1, pure pass-through"
		: rs_engine_on ? "TCP sockets served by the io_uring engine"
			       : "TCP/UDP sockets tracked; the io_uring engine is off, every call reaches the kernel");
	atomic_store_explicit(&rs_rt.state, RS_ST_READY, memory_order_release);
}

int rs_sock_eligible(int domain, int type, int protocol)
{
	if (domain != AF_INET && domain != AF_INET6)
		return 0;
	switch (type) {
	case SOCK_STREAM:
		return protocol == 0 || protocol == IPPROTO_TCP;
	case SOCK_DGRAM:
		return protocol == 0 || protocol == IPPROTO_UDP;
	default:
		return 0;
	}
}

void rs_count_domain(int domain, uint64_t n)
{
	int d = domain == AF_INET ? RINGSOCK_DOM_INET
		: domain == AF_INET6 ? RINGSOCK_DOM_INET6
		: domain == AF_UNIX ? RINGSOCK_DOM_UNIX
		: RINGSOCK_DOM_OTHER;
	rs_stat_add(RS_C_SOCKETS_CREATED + d, n);
}

/* The child of our fork(): the process-wide state that is not the
 * engine's.  The engine's fork hooks are pthread_atfork handlers
 * (engine.c), so they also run for forks made inside libc (daemon(), for
 * one) that do not go through our fork(). */
void rs_runtime_atfork_child(void)
{
	rs_vfork_pending = 0; /* a new process, not a vfork child */
	if (!rs_ready())
		return;
	rs_rt.pid = rs_sys_getpid();
	rs_stats_atfork_child();
	rs_stats_setup_child();
	rs_publish_atfork_child();
}

void rs_runtime_before_spawn(int vfork)
{
	if (!rs_ready() || rs_rt.passthrough)
		return;
	/* Sockets open now may be open in the child too (fork does the same
	 * from its pthread_atfork handler). */
	__atomic_add_fetch(&rs_fork_gen, 1, __ATOMIC_RELAXED);
	rs_engine_before_spawn();
	if (vfork)
		rs_vfork_pending = 1;
}

void rs_runtime_before_exec(void)
{
	/* (a vfork child is not rs_ready(): the parent flushed already) */
	if (!rs_ready())
		return;
	rs_publish_exit(); /* (the new image makes its own, if it runs under us) */
	if (rs_rt.passthrough)
		return;
	/* Accepted bytes reach the kernel before the image is replaced. */
	rs_engine_flush_all();
}

void rs_runtime_before_exit(void)
{
	/* (a vfork child is not rs_ready(): it must not report or flush) */
	if (!rs_ready() || rs_rt.secure)
		return;
	if (!rs_rt.passthrough)
		rs_engine_flush_all();
	rs_stats_report_at_exit();
	rs_publish_exit();
}

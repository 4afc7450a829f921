/* probe.c - find out at run time what io_uring can do on this kernel.
 *
 * Every answer comes from asking the kernel: io_uring_setup with each
 * setup flag, IORING_REGISTER_PROBE for opcodes, a real provided-buffer
 * ring registration, and real multishot accept and receive on a loopback
 * listener and a socketpair.  Sockets are made with raw system calls so
 * the probe never passes through the interposed symbols.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <stdio.h>

#include "internal.h"
#include "sys.h"

/* Newer than Debian 12's kernel headers (6.1). */
#ifndef IORING_SETUP_NO_MMAP
#define IORING_SETUP_NO_MMAP (1U << 14)
#endif
#ifndef IORING_SETUP_NO_SQARRAY
#define IORING_SETUP_NO_SQARRAY (1U << 16)
#endif
#ifndef IOU_PBUF_RING_INC
#define IOU_PBUF_RING_INC 2
#endif
#ifndef IORING_OP_SEND_ZC
#define IORING_OP_SEND_ZC 47
#endif

static const char *const op_names[] = {
	"NOP", "READV", "WRITEV", "FSYNC", "READ_FIXED", "WRITE_FIXED", "POLL_ADD",
	"POLL_REMOVE", "SYNC_FILE_RANGE", "SENDMSG", "RECVMSG", "TIMEOUT", "TIMEOUT_REMOVE",
	"ACCEPT", "ASYNC_CANCEL", "LINK_TIMEOUT", "CONNECT", "FALLOCATE", "OPENAT", "CLOSE",
	"FILES_UPDATE", "STATX", "READ", "WRITE", "FADVISE", "MADVISE", "SEND", "RECV",
	"OPENAT2", "EPOLL_CTL", "SPLICE", "PROVIDE_BUFFERS", "REMOVE_BUFFERS", "TEE",
	"SHUTDOWN", "RENAMEAT", "UNLINKAT", "MKDIRAT", "SYMLINKAT", "LINKAT", "MSG_RING",
	"FSETXATTR", "SETXATTR", "FGETXATTR", "GETXATTR", "SOCKET", "URING_CMD", "SEND_ZC",
	"SENDMSG_ZC", "READ_MULTISHOT", "WAITID", "FUTEX_WAIT", "FUTEX_WAKE", "FUTEX_WAITV",
	"FIXED_FD_INSTALL", "FTRUNCATE", "BIND", "LISTEN", "RECV_ZC", "EPOLL_WAIT",
	"READV_FIXED", "WRITEV_FIXED", "PIPE",
};

const char *rs_probe_op_name(int op)
{
	if (op < 0 || (size_t)op >= sizeof(op_names) / sizeof(op_names[0]))
		return NULL;
	return op_names[op];
}

static int read_sysctl(const char *path)
{
	char buf[32];
	long fd = rs_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	long n = rs_syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	rs_sys_close((int)fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	return buf[0] >= '0' && buf[0] <= '9' ? buf[0] - '0' : -1;
}

static int try_setup(unsigned flags, struct io_uring_params *out)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	p.flags = flags;
	long fd = rs_syscall(__NR_io_uring_setup, 8, &p);
	if (fd < 0)
		return (int)fd;
	rs_sys_close((int)fd);
	if (out)
		*out = p;
	return 0;
}

/* Wait for one completion with a bounded timeout. */
static int wait_one(struct io_uring *ring, struct io_uring_cqe **cqe)
{
	struct __kernel_timespec ts = { .tv_sec = 1, .tv_nsec = 0 };
	return io_uring_wait_cqe_timeout(ring, cqe, &ts);
}

#define PROBE_BGID 7
#define PROBE_BUFS 8
#define PROBE_BUFSZ 256

static void probe_buf_ring_and_recv(struct rs_probe *p, struct io_uring *ring)
{
	size_t ring_bytes = PROBE_BUFS * sizeof(struct io_uring_buf);
	void *mem = mmap(NULL, ring_bytes + PROBE_BUFS * PROBE_BUFSZ, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return;
	struct io_uring_buf_ring *br = mem;
	char *bufs = (char *)mem + ring_bytes;
	struct io_uring_buf_reg reg;
	memset(&reg, 0, sizeof(reg));
	reg.ring_addr = (unsigned long)br;
	reg.ring_entries = PROBE_BUFS;
	reg.bgid = PROBE_BGID;
	if (io_uring_register_buf_ring(ring, &reg, 0) != 0)
		goto out;
	p->buf_ring = 1;
	io_uring_buf_ring_init(br);
	for (int i = 0; i < PROBE_BUFS; i++)
		io_uring_buf_ring_add(br, bufs + i * PROBE_BUFSZ, PROBE_BUFSZ, (unsigned short)i,
				      io_uring_buf_ring_mask(PROBE_BUFS), i);
	io_uring_buf_ring_advance(br, PROBE_BUFS);

	int sv[2];
	if (rs_syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
		struct io_uring_cqe *cqe;
		io_uring_prep_recv_multishot(sqe, sv[0], NULL, 0, 0);
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = PROBE_BGID;
		sqe->user_data = 1;
		io_uring_submit(ring);
		rs_syscall(SYS_write, sv[1], "probe", 5);
		if (wait_one(ring, &cqe) == 0) {
			p->mshot_recv = cqe->res == 5 && (cqe->flags & IORING_CQE_F_MORE) &&
					(cqe->flags & IORING_CQE_F_BUFFER);
			io_uring_cqe_seen(ring, cqe);
		}
		rs_syscall(SYS_shutdown, sv[0], SHUT_RDWR);
		rs_sys_close(sv[1]);
		/* Drain the terminating completion before the fd goes away. */
		while (wait_one(ring, &cqe) == 0) {
			int more = cqe->flags & IORING_CQE_F_MORE;
			io_uring_cqe_seen(ring, cqe);
			if (!more)
				break;
		}
		rs_sys_close(sv[0]);
	}
	io_uring_unregister_buf_ring(ring, PROBE_BGID);

	/* Incremental consumption (6.12): the kernel accepts the flag. */
	reg.pad = IOU_PBUF_RING_INC; /* 'flags' in 6.12+ headers, 'pad' in 6.1's */
	if (io_uring_register_buf_ring(ring, &reg, 0) == 0) {
		p->buf_ring_inc = 1;
		io_uring_unregister_buf_ring(ring, PROBE_BGID);
	}
out:
	munmap(mem, ring_bytes + PROBE_BUFS * PROBE_BUFSZ);
}

static void probe_accept(struct rs_probe *p, struct io_uring *ring)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	long l = rs_syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0)
		return;
	long c = -1;
	if (rs_syscall(SYS_bind, l, &sa, sizeof(sa)) || rs_syscall(SYS_listen, l, 4) ||
	    rs_syscall(SYS_getsockname, l, &sa, &sl))
		goto out;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	struct io_uring_cqe *cqe;
	io_uring_prep_multishot_accept(sqe, (int)l, NULL, NULL, SOCK_CLOEXEC);
	sqe->user_data = 2;
	io_uring_submit(ring);
	c = rs_syscall(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || rs_syscall(SYS_connect, c, &sa, sizeof(sa)))
		goto cancel;
	if (wait_one(ring, &cqe) == 0) {
		p->mshot_accept = cqe->res >= 0 && (cqe->flags & IORING_CQE_F_MORE);
		if (cqe->res >= 0)
			rs_sys_close(cqe->res);
		io_uring_cqe_seen(ring, cqe);
	}
cancel:
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_cancel64(sqe, 2, 0);
	sqe->user_data = 3;
	io_uring_submit(ring);
	for (int i = 0; i < 2 && wait_one(ring, &cqe) == 0; i++)
		io_uring_cqe_seen(ring, cqe);
out:
	if (c >= 0)
		rs_sys_close((int)c);
	rs_sys_close((int)l);
}

/* IORING_SEND_ZC_REPORT_USAGE came with Linux 6.2.  (Probing it on a
 * ring of its own would cost the calling thread a later system call: the
 * kernel's teardown of a ring queues work on every task that used it as if
 * a signal were pending, so a blocking recv with SO_RCVTIMEO would fail
 * with EINTR.  An older kernel with it backported just reports no copies.) */
int rs_probe_zc_usage(void)
{
	struct utsname u;
	unsigned maj = 0, min = 0;
	if (uname(&u) != 0 || sscanf(u.release, "%u.%u", &maj, &min) != 2)
		return 0;
	return maj > 6 || (maj == 6 && min >= 2);
}

int rs_probe_send_zc(struct io_uring *ring)
{
	static int known;
	int v = __atomic_load_n(&known, __ATOMIC_ACQUIRE);
	if (v)
		return v;
	v = RS_ZC_NONE;
	/* IORING_REGISTER_PROBE: no request, no completion, no task work; and
	 * no malloc (this runs in the send path, which a signal handler's
	 * send may reach). */
	union {
		struct io_uring_probe p;
		char b[sizeof(struct io_uring_probe) + 256 * sizeof(struct io_uring_probe_op)];
	} pr;
	memset(&pr, 0, sizeof(pr));
	if (rs_syscall(SYS_io_uring_register, ring->ring_fd, IORING_REGISTER_PROBE, &pr.p, 256) == 0 &&
	    io_uring_opcode_supported(&pr.p, IORING_OP_SEND_ZC) && io_uring_opcode_supported(&pr.p, IORING_OP_SENDMSG_ZC))
		v = rs_probe_zc_usage() ? RS_ZC_USAGE : RS_ZC_PLAIN;
	__atomic_store_n(&known, v, __ATOMIC_RELEASE);
	return v;
}

void rs_probe_run(struct rs_probe *p)
{
	struct io_uring_params params;
	memset(&params, 0, sizeof(params));
	memset(p, 0, sizeof(*p));
	p->last_op = -1;
	p->disabled_sysctl = read_sysctl("/proc/sys/kernel/io_uring_disabled");

	int r = try_setup(0, &params);
	if (r < 0) {
		p->setup_errno = -r;
		return;
	}
	p->available = 1;
	p->features = params.features;
	p->bundle = !!(params.features & IORING_FEAT_RECVSEND_BUNDLE);

	static const unsigned flag_sets[][2] = {
		/* { flag probed, companions it needs } */
		{ IORING_SETUP_CLAMP, 0 },
		{ IORING_SETUP_SUBMIT_ALL, 0 },
		{ IORING_SETUP_COOP_TASKRUN, 0 },
		{ IORING_SETUP_TASKRUN_FLAG, IORING_SETUP_COOP_TASKRUN },
		{ IORING_SETUP_SINGLE_ISSUER, 0 },
		{ IORING_SETUP_DEFER_TASKRUN, IORING_SETUP_SINGLE_ISSUER },
		{ IORING_SETUP_NO_SQARRAY, 0 },
	};
	for (size_t i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++)
		if (try_setup(flag_sets[i][0] | flag_sets[i][1], NULL) == 0)
			p->setup_flags_ok |= flag_sets[i][0];

	struct io_uring ring;
	if (io_uring_queue_init(16, &ring, 0) != 0)
		return;
	struct io_uring_probe *pr = io_uring_get_probe_ring(&ring);
	if (pr) {
		p->last_op = pr->last_op;
		for (int i = 0; i < pr->ops_len && i < 64; i++)
			p->op_ok[pr->ops[i].op] = !!(pr->ops[i].flags & IO_URING_OP_SUPPORTED);
		io_uring_free_probe(pr);
	}
	p->send_zc = p->op_ok[IORING_OP_SEND_ZC];
	probe_buf_ring_and_recv(p, &ring);
	probe_accept(p, &ring);
	/* A sparse registered file table (5.19), as ringfile.c registers. */
	if (io_uring_register_files_sparse(&ring, 64) == 0) {
		p->sparse_files = 1;
		io_uring_unregister_files(&ring);
	}
	io_uring_queue_exit(&ring);
}

const char *rs_probe_blocker(const struct rs_probe *p, unsigned disabled)
{
	if (disabled & RS_FEAT_IO_URING)
		return "io_uring disabled by RINGSOCK_FEATURES_DISABLE";
	if (p->disabled_sysctl == 2)
		return "io_uring is disabled by the kernel.io_uring_disabled=2 sysctl";
	if (!p->available) {
		switch (p->setup_errno) {
		case ENOSYS:
			return "this kernel has no io_uring (ENOSYS)";
		case EPERM:
			return p->disabled_sysctl == 1
				       ? "io_uring is restricted by kernel.io_uring_disabled=1 (EPERM)"
				       : "io_uring_setup is blocked (EPERM: seccomp or a container policy)";
		case ENOMEM:
			return "io_uring_setup failed with ENOMEM (check the memlock limit)";
		default:
			return "io_uring_setup failed";
		}
	}
	static const struct { int op; const char *why; } needed[] = {
		{ IORING_OP_RECV, "the kernel lacks IORING_OP_RECV (5.6+)" },
		{ IORING_OP_SEND, "the kernel lacks IORING_OP_SEND (5.6+)" },
		{ IORING_OP_ASYNC_CANCEL, "the kernel lacks IORING_OP_ASYNC_CANCEL (5.5+)" },
		{ IORING_OP_POLL_ADD, "the kernel lacks IORING_OP_POLL_ADD (5.1+)" },
		{ IORING_OP_ACCEPT, "the kernel lacks IORING_OP_ACCEPT (5.5+)" },
	};
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (!p->op_ok[needed[i].op])
			return needed[i].why;
	if (!p->buf_ring || (disabled & RS_FEAT_BUF_RING))
		return p->buf_ring ? "provided-buffer rings disabled by RINGSOCK_FEATURES_DISABLE"
				   : "the kernel lacks provided-buffer rings (5.19+)";
	if (!p->mshot_recv || (disabled & RS_FEAT_MSHOT_RECV))
		return p->mshot_recv ? "multishot receive disabled by RINGSOCK_FEATURES_DISABLE"
				     : "the kernel lacks multishot receive (6.0+)";
	if (!(p->setup_flags_ok & (1u << 12)) || (disabled & RS_FEAT_SINGLE_ISSUER))
		return (p->setup_flags_ok & (1u << 12)) ? "SINGLE_ISSUER disabled by RINGSOCK_FEATURES_DISABLE"
							: "the kernel lacks IORING_SETUP_SINGLE_ISSUER (6.0+)";
	if (!(p->setup_flags_ok & (1u << 13)) || (disabled & RS_FEAT_DEFER_TASKRUN))
		return (p->setup_flags_ok & (1u << 13)) ? "DEFER_TASKRUN disabled by RINGSOCK_FEATURES_DISABLE"
							: "the kernel lacks IORING_SETUP_DEFER_TASKRUN (6.1+)";
	return NULL;
}

/* ---- what a system call costs here ----------------------------------------
 * Some of the CPU-bug mitigations the kernel reports run on every entry to
 * the kernel or every return from it (or from each of its functions): a
 * page-table switch (PTI), buffer clearing on each return to user space
 * (VERW: "Clear CPU buffers"), return thunks and retpolines, IBRS written
 * at each entry and exit, an IBPB on entry.  Where one of them runs, a
 * system call costs more (bench/callcost.sh: a kernel recv of queued bytes
 * about 550 ns on an EPYC with retpolines and Safe RET, 354 ns on a Xeon
 * with enhanced IBRS alone, 860 ns on session 28's machine), and the
 * engine's batching saves more than its copies cost (bench/README: the
 * knob_request_response rows on each).  The answer
 * comes from the files the kernel writes, the same on every run on one
 * machine; it never times anything. */
static const struct {
	const char *file;      /* in /sys/devices/system/cpu/vulnerabilities */
	const char *text[4];   /* any of these in its line */
} costly[] = {
	{ "meltdown", { "PTI" } },
	/* (legacy IBRS; not "Enhanced / Automatic IBRS") */
	{ "spectre_v2", { "Retpolines", "Mitigation: IBRS" } },
	{ "retbleed", { "untrained return thunk", "Mitigation: IBRS", "IBPB", "Stuffing" } },
	{ "spec_rstack_overflow", { "Safe RET", "IBPB" } }, /* (with or without microcode) */
	{ "mds", { "Clear CPU buffers" } },
	{ "tsx_async_abort", { "Clear CPU buffers" } },
	{ "mmio_stale_data", { "Clear CPU buffers" } },
	{ "reg_file_data_sampling", { "Clear Register File" } },
	{ "tsa", { "Clear CPU buffers" } },
	{ "indirect_target_selection", { "thunks" } },
};

int rs_probe_costly_calls(const char *dir, char *why, size_t n)
{
	if (!dir)
		dir = "/sys/devices/system/cpu/vulnerabilities";
	if (n)
		why[0] = 0;
	int found = 0, any = 0;
	size_t at = 0;
	for (size_t i = 0; i < sizeof(costly) / sizeof(costly[0]); i++) {
		char path[256], line[256];
		snprintf(path, sizeof(path), "%s/%s", dir, costly[i].file);
		long fd = rs_syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		long k = rs_syscall(SYS_read, fd, line, sizeof(line) - 1);
		rs_sys_close((int)fd);
		line[k > 0 ? k : 0] = 0;
		line[strcspn(line, "\n")] = 0;
		any = 1;
		int hit = 0;
		for (int j = 0; j < 4 && costly[i].text[j] && !hit; j++)
			hit = strstr(line, costly[i].text[j]) != NULL;
		if (!hit)
			continue;
		found = 1;
		if (at + 1 < n) {
			int w = snprintf(why + at, n - at, "%s%s (%s)", at ? ", " : "", costly[i].file, line);
			at = w < 0 ? at : at + (size_t)w < n ? at + (size_t)w : n - 1;
		}
	}
	return found ? 1 : any ? 0 : -1;
}

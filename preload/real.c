/* real.c - the next symbols, their raw-syscall fallbacks, and start-up.
 *
 * Every pointer in rs_real starts at a fallback that makes the system call
 * itself, so calls that arrive before initialisation (other libraries'
 * constructors, or calls made from inside dlsym while we resolve) work.
 * rs_preload_init() then swaps in dlsym(RTLD_NEXT) results, which keeps
 * other preloaded libraries in the chain.
 */
#include "preload.h"

#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/time.h>

static long rs_fb_ret(long r)
{
	return rs_ret(r);
}

static long rs_fb_dup2_sys(int fd, int fd2)
{
	if (fd == fd2) /* dup2 to itself: EBADF check only */
		return rs_syscall(SYS_fcntl, fd, F_GETFD) < 0 ? -EBADF : fd;
	return rs_syscall(SYS_dup3, fd, fd2, 0);
}

static long rs_fb_ppoll_sys(struct pollfd *fds, nfds_t n, const struct timespec *tmo, const sigset_t *ss)
{
	struct timespec t, *tp = NULL;
	if (tmo) {
		t = *tmo;
		tp = &t;
	}
	return rs_syscall(SYS_ppoll, fds, n, tp, ss, 8);
}

static long rs_fb_poll_sys(struct pollfd *fds, nfds_t n, int timeout)
{
	struct timespec t = { timeout / 1000, (timeout % 1000) * 1000000L };
	return rs_syscall(SYS_ppoll, fds, n, timeout < 0 ? NULL : &t, NULL, 8);
}

static long rs_fb_pselect_sys(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *tmo,
			      const sigset_t *ss)
{
	struct timespec t, *tp = NULL;
	struct { const sigset_t *ss; size_t len; } sa = { ss, 8 };
	if (tmo) {
		t = *tmo;
		tp = &t;
	}
	return rs_syscall(SYS_pselect6, n, r, w, e, tp, ss ? &sa : NULL);
}

static long rs_fb_select_sys(int n, fd_set *r, fd_set *w, fd_set *e, struct timeval *tmo)
{
	struct timespec t, *tp = NULL;
	if (tmo) {
		t.tv_sec = tmo->tv_sec;
		t.tv_nsec = tmo->tv_usec * 1000;
		tp = &t;
	}
	long ret = rs_syscall(SYS_pselect6, n, r, w, e, tp, NULL);
	if (tmo) { /* Linux select reports the time left */
		tmo->tv_sec = t.tv_sec;
		tmo->tv_usec = t.tv_nsec / 1000;
	}
	return ret;
}

/* PATH search like execvp, used only before libc's execvp is resolved. */
static long rs_fb_execvpe_sys(const char *file, char *const argv[], char *const envp[])
{
	char path[PATH_MAX];
	long err = -ENOENT;
	if (!*file)
		return -ENOENT;
	if (strchr(file, '/'))
		return rs_syscall(SYS_execve, file, argv, envp);
	const char *p = "/usr/local/bin:/usr/bin:/bin";
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "PATH=", 5))
			p = *e + 5;
	size_t fl = strlen(file);
	for (;;) {
		const char *c = strchr(p, ':');
		size_t dl = c ? (size_t)(c - p) : strlen(p);
		if (dl + fl + 2 <= sizeof(path)) {
			memcpy(path, dl ? p : ".", dl ? dl : 1);
			size_t o = dl ? dl : 1;
			path[o++] = '/';
			memcpy(path + o, file, fl + 1);
			long r = rs_syscall(SYS_execve, path, argv, envp);
			if (r != -ENOENT && r != -ENOTDIR)
				err = r;
		}
		if (!c)
			break;
		p = c + 1;
	}
	return err;
}

static long rs_fb_usleep_sys(useconds_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
	return rs_syscall(SYS_nanosleep, &ts, NULL);
}

/* (sleep returns the seconds left, never an error) */
static long rs_fb_sleep_sys(unsigned int secs)
{
	struct timespec ts = { (time_t)secs, 0 }, rem = { 0, 0 };
	long r = rs_syscall(SYS_nanosleep, &ts, &rem);
	return r == -EINTR ? (long)rem.tv_sec + (rem.tv_nsec > 0) : 0;
}

/* (clock_nanosleep returns the error number itself) */
static int rs_fb_clock_nanosleep(clockid_t clk, int flags, const struct timespec *req, struct timespec *rem)
{
	return (int)-rs_syscall(SYS_clock_nanosleep, clk, flags, req, rem);
}

#define RS_CALL(ret, name, params, args, fb) \
	static ret rs_fb_##name params { return (ret)rs_fb_ret(fb); }
#define RS_CALL_CUSTOM(ret, name, params, args)
#include "calls.def"
#undef RS_CALL

static int rs_fb_fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return (int)rs_ret(rs_syscall(SYS_fcntl, fd, cmd, arg));
}
#ifdef __GLIBC__
#define rs_fb_fcntl64 rs_fb_fcntl
#endif

static int rs_fb_ioctl(int fd, RS_IOCTL_REQ req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return (int)rs_ret(rs_syscall(SYS_ioctl, fd, req, arg));
}

static void rs_fb__exit(int status)
{
	for (;;)
		rs_syscall(SYS_exit_group, status);
}
#define rs_fb__Exit rs_fb__exit

/* The signal calls' fallbacks are in signal.c (built without the thread
 * sanitizer, which calls sigaction before it is ready). */
RS_HIDDEN int rs_fb_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
RS_HIDDEN sighandler_t rs_fb_signal(int sig, sighandler_t h);
#define rs_fb_bsd_signal rs_fb_signal
#ifdef __GLIBC__
RS_HIDDEN sighandler_t rs_fb_sysv_signal(int sig, sighandler_t h);
#endif
RS_HIDDEN sighandler_t rs_fb_sigset(int sig, sighandler_t h);
RS_HIDDEN int rs_fb_siginterrupt(int sig, int flag);

/* Spawning before libc's calls are resolved (another library's
 * constructor) is refused: nothing of the library runs yet to protect. */
static int rs_fb_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	(void)pid, (void)path, (void)fa, (void)attr, (void)argv, (void)envp;
	return ENOSYS;
}
#define rs_fb_posix_spawnp rs_fb_posix_spawn

static int rs_fb_system(const char *cmd)
{
	(void)cmd;
	errno = ENOSYS;
	return -1;
}

/* The stdio and directory calls whose close happens inside the C
 * library, before their next symbol is known (another library's
 * constructor): looked up now. */
static void *next_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

static int rs_fb_fclose(FILE *f)
{
	int (*p)(FILE *) = (int (*)(FILE *))next_sym("fclose");
	return p ? p(f) : (errno = ENOSYS, EOF);
}

static int rs_fb_pclose(FILE *f)
{
	int (*p)(FILE *) = (int (*)(FILE *))next_sym("pclose");
	return p ? p(f) : (errno = ENOSYS, -1);
}

static int rs_fb_closedir(DIR *d)
{
	int (*p)(DIR *) = (int (*)(DIR *))next_sym("closedir");
	return p ? p(d) : (errno = ENOSYS, -1);
}

static FILE *rs_fb_fdopen(int fd, const char *mode)
{
	FILE *(*p)(int, const char *) = (FILE * (*)(int, const char *)) next_sym("fdopen");
	return p ? p(fd, mode) : (errno = ENOSYS, NULL);
}

static FILE *rs_fb_popen(const char *cmd, const char *mode)
{
	(void)cmd, (void)mode;
	errno = ENOSYS;
	return NULL;
}

static long rs_fb_syscall(long nr, ...)
{
	RS_SYSCALL_ARGS(nr, a);
	return rs_ret(rs_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]));
}

RS_HIDDEN pid_t rs_fb_vfork(void);
pid_t rs_fb_vfork(void)
{
	/* Only reached if libc's vfork could not be resolved: fork has the
	 * same observable result for a child that execs or exits. */
	return REAL(fork)();
}

struct rs_real rs_real = {
#define RS_CALL(ret, name, params, args, fb) .name = rs_fb_##name,
#include "calls.def"
#undef RS_CALL
};

/* vfork.S jumps through this. */
RS_HIDDEN pid_t (*rs_real_vfork)(void);

static void resolve(void)
{
	void *p;
#define RS_CALL(ret, name, params, args, fb) \
	if ((p = dlsym(RTLD_NEXT, #name)) != NULL) \
		__atomic_store_n((void **)&rs_real.name, p, __ATOMIC_RELAXED);
#include "calls.def"
#undef RS_CALL
	__atomic_store_n(&rs_real_vfork, rs_real.vfork, __ATOMIC_RELEASE);
}

static RS_TLS int in_init;
RS_HIDDEN void rs_signal_ready(void); /* signal.c */

void rs_preload_init(void)
{
	static atomic_int resolved;
	if (rs_ready() || in_init)
		return;
	in_init = 1;
	int saved = errno;
	if (!atomic_load(&resolved)) {
		resolve();
		atomic_store(&resolved, 1);
	}
	rs_runtime_init(environ, getauxval(AT_SECURE) != 0);
	rs_signal_ready();
	errno = saved;
	in_init = 0;
}

__attribute__((constructor(101))) static void rs_ctor(void)
{
	rs_preload_init();
}

__attribute__((destructor)) static void rs_dtor(void)
{
	rs_runtime_before_exit();
}

void rs_new_fd(int fd, int domain, int type, int protocol)
{
	if (rs_sock_eligible(domain, type, protocol)) {
		if (rs_fd_track(fd, domain, type, protocol) == 0) {
			rs_stat_add(RS_C_SOCKETS_TRACKED, 1);
			/* With the engine on, the socket is counted when the
			 * engine decides (armed, or passed through and why). */
			if (!rs_engine_on) {
				struct rs_sock *s = rs_fd_peek(fd);
				s->pt_counted = 1;
				rs_stat_add(RS_C_PASSTHROUGH + rs_rt.pt_reason, 1);
			}
			rs_publish_event(); /* (when no drain thread makes the copies) */
		} else {
			rs_stat_add(RS_C_PASSTHROUGH + RINGSOCK_PT_TABLE_FULL, 1);
		}
	} else {
		rs_fd_forget(fd);
	}
}

void rs_new_sock_state(int fd, int nonblock, int conn_state)
{
	struct rs_sock *s = rs_fd_peek(fd);
	if (s) {
		s->nonblock = nonblock;
		s->conn_state = conn_state;
	}
}

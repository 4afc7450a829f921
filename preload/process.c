/* process.c - fork, vfork (vfork.S), the exec family, _exit, _Exit.
 *
 * Before the image is replaced or the process ends, the runtime gets its
 * hook (flush queued sends, report stats); after fork the child resets
 * what is per process.
 */
#include "preload.h"

#include <stdlib.h>

static void count_process(void)
{
	if (rs_enter())
		rs_count_call(0, RINGSOCK_FAM_PROCESS);
}

RS_EXPORT pid_t fork(void)
{
	count_process();
	/* (the engine's own fork work runs in its pthread_atfork handlers,
	 * engine.c, which also run for forks made inside libc) */
	pid_t pid = REAL(fork)();
	int saved = errno;
	if (pid == 0)
		rs_runtime_atfork_child();
	errno = saved;
	return pid;
}

/* Called by vfork.S before it jumps to libc's vfork; nothing may be left
 * on the stack.  The child runs in our memory until it execs or exits:
 * from here on, every call it makes is passed straight through
 * (rs_in_vfork_child). */
RS_HIDDEN void rs_vfork_prepare(void);
void rs_vfork_prepare(void)
{
	count_process();
	rs_runtime_before_spawn(1);
}

/* libc's posix_spawn, system and popen make their child with
 * clone(CLONE_VM|CLONE_VFORK) and run only libc's internal calls in it:
 * nothing of ours runs in the child, but it may take our sockets into the
 * program it runs. */
static void before_spawn(void)
{
	count_process();
	if (rs_enter())
		rs_runtime_before_spawn(0);
}

RS_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	before_spawn();
	return REAL(posix_spawn)(pid, path, fa, attr, argv, envp);
}

RS_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	before_spawn();
	return REAL(posix_spawnp)(pid, file, fa, attr, argv, envp);
}

RS_EXPORT int system(const char *cmd)
{
	if (cmd) /* system(NULL) only asks whether a shell exists */
		before_spawn();
	return REAL(system)(cmd);
}

RS_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	before_spawn();
	return REAL(popen)(cmd, mode);
}

static void before_exec(void)
{
	count_process();
	rs_runtime_before_exec();
}

RS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execve)(path, argv, envp);
}

RS_EXPORT int execv(const char *path, char *const argv[])
{
	before_exec();
	return REAL(execv)(path, argv);
}

RS_EXPORT int execvp(const char *file, char *const argv[])
{
	before_exec();
	return REAL(execvp)(file, argv);
}

#ifdef RS_HAVE_EXECVPE
RS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(execvpe)(file, argv, envp);
}
#endif

RS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	before_exec();
	return REAL(fexecve)(fd, argv, envp);
}

/* execl, execlp, execle: gather the variadic list into an argv array on
 * the stack (no allocation: exec may be called after vfork). */
#define GATHER_ARGS(arg0, last_named, argv_out, envp_out)                        \
	size_t argc_ = 1;                                                            \
	va_list ap_;                                                                 \
	va_start(ap_, last_named);                                                   \
	while (va_arg(ap_, char *))                                                  \
		argc_++;                                                             \
	va_end(ap_);                                                                 \
	char *argv_out[argc_ + 1];                                                   \
	argv_out[0] = (char *)(arg0);                                                \
	va_start(ap_, last_named);                                                   \
	for (size_t i_ = 1; i_ <= argc_; i_++)                                       \
		argv_out[i_] = va_arg(ap_, char *);                                  \
	envp_out = va_arg(ap_, char *const *);                                       \
	va_end(ap_)

RS_EXPORT int execl(const char *path, const char *arg, ...)
{
	char *const *envp;
	GATHER_ARGS(arg, arg, argv, envp);
	(void)envp;
	before_exec();
	return REAL(execv)(path, argv);
}

RS_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char *const *envp;
	GATHER_ARGS(arg, arg, argv, envp);
	(void)envp;
	before_exec();
	return REAL(execvp)(file, argv);
}

RS_EXPORT int execle(const char *path, const char *arg, ...)
{
	char *const *envp;
	GATHER_ARGS(arg, arg, argv, envp);
	before_exec();
	return REAL(execve)(path, argv, envp);
}

RS_EXPORT void _exit(int status)
{
	count_process();
	rs_runtime_before_exit();
	REAL(_exit)(status);
	__builtin_unreachable();
}

RS_EXPORT void _Exit(int status)
{
	count_process();
	rs_runtime_before_exit();
	REAL(_Exit)(status);
	__builtin_unreachable();
}

#if !defined(__x86_64__) && !defined(__aarch64__)
/* No assembly trampoline for this architecture: fork gives the same
 * observable result to a child that execs or exits. */
RS_EXPORT pid_t vfork(void)
{
	return fork();
}
#endif

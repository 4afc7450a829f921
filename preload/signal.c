/* signal.c - sigaction, signal, bsd_signal, sysv_signal, sigset,
 * siginterrupt.
 *
 * With the engine on, every handler the application installs runs behind
 * the library's trampoline (src/sig.c), so a blocking call waiting in the
 * ring knows whether the handler that interrupted it had SA_RESTART.  The
 * application sees its own handler and flags in every answer.  The
 * signal() family is libc's own; what it installed is wrapped just after.
 */
#include "preload.h"

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return REAL(sigaction)(sig, act, old);
}

static int wrapping(void)
{
	if (rs_unlikely(!rs_ready()))
		rs_preload_init();
	return rs_ready() && rs_engine_on;
}

RS_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (!wrapping())
		return REAL(sigaction)(sig, act, old);
	rs_count_call(0, RINGSOCK_FAM_PROCESS);
	return rs_sig_action(sig, act, old, real_sigaction);
}

/* libc's call, then its result wrapped; the previous handler it returns
 * is the application's, not the trampoline. */
static sighandler_t via_libc(sighandler_t (*fn)(int, sighandler_t), int sig, sighandler_t h)
{
	if (!wrapping())
		return fn(sig, h);
	rs_count_call(0, RINGSOCK_FAM_PROCESS);
	void *prev = rs_sig_user_handler(sig);
	sighandler_t r = fn(sig, h);
	if (r == SIG_ERR)
		return r;
	int e = errno;
	rs_sig_adopt(sig, real_sigaction);
	errno = e;
	return rs_sig_is_tramp((void *)r) ? (sighandler_t)prev : r;
}

RS_EXPORT sighandler_t signal(int sig, sighandler_t h)
{
	return via_libc(REAL(signal), sig, h);
}

RS_EXPORT sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return via_libc(REAL(bsd_signal), sig, h);
}

#ifdef __GLIBC__
RS_EXPORT sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return via_libc(REAL(sysv_signal), sig, h);
}
#endif

RS_EXPORT sighandler_t sigset(int sig, sighandler_t h)
{
	return via_libc(REAL(sigset), sig, h);
}

RS_EXPORT int siginterrupt(int sig, int flag)
{
	if (!wrapping())
		return REAL(siginterrupt)(sig, flag);
	rs_count_call(0, RINGSOCK_FAM_PROCESS);
	/* libc reads the installed action (ours) and sets it again with
	 * SA_RESTART changed: the trampoline stays, its flags follow. */
	int r = REAL(siginterrupt)(sig, flag);
	if (r == 0)
		rs_sig_adopt(sig, real_sigaction);
	return r;
}

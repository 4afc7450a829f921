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

#include <string.h>

/* This file is built without the thread sanitizer: its runtime installs
 * its own handlers through sigaction before it can run instrumented code.
 * So nothing here calls into the library before it is ready. */
RS_HIDDEN int rs_fb_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
RS_HIDDEN sighandler_t rs_fb_signal(int sig, sighandler_t h);
#ifdef __GLIBC__
RS_HIDDEN sighandler_t rs_fb_sysv_signal(int sig, sighandler_t h);
#endif
RS_HIDDEN sighandler_t rs_fb_sigset(int sig, sighandler_t h);
RS_HIDDEN int rs_fb_siginterrupt(int sig, int flag);

/* The signal calls, used only before libc's are resolved (another
 * library's constructor): the kernel's rt_sigaction, with the return
 * trampoline x86-64 requires. */
#if defined(__x86_64__)
__attribute__((naked)) static void rs_fb_restore_rt(void)
{
	__asm__ volatile("mov $15, %rax\n\tsyscall");
}
#endif

int rs_fb_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct { void *h; unsigned long flags; void *restorer; sigset_t mask; } k, ko;
	if (act) {
		memset(&k, 0, sizeof(k));
		k.h = (void *)act->sa_handler;
		k.flags = (unsigned long)act->sa_flags;
		k.mask = act->sa_mask;
#if defined(__x86_64__)
		k.flags |= 0x04000000; /* SA_RESTORER */
		k.restorer = (void *)rs_fb_restore_rt;
#endif
	}
	long r = rs_syscall(SYS_rt_sigaction, sig, act ? &k : NULL, old ? &ko : NULL, 8);
	if (r == 0 && old) {
		memset(old, 0, sizeof(*old));
		old->sa_handler = (sighandler_t)ko.h;
		old->sa_flags = (int)(ko.flags & ~0x04000000ul);
		memcpy(&old->sa_mask, &ko.mask, 8);
	}
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	return 0;
}

static sighandler_t rs_fb_sig_flags(int sig, sighandler_t h, int flags)
{
	struct sigaction a, o;
	memset(&a, 0, sizeof(a));
	a.sa_handler = h;
	a.sa_flags = flags;
	return rs_fb_sigaction(sig, &a, &o) < 0 ? SIG_ERR : o.sa_handler;
}

sighandler_t rs_fb_signal(int sig, sighandler_t h)
{
	return rs_fb_sig_flags(sig, h, SA_RESTART);
}

#ifdef __GLIBC__
sighandler_t rs_fb_sysv_signal(int sig, sighandler_t h)
{
	return rs_fb_sig_flags(sig, h, SA_RESETHAND | SA_NODEFER);
}
#endif

sighandler_t rs_fb_sigset(int sig, sighandler_t h)
{
	return rs_fb_sig_flags(sig, h, 0);
}

int rs_fb_siginterrupt(int sig, int flag)
{
	struct sigaction a;
	if (rs_fb_sigaction(sig, NULL, &a) < 0)
		return -1;
	if (flag)
		a.sa_flags &= ~SA_RESTART;
	else
		a.sa_flags |= SA_RESTART;
	return rs_fb_sigaction(sig, &a, NULL);
}


static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return REAL(sigaction)(sig, act, old);
}

/* Handlers installed before the library is ready (by another library's
 * constructor) are not wrapped; a wait treats them as unknown (sig.c). */
static int wrapping(void)
{
	return rs_ready() && rs_engine_on;
}

/* From rs_preload_init, once the library is ready: with the engine on, a
 * catcher stands in for every SIG_DFL that would end the process, so sends
 * the engine has accepted go out before it ends (src/sig.c). */
RS_HIDDEN void rs_signal_ready(void);
void rs_signal_ready(void)
{
	if (wrapping() && !rs_rt.passthrough)
		rs_sig_guard_all(real_sigaction);
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

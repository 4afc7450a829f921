/* sig.c - which signal handlers ran while the engine waited.
 *
 * A blocking recv or send that the engine serves waits in io_uring_enter.
 * When a signal handler runs, io_uring_enter returns EINTR whatever the
 * handler's flags, while the kernel restarts a blocking socket call after
 * a handler installed with SA_RESTART (and fails it with EINTR otherwise,
 * or always when the socket has a timeout).  To give the same result the
 * wait must know which kind of handler ran, so the library installs its
 * own trampoline in front of every handler the application installs
 * (sigaction, signal and the rest, preload/signal.c): the trampoline notes
 * in a thread-local word whether the handler had SA_RESTART, then calls
 * the application's handler with the same arguments.  sigaction() reports
 * the application's own handler and flags back, never the trampoline.
 *
 * Handlers installed behind the library's back (the raw rt_sigaction
 * system call) are not wrapped; a wait interrupted with nothing noted
 * asks the kernel about every handler (rs_sig_untracked_intr).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>

#include "engine_int.h"
#include "sys.h"

#define RS_NSIG 65

struct sigent {
	void *handler; /* the application's handler; NULL: none wrapped */
	int flags;     /* the application's sa_flags */
	int strip;     /* reset by SA_RESETHAND: flags the kernel keeps that we added */
};
/* (A SIG_DFL the library's catcher stands in for has no entry: the kernel
 * has the catcher, the table NULL, which sigaction reports as SIG_DFL.) */

static struct sigent tab[RS_NSIG];
static atomic_int tab_lock;
static RS_TLS volatile unsigned hits;
static int guarding; /* catchers are installed (the engine is on) */
RS_TLS int rs_lock_depth;
RS_TLS int rs_in_handler;
RS_TLS int rs_fatal_pending;
static void (*die_flush)(void); /* engine.c's, once the engine is on */

void rs_sig_on_die(void (*fn)(void))
{
	__atomic_store_n(&die_flush, fn, __ATOMIC_RELEASE);
}

static void tramp(int sig, siginfo_t *si, void *uc)
{
	if (sig <= 0 || sig >= RS_NSIG)
		return;
	void *h = __atomic_load_n(&tab[sig].handler, __ATOMIC_ACQUIRE);
	int fl = __atomic_load_n(&tab[sig].flags, __ATOMIC_RELAXED);
	hits |= (fl & SA_RESTART) ? RS_SIG_RESTART : RS_SIG_INTR;
	if (fl & SA_RESETHAND) { /* the kernel has reset it to SIG_DFL */
		__atomic_store_n(&tab[sig].strip, (fl & SA_SIGINFO) ? 0 : SA_SIGINFO, __ATOMIC_RELAXED);
		__atomic_store_n(&tab[sig].handler, NULL, __ATOMIC_RELEASE);
	}
	if (!h)
		return;
	/* (a handler that leaves by siglongjmp leaves the count raised: that
	 * thread then arms no more sockets, which is slower, never wrong) */
	rs_in_handler++;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (fl & SA_SIGINFO)
		((void (*)(int, siginfo_t *, void *))h)(sig, si, uc);
	else
		((void (*)(int))h)(sig);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	rs_in_handler--;
}

/* ---- death by a signal's default action ------------------------------------
 *
 * Sends the engine has accepted may still be queued in the process when a
 * signal whose default action ends it arrives (SIGTERM, SIGINT, abort()'s
 * SIGABRT...).  The kernel path loses nothing then: the kernel had the
 * bytes.  So while the application's disposition of such a signal is
 * SIG_DFL, the library's catcher is installed in its place (sigaction
 * still reports SIG_DFL): it writes out what is queued, as exit does,
 * then restores SIG_DFL and raises the signal again, so the process ends
 * exactly as it would have (same signal, core dump where the default
 * makes one).  A thread that holds an engine lock when the signal comes
 * acts on it when it releases the last one.  Faults the kernel raised
 * (SIGSEGV, SIGBUS... from a bad access) end the process at once: its
 * memory may be what is broken.  SIGKILL cannot be caught (ringsock(7)
 * says what can be lost then). */
static int default_fatal(int sig)
{
	switch (sig) {
	case SIGHUP: case SIGINT: case SIGQUIT: case SIGILL: case SIGTRAP: case SIGABRT:
	case SIGBUS: case SIGFPE: case SIGUSR1: case SIGSEGV: case SIGUSR2: case SIGPIPE:
	case SIGALRM: case SIGTERM: case SIGSTKFLT: case SIGXCPU: case SIGXFSZ: case SIGVTALRM:
	case SIGPROF: case SIGIO: case SIGPWR: case SIGSYS:
		return 1;
	default:
		return sig >= 35 && sig < RS_NSIG; /* real-time, past the C library's own */
	}
}

static int fault_sig(int sig)
{
	return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP ||
	       sig == SIGSYS;
}

/* The default action, now (the signal's own disposition is SIG_DFL). */
static void die_by(int sig)
{
	struct { void *h; unsigned long flags; void *restorer; uint64_t mask; } dfl = { 0 };
	rs_syscall(SYS_rt_sigaction, sig, &dfl, NULL, 8);
	uint64_t m = 1ull << (sig - 1);
	rs_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &m, NULL, 8);
	rs_syscall(SYS_tgkill, rs_sys_getpid(), rs_syscall(SYS_gettid, 0), sig);
	/* delivered on the way back from the handler (or, for a fault, when
	 * the instruction runs again) */
}

static void fatal(int sig)
{
	void (*flush)(void) = __atomic_load_n(&die_flush, __ATOMIC_ACQUIRE);
	if (!rs_in_vfork_child() && flush)
		flush();
	die_by(sig);
}

static void catcher(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	int e = errno;
	if (sig <= 0 || sig >= RS_NSIG) {
		errno = e;
		return;
	}
	if (fault_sig(sig) && si && si->si_code > 0) {
		die_by(sig); /* a real fault: no flush */
	} else if (rs_lock_depth > 0) {
		rs_fatal_pending = sig; /* at the last engine unlock */
	} else {
		fatal(sig);
	}
	errno = e;
}

void rs_sig_fatal_deferred(void)
{
	int sig = rs_fatal_pending;
	rs_fatal_pending = 0;
	if (sig)
		fatal(sig);
}

int rs_sig_is_tramp(const void *h)
{
	return h == (const void *)tramp || h == (const void *)catcher;
}

void *rs_sig_user_handler(int sig)
{
	if (sig <= 0 || sig >= RS_NSIG)
		return NULL;
	return __atomic_load_n(&tab[sig].handler, __ATOMIC_ACQUIRE);
}

void rs_sig_clear(void)
{
	hits = 0;
}

unsigned rs_sig_take(void)
{
	unsigned h = hits;
	hits = 0;
	return h;
}

static int is_handler(const struct sigaction *a)
{
	return a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN;
}

/* Updates happen with every signal blocked (a handler may itself call
 * sigaction) and under a spin lock (other threads). */
static void tab_enter(sigset_t *saved)
{
	sigset_t all;
	sigfillset(&all);
	rs_syscall(SYS_rt_sigprocmask, SIG_BLOCK, &all, saved, 8);
	int z = 0;
	while (!atomic_compare_exchange_weak(&tab_lock, &z, 1))
		z = 0;
}

static void tab_leave(const sigset_t *saved)
{
	atomic_store(&tab_lock, 0);
	rs_syscall(SYS_rt_sigprocmask, SIG_SETMASK, saved, NULL, 8);
}

static void tab_set(int sig, void *h, int flags)
{
	__atomic_store_n(&tab[sig].strip, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&tab[sig].flags, flags, __ATOMIC_RELAXED);
	__atomic_store_n(&tab[sig].handler, h, __ATOMIC_RELEASE);
}

/* SIG_DFL asked for sig (tab lock held): the catcher in its place when
 * the default ends the process.  0 or -1 (errno) like sigaction. */
static int set_default(int sig, const struct sigaction *act, struct sigaction *kold, rs_sigaction_fn real)
{
	if (!guarding || !default_fatal(sig)) {
		int rc = real(sig, act, kold);
		if (rc == 0)
			tab_set(sig, NULL, 0);
		return rc;
	}
	struct sigaction k;
	memset(&k, 0, sizeof(k));
	if (act)
		k.sa_mask = act->sa_mask;
	k.sa_sigaction = catcher;
	k.sa_flags = SA_SIGINFO | SA_RESTART;
	int rc = real(sig, &k, kold);
	if (rc == 0)
		tab_set(sig, NULL, act ? act->sa_flags & ~SA_SIGINFO : 0);
	return rc;
}

void rs_sig_guard_all(rs_sigaction_fn real)
{
	sigset_t saved;
	tab_enter(&saved);
	guarding = 1;
	for (int sig = 1; sig < RS_NSIG; sig++) {
		struct sigaction cur;
		if (!default_fatal(sig) || tab[sig].handler || real(sig, NULL, &cur) != 0 ||
		    cur.sa_handler != SIG_DFL)
			continue;
		set_default(sig, &cur, NULL, real);
	}
	tab_leave(&saved);
}

int rs_sig_action(int sig, const struct sigaction *act, struct sigaction *old, rs_sigaction_fn real)
{
	if (sig <= 0 || sig >= RS_NSIG || sig == SIGKILL || sig == SIGSTOP)
		return real(sig, act, old);
	sigset_t saved;
	struct sigaction k, kold;
	tab_enter(&saved);
	struct sigent prev = tab[sig];
	int rc;
	if (act && is_handler(act)) {
		k = *act;
		k.sa_sigaction = tramp;
		k.sa_flags |= SA_SIGINFO;
		tab_set(sig, (void *)act->sa_sigaction, act->sa_flags);
		rc = real(sig, &k, &kold);
		if (rc != 0) {
			tab_set(sig, prev.handler, prev.flags);
			__atomic_store_n(&tab[sig].strip, prev.strip, __ATOMIC_RELAXED);
		}
	} else if (act && act->sa_handler == SIG_DFL) {
		rc = set_default(sig, act, &kold, real);
	} else {
		rc = real(sig, act, &kold);
		if (rc == 0 && act)
			tab_set(sig, NULL, 0);
	}
	int e = errno;
	tab_leave(&saved);
	if (rc == 0 && old) {
		*old = kold;
		if (kold.sa_sigaction == catcher) {
			/* what the application asked for: SIG_DFL */
			old->sa_handler = SIG_DFL;
			old->sa_flags = prev.flags;
		} else if (rs_sig_is_tramp((void *)kold.sa_sigaction) && prev.handler) {
			old->sa_sigaction = (void (*)(int, siginfo_t *, void *))prev.handler;
			old->sa_flags = (kold.sa_flags & ~SA_SIGINFO) | (prev.flags & SA_SIGINFO);
		} else if (kold.sa_handler == SIG_DFL) {
			old->sa_flags &= ~prev.strip;
		}
	}
	errno = e;
	return rc;
}

void rs_sig_adopt(int sig, rs_sigaction_fn real)
{
	if (sig <= 0 || sig >= RS_NSIG || sig == SIGKILL || sig == SIGSTOP)
		return;
	int e = errno;
	sigset_t saved;
	struct sigaction cur;
	tab_enter(&saved);
	if (real(sig, NULL, &cur) == 0) {
		if (cur.sa_sigaction == catcher) {
			/* still SIG_DFL for the application */
		} else if (cur.sa_handler == SIG_DFL) {
			set_default(sig, &cur, NULL, real);
		} else if (rs_sig_is_tramp((void *)cur.sa_sigaction)) {
			/* ours already; its flags may have changed (siginterrupt) */
			int fl = (cur.sa_flags & ~SA_SIGINFO) | (tab[sig].flags & SA_SIGINFO);
			tab_set(sig, tab[sig].handler, fl);
		} else if (is_handler(&cur)) {
			tab_set(sig, (void *)cur.sa_sigaction, cur.sa_flags);
			struct sigaction k = cur;
			k.sa_sigaction = tramp;
			k.sa_flags |= SA_SIGINFO;
			if (real(sig, &k, NULL) != 0)
				tab_set(sig, NULL, 0);
		} else {
			tab_set(sig, NULL, 0);
		}
	}
	tab_leave(&saved);
	errno = e;
}

/* The kernel's struct sigaction (rt_sigaction). */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/* Is a handler installed that is not wrapped (without SA_RESTART only,
 * when norestart)? */
static int untracked(int norestart)
{
	for (int sig = 1; sig < RS_NSIG; sig++) {
		if (sig == SIGKILL || sig == SIGSTOP || (sig >= 32 && sig <= 34))
			continue; /* 32-34: the C library's own (thread cancel, setxid) */
		if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL || sig == SIGTRAP ||
		    sig == SIGSYS || sig == SIGABRT)
			continue; /* faults: raised by the thread itself, never while it sleeps
				   * (runtimes and sanitizers install these early) */
		struct ksigaction ka;
		if (rs_syscall(SYS_rt_sigaction, sig, NULL, &ka, 8) != 0)
			continue;
		if (ka.handler == (void *)SIG_DFL || ka.handler == (void *)SIG_IGN || rs_sig_is_tramp(ka.handler))
			continue;
		if (!norestart || !(ka.flags & SA_RESTART))
			return 1;
	}
	return 0;
}

int rs_sig_untracked_intr(void)
{
	return untracked(1);
}

int rs_sig_untracked_any(void)
{
	return untracked(0);
}

int rs_sig_interrupted(unsigned h, int enter_eintr, int timed)
{
	if (!h && !enter_eintr)
		return 0;
	if (timed)
		return 1; /* a socket with a timeout: EINTR after any handler or a stop */
	if (h & RS_SIG_INTR)
		return 1;
	if (h & RS_SIG_RESTART)
		return 0;
	/* woken by a signal no wrapped handler saw: a stop and continue, a
	 * tracer, or a handler installed behind our back */
	return rs_sig_untracked_intr();
}

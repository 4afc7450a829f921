/* api.h - the calls preload/ makes into the engine, and nothing else: one
 * heading per file that answers them, in the layer order of src/README.md.
 * preload/ includes this header (through preload.h) with internal.h and
 * sys.h, never engine_int.h; the engine's own files get it through
 * engine_int.h, so each of these calls is declared once, here.
 *
 * preload/ reads no field of the engine's structs.  It needs types.h for
 * the arguments (struct rs_send, struct rs_dgram_from) and for the bodies
 * of the few hints below that sit on every trampoline's path (has this
 * thread queued sends? is this socket served here?): those stay inline,
 * so a trampoline pays no call for them.  Anything else preload/ needs to
 * know of a ring or a socket is a call added here.
 */
#ifndef RS_API_H
#define RS_API_H

#include "types.h" /* first: its liburing.h must precede every libc header
		   * (it defines _GNU_SOURCE, for musl's cpu_set_t) */
#include "engine.h" /* the lifecycle: rs_engine_on, rs_engine_before_close */
#include "internal.h"
#include "locks.h"

/* ---- engine.c: the lifecycle: engine.h ---------------------------------- */

/* ---- epctl.c, ep.c: epoll_ctl, epoll_wait -------------------------------------
 * -errno, a count, or RS_PASS (the kernel's call: not a set or a socket
 * the engine knows). */
int rs_ep_ctl(int epfd, int op, int fd, struct epoll_event *ev);
int rs_ep_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms, const struct timespec *tmo,
	       const sigset_t *ss);

/* ---- wait.c: poll, ppoll (select and pselect converted to them) -----------
 * *handled 0: no engine socket among fds, the caller makes the kernel's
 * call; else the count ready or -errno.  recs: each entry's record
 * (rs_fd_peek) as the caller found them, or NULL.  The timeout is tmo's
 * when not NULL (read only once an engine socket is among fds: a bad
 * pointer stays the kernel's EFAULT), else timeout_ms's (negative:
 * none); to the nanosecond (sys.h rs_timeout_ns), EINVAL as the kernel
 * says it.  left_ns (select's write-back; -1 unless handled with a
 * timeout): the time left of a call that slept, or RS_LEFT_UNSLEPT for
 * one the engine answered at once (in a few hundred ns): the kernel's
 * select, its end fixed at its start, writes back for a call shorter
 * than a microsecond the timeout less one microsecond, which is what
 * select makes of it, with no clock read (two would cost a third of a
 * select the engine answers). */
#define RS_LEFT_UNSLEPT (-3)
struct pollfd;
int rs_wait_poll(struct pollfd *fds, unsigned long n, struct rs_sock **recs, int timeout_ms,
		 const struct timespec *tmo, const sigset_t *ss, int *handled, int64_t *left_ns);

/* ---- kwatch.c: the kernel fds of poll/select sets ------------------------ */
/* fd (or a range) is closed or replaced: registrations by number are void. */
void rs_kw_fd_gone(int fd);
void rs_kw_range_gone(unsigned first, unsigned last);

/* ---- block.c --------------------------------------------------------------- */
size_t rs_iov_total(const struct iovec *iov, int n); /* bytes in iov[0..n) */

/* ---- sock.c: the socket core ------------------------------------------------ */
/* Before a call that goes to the kernel on an engine socket (setsockopt,
 * ioctl, getsockopt, fcntl, shutdown, sendmsg with ancillary data...):
 * accepted bytes reach the kernel first; detach when the call changes
 * something the engine emulates (reason >= 0). */
void rs_sock_before_kernel(struct rs_sock *s, int fd, int detach_reason);
/* The program asks about urgent data (MSG_OOB, SO_OOBINLINE, SIOCATMARK,
 * POLLPRI, EPOLLPRI, exceptfds): a receive of ours would read past the
 * urgent mark, which only the kernel keeps, so the socket leaves the
 * engine (passthrough urgent); what it holds is read first. */
void rs_sock_urgent(struct rs_sock *s, int fd);
/* Connections the process has with itself: listen() and connect() tell.
 * rs_sock_to_self: does a connect to this address reach one of the
 * process's own listeners (by port)?  Then rs_sock_connected_self(fd)
 * after it; rs_self_connect is set from then on, and rs_sock_self_peer
 * says whether a socket's local or peer port is such a connection's (two
 * system calls: ask once per socket). */
void rs_sock_listening(struct rs_sock *s, int fd);
int rs_sock_to_self(struct rs_sock *s, const struct sockaddr *to, socklen_t len);
void rs_sock_connected_self(int fd);

/* Whole calls for the preload layer: -errno, bytes, or RS_PASS when the
 * caller must make the ordinary call itself. */
#define RS_PASS (-100000L)

/* The program's calls on an engine socket, through its kind's table:
 * preload/ never asks which kind a socket is.  The kernel's call next
 * (RS_PASS) has this thread's queued sends go first. */
ssize_t rs_sock_recv(struct rs_sock *s, int fd, const struct iovec *iov, int n, int flags,
		     struct rs_dgram_from *f);
ssize_t rs_sock_send(struct rs_sock *s, int fd, const struct rs_send *m);
int rs_sock_recvmmsg(struct rs_sock *s, int fd, struct mmsghdr *vec, unsigned vlen, int flags,
		     struct timespec *tmo);
/* After the kernel's send on an engine socket (errno as err). */
void rs_sock_after_send(struct rs_sock *s, int fd, ssize_t r, int err, const void *name, socklen_t namelen);
void rs_sock_before_connect(struct rs_sock *s, int fd);
/* FIONREAD: 0 (*out set), -errno, or RS_PASS. */
int rs_sock_fionread(struct rs_sock *s, int fd, int *out);
/* Received bytes the engine holds (0 when passive or not armed). */
size_t rs_sock_held(struct rs_sock *s, int fd);
/* SO_ERROR: the error a call kept, else the one the engine saw first
 * (taken); 0: ask the kernel. */
int rs_sock_so_error(struct rs_sock *s, int fd);
/* shutdown: 0, -errno, or RS_PASS. */
int rs_sock_shutdown(struct rs_sock *s, int fd, int how);
/* SO_RCVLOWAT for the kernel, given the program's mark. */
int rs_sock_kernel_lowat(struct rs_sock *s, int lowat);
void rs_sock_lowat_set(struct rs_sock *s, int fd); /* SO_RCVLOWAT was set */
void rs_sock_sndbuf_set(struct rs_sock *s, int fd); /* SO_SNDBUF was set */
/* The program set up an io_uring of its own (a raw io_uring_setup), so
 * it can reach its sockets in a way the engine cannot see: every armed
 * socket leaves the engine, and none is armed from now on; reason is a
 * RINGSOCK_PT_* value.  No ring lock held. */
void rs_esock_refuse_all(int reason);
/* Hints on a socket, read without its lock (inline: bodies at the end):
 * has s been armed (the engine may hold something of it)?  Is the engine
 * still part of its path (armed, not passive)?  Is it served by this
 * thread's ring (armed here), rather than by the kernel or another
 * thread's ring? */
static inline int rs_sock_armed(struct rs_sock *s);
static inline int rs_sock_on_engine(struct rs_sock *s);
/* Has the engine let go of s for good (armed once, passive now: the
 * kernel serves it alone, and its calls are the kernel's)? */
static inline int rs_sock_kernel_alone(struct rs_sock *s);
static inline int rs_sock_served_here(struct rs_sock *s);
/* Are s's reads and sends the kernel's with nothing of ours before them:
 * the kernel serves s alone, and no error a call kept waits to be
 * reported (the data calls' wrappers make the kernel's call at once)? */
static inline int rs_sock_kernel_calls(struct rs_sock *s);

/* ---- epreg.c: epoll registrations -------------------------------------------- */
int rs_ep_known(int epfd); /* has engine state */
void rs_ep_close(int epfd);

/* ---- ring.c: the thread's ring -------------------------------------------------- */
extern RS_TLS struct rs_ring *rs_ring_tls; /* this thread's ring, NULL: none yet */
/* This thread's queued sends go out now (before a call that may block). */
void rs_ring_flush_tx(void);
/* Has this thread queued sends its ring has not submitted? [hint] */
static inline int rs_ring_tx_queued(void);
/* The kernel answers next: what this thread queued goes first. */
static inline void rs_ring_flush_own_tx(void);

/* ---- sig.c: wrapped signal handlers ------------------------------------------- */
typedef int (*rs_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
/* sigaction through real, the handler wrapped in the library's trampoline;
 * old reports the application's handler. */
int rs_sig_action(int sig, const struct sigaction *act, struct sigaction *old, rs_sigaction_fn real);
/* After signal(), sigset(), siginterrupt()...: wrap what is installed now. */
void rs_sig_adopt(int sig, rs_sigaction_fn real);
int rs_sig_is_tramp(const void *h); /* the trampoline or the fatal catcher */
/* The engine is on: a catcher stands in for every SIG_DFL whose default
 * ends the process, so queued sends go out first (see sig.c). */
void rs_sig_guard_all(rs_sigaction_fn real);
void *rs_sig_user_handler(int sig); /* the application's handler for sig */

/* ---- inline bodies ------------------------------------------------------------ */
/* (sock.c) Hints for readiness code too, read without the lock (what it
 * acts on it checks again under the lock): served by ring r (NULL: by any
 * ring); detached and drained, the kernel's alone. */
static inline int rs_esock_armed_on(struct rs_esock *e, struct rs_ring *r)
{
	return RS_LOAD(e->mode) == RS_ES_ARMED && (!r || RS_LOAD(e->owner) == r);
}
static inline int rs_esock_passive(struct rs_esock *e)
{
	return __atomic_load_n(&e->passive, __ATOMIC_ACQUIRE);
}
static inline int rs_sock_armed(struct rs_sock *s)
{
	return atomic_load_explicit(&s->eng, memory_order_relaxed) != NULL;
}
static inline int rs_sock_on_engine(struct rs_sock *s)
{
	struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
	return e && !rs_esock_passive(e);
}
static inline int rs_sock_kernel_alone(struct rs_sock *s)
{
	struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
	return e && rs_esock_passive(e);
}
static inline int rs_sock_kernel_calls(struct rs_sock *s)
{
	return rs_sock_kernel_alone(s) && !__atomic_load_n(&s->err_kept, __ATOMIC_RELAXED);
}
static inline int rs_sock_served_here(struct rs_sock *s)
{
	struct rs_esock *e = atomic_load_explicit(&s->eng, memory_order_acquire);
	return e && rs_ring_tls && rs_esock_armed_on(e, rs_ring_tls);
}
/* (ring.c) */
static inline int rs_ring_tx_queued(void)
{
	struct rs_ring *r = rs_ring_tls;
	return r && RS_LOAD(r->txq) != NULL;
}
static inline void rs_ring_flush_own_tx(void)
{
	if (rs_ring_tx_queued())
		rs_ring_flush_tx();
}

#endif

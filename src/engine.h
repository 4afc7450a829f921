/* engine.h - the engine's lifecycle: start, the flushes of queued sends
 * at exit, exec and spawn, close (engine.c), and whether the engine is on
 * (proc.c).  runtime.c starts the engine and calls the flushes from the
 * process hooks; preload/ calls rs_engine_before_close.  The rest of the
 * lifecycle is the hooks engine.c installs at start and keeps to itself:
 * the fork handlers (pthread_atfork: every lock held across fork, the
 * child's sockets detached), thread exit (a thread's sockets leave its
 * ring, which is torn down), the drain thread's watchdog (sends of a
 * blocked owner written out) and the flush before a fatal signal's
 * default action (sig.c).
 *
 * The engine's calls, one heading per file: engine_int.h.  Its types, the
 * lock order and a socket's states: types.h.
 */
#ifndef RS_ENGINE_H
#define RS_ENGINE_H

#include "internal.h"

/* Defined in proc.c (below every layer: reading them makes no file
 * depend on engine.c). */
extern int rs_engine_on;     /* the engine may arm sockets: set once by
			      * rs_engine_init */
extern int rs_engine_refuse; /* 0, or why no socket is armed any more
			      * (RINGSOCK_PT_*): set once by rs_esock_refuse_all
			      * [atomic, acquire] */

/* ---- engine.c ------------------------------------------------------------- */
void rs_engine_init(void);      /* from rs_runtime_init: the kinds, the hooks */
void rs_engine_flush_all(void); /* exec and exit: queued sends reach the kernel */
void rs_engine_before_spawn(void); /* vfork, posix_spawn: the same, and no read-ahead */
/* close() (and dup2 over, close_range) of fd, before the real call. */
void rs_engine_before_close(struct rs_sock *s, int fd);

#endif

/* A hang-up seen by another thread while the socket is in hand-over, the
 * engine holding nothing.  Thread A serves a socket on its engine; the
 * peer and A shut down their sides: the socket is hung up.  A registers
 * it (EPOLLET alone: only ERR and HUP can come) in a set, so the
 * registration is the engine's.  The main thread waits on the set: the
 * kernel reports HUP at once.  Meanwhile A, a little later, runs its
 * engine's ring (a wait on another set), with nothing to print, then
 * blocks where the library cannot see (a read of a pipe); its own wait on
 * the set afterwards has nothing.  (Found by a review: the waiter's first
 * look starts the hand-over, which A's ring finishes; a look at a
 * detached socket holding nothing answered 0 without asking the kernel,
 * and the hand-over made no edge and no EPOLL_CTL_MOD: the HUP was lost.)
 * ENGINE_MIN_ACCELERATED=1 */
#define NOTHING_HELD 1
#include "engine_et_handover_held.c"

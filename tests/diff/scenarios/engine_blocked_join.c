/* Bytes the engine queued reach a peer that waits for them while the
 * sending thread blocks where the library cannot see.  The main thread
 * sends on an engine socket, then waits in pthread_join (a futex: no call
 * the library makes its own) for a thread that waits, in a blocking recv
 * of the kernel's (MSG_WAITALL), for those very bytes.  They go in three
 * sends: until the drain thread runs, the first two sends of a round that
 * the engine would queue are the kernel's (engine_int.h rs_ring_may_queue),
 * and the third starts the thread and is queued.  The drain thread's watchdog
 * sends a blocked thread's queue; under RLIMIT_NOFILE 64 the drain thread
 * once did not start at all (no file slots for its jobs), and the join
 * waited for ever.  tests/integration/stress.sh runs this also with the
 * drain thread refused (faults.c no_drain): then nothing may be queued.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <pthread.h>
#include <sys/resource.h>

static int keep;
static char got[32];
static long got_n;
static int got_errno;

/* (prints nothing: main prints what it got after the join, in order) */
static void *peer(void *arg)
{
	(void)arg;
	got_n = recv(keep, got, 21, MSG_WAITALL);
	got_errno = errno;
	return NULL;
}

int main(void)
{
	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = 64; /* (the drain thread has no file slots for jobs) */
	R("RLIMIT_NOFILE 64", setrlimit(RLIMIT_NOFILE, &rl));
	int s;
	keep = engine_with_kernel_peer(&s);
	pthread_t th;
	if (pthread_create(&th, NULL, peer, NULL))
		die("pthread_create");
	R("send", send(s, "for the", 7, 0));
	R("send", send(s, " joined", 7, 0));
	R("send", send(s, " thread", 7, 0));
	R("pthread_join", pthread_join(th, NULL));
	errno = got_errno;
	show("the joined thread's blocking recv", got, R("recv", got_n));
	close(keep);
	close(s);
	return 0;
}

/* engine_blocked_join's UDP twin: a datagram the engine queued reaches a
 * receiver that waits for it while the sending thread waits in
 * pthread_join for that receiver's thread (a futex: no call the library
 * makes its own).  The drain thread's watchdog sends a blocked thread's
 * queue; tests/integration/stress.sh also runs this with the drain thread
 * refused (faults.c no_drain), when no datagram may be queued at all.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <pthread.h>

static int b;
static char got[32];
static long got_n;
static int got_errno;

/* (prints nothing: main prints what it got after the join, in order) */
static void *receiver(void *arg)
{
	(void)arg;
	got_n = recvfrom(b, got, sizeof(got), 0, NULL, NULL);
	got_errno = errno;
	return NULL;
}

int main(void)
{
	int a = udp_bound(), b0 = udp_bound();
	struct sockaddr_in to;
	socklen_t tl = sizeof(to);
	if (getsockname(b0, (struct sockaddr *)&to, &tl))
		die("getsockname");
	/* the receiver's reads are the kernel's (a second descriptor), blocking */
	b = dup(b0);
	close(b0);
	set_nonblock(a);
	char buf[32];
	R("sender's recv (nothing yet)", recv(a, buf, sizeof(buf), 0)); /* (arms it) */
	/* sends of this size, two in a row, make the destination queueable;
	 * the next two are the kernel's too (no drain thread runs yet, and the
	 * receiver's reads end no round: engine_int.h rs_ring_may_queue), so
	 * the one for the joined thread is the round's third, and queued */
	for (int i = 0; i < 4; i++) {
		R("sendto", sendto(a, "a datagram......", 16, 0, (struct sockaddr *)&to, sizeof(to)));
		show("receiver reads", buf, R("recv", recv(b, buf, sizeof(buf), 0)));
	}
	pthread_t th;
	if (pthread_create(&th, NULL, receiver, NULL))
		die("pthread_create");
	R("sendto", sendto(a, "for the joined..", 16, 0, (struct sockaddr *)&to, sizeof(to)));
	R("pthread_join", pthread_join(th, NULL));
	errno = got_errno;
	show("the joined thread's blocking recvfrom", got, R("recvfrom", got_n));
	close(b);
	close(a);
	return 0;
}

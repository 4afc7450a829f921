/* engine_slot_close: connections that live long enough for the engine to
 * name them by a slot of their ring's registered file table (ringfile.c:
 * after 16 sends through the ring), then end every way a program can end
 * them.  The slot holds the socket's file, as a descriptor would: if it
 * outlived the socket's stay on the ring, the peer would never see the
 * end of stream (its wait times out here).  The ways: close on the
 * owner's thread; close by another thread while the owner idles in a
 * condition variable (the owner clears the slot when it next runs); a
 * dup (the socket goes to the kernel) and then both closed; a fork whose
 * child closes its copy before the parent closes its own; the owner
 * thread exiting, and the main thread closing after it; and every next
 * connection takes the number the last one had (its slot must be free
 * again, or at least not the old socket's).  Each time the peer must
 * read every byte, in order, then the end.
 * The run with RINGSOCK_FEATURES_DISABLE=fixed_files names them by their
 * descriptors throughout.
 * RUN_ALSO=RINGSOCK_FEATURES_DISABLE=fixed_files
 * ENGINE_MIN_ACCELERATED=6 */
#include "../scn.h"
#include <pthread.h>

#define SENDS 40

static int c, s;

/* SENDS messages from s, each read by the peer before the next: every one
 * a send of its own through s's ring (the peer's wait submits it). */
static void stream(const char *name)
{
	uint32_t sum = 0;
	long got = 0;
	for (int i = 0; i < SENDS; i++) {
		char m[32], b[64];
		int n = snprintf(m, sizeof(m), "%s message %d;", name, i);
		if (send_all_nb(s, m, (size_t)n) != n)
			say("%s: send %d failed: %s", name, i, scn_errname(errno));
		long r = recv_all_nb(c, b, (size_t)n);
		if (r > 0) {
			sum = sum * 31 + scn_sum(b, (size_t)r);
			got += r;
		}
	}
	say("%s: peer read %ld bytes, sum %08x", name, got, sum);
}

/* The peer waits for the end of stream (a timeout: the socket lives on). */
static void peer_end(const char *name)
{
	char b[64];
	int ev = wait_fd(c, POLLIN, 10000);
	long n = ev ? recv(c, b, sizeof(b), 0) : -2;
	say("%s: peer readable: %d, recv = %ld %s", name, ev != 0, n, n == -1 ? scn_errname(errno) : "");
	close(c);
}

static void start(const char *name)
{
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	say("%s", name);
}

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage;

/* The owner: makes the connection, arms s on its ring and streams, then
 * idles outside the library until told (stage 2), then makes one call
 * the library serves. */
static void *owner(void *arg)
{
	start((const char *)arg);
	stream((const char *)arg);
	pthread_mutex_lock(&mu);
	stage = 1;
	pthread_cond_broadcast(&cv);
	while (stage != 2)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	int ep = epoll_create1(0);
	struct epoll_event ev;
	R("owner: epoll_wait on an empty set", epoll_wait(ep, &ev, 1, 0));
	close(ep);
	return NULL;
}

static void *owner_exits(void *arg)
{
	start((const char *)arg);
	stream((const char *)arg);
	return NULL;
}

int main(void)
{
	alarm(120);
	for (int round = 0; round < 2; round++) {
		start("owner closes");
		stream("owner closes");
		R("close", close(s));
		peer_end("owner closes");
	}

	stage = 0;
	pthread_t th;
	pthread_create(&th, NULL, owner, "another thread closes");
	pthread_mutex_lock(&mu);
	while (stage != 1)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	R("close by another thread", close(s));
	int keep_c = c;
	c = dup(keep_c); /* (peer_end closes c) */
	peer_end("another thread closes");
	pthread_mutex_lock(&mu);
	stage = 2;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	char b[16];
	R("peer recv after the owner ran", recv(keep_c, b, sizeof(b), 0));
	close(keep_c);

	start("dup");
	stream("dup");
	int s2 = RFD("dup", dup(s));
	R("send through the copy", send_all_nb(s2, "after the dup;", 14));
	char t[16];
	R("peer reads it", recv_all_nb(c, t, 14));
	show("peer", t, 14);
	R("close the original", close(s));
	R("close the copy", close(s2));
	peer_end("dup");

	start("fork");
	stream("fork");
	pid_t p = fork();
	if (p == 0) {
		close(s);
		close(c);
		_exit(0);
	}
	reap("child closed its copy", p);
	R("send after the fork", send_all_nb(s, "after the fork;", 15));
	R("peer reads it", recv_all_nb(c, t, 15));
	show("peer", t, 15);
	R("close", close(s));
	peer_end("fork");

	pthread_create(&th, NULL, owner_exits, "owner exits");
	pthread_join(th, NULL);
	R("send from main", send_all_nb(s, "from main;", 10));
	R("peer reads it", recv_all_nb(c, t, 10));
	show("peer", t, 10);
	R("close", close(s));
	peer_end("owner exits");

	start("last");
	stream("last");
	R("close", close(s));
	peer_end("last");
	return 0;
}

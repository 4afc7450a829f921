/* A socket armed by one thread (it read enough to be served by its ring)
 * is closed by another thread while the first one idles outside the
 * library, in a condition variable, as a thread pool's worker does (found
 * by GLib's socket-client tests under glib-networking).  The kernel's
 * close ends the connection at once: the peer sees the end of stream, or
 * a reset when input was never read.  The engine's receive keeps the
 * file open until its thread runs again; the connection must end anyway.
 * Also with SO_LINGER set to zero by the program (a reset), and with a
 * send the closing thread made just before (its bytes, then the end).
 * ENGINE_MIN_ACCELERATED=3 */
#include "../scn.h"
#include <pthread.h>

static int c, s;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int stage; /* 1: the reader is done, 2: it may return */
static int leave_unread;

static void *reader(void *arg)
{
	(void)arg;
	arm_by_reading(c, s);
	if (leave_unread) { /* the peer's bytes reach s; nobody reads them */
		send(c, "never read", 10, 0);
		wait_fd(s, POLLIN, 5000);
	}
	pthread_mutex_lock(&mu);
	stage = 1;
	pthread_cond_broadcast(&cv);
	while (stage != 2) /* idle outside the library */
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void run(const char *name, int unread, int linger0, const char *last)
{
	nb_pair(&c, &s);
	leave_unread = unread;
	stage = 0;
	if (linger0) {
		struct linger lg = { 1, 0 };
		R("SO_LINGER 0", setsockopt(s, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)));
	}
	pthread_t th;
	pthread_create(&th, NULL, reader, NULL);
	pthread_mutex_lock(&mu);
	while (stage != 1)
		pthread_cond_wait(&cv, &mu);
	pthread_mutex_unlock(&mu);
	if (last)
		R("last send", send(s, last, strlen(last), 0));
	R("close by another thread", close(s));
	say("%s: peer readable: %d", name, wait_fd(c, POLLIN, 5000));
	char b[64];
	long n = recv(c, b, sizeof(b), 0);
	if (n > 0) {
		show("peer read", b, n);
		n = recv(c, b, sizeof(b), 0);
	}
	say("%s: peer recv = %ld %s", name, n, n < 0 ? scn_errname(errno) : "");
	pthread_mutex_lock(&mu);
	stage = 2;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	pthread_join(th, NULL);
	close(c);
}

int main(void)
{
	run("all read", 0, 0, NULL);
	run("input unread", 1, 0, NULL);
	run("SO_LINGER 0", 0, 1, NULL);
	run("a send, then close", 0, 0, "goodbye");
	return 0;
}

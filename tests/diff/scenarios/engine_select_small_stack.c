/* select on a thread with a small stack (PTHREAD_STACK_MIN plus a little):
 * a program may make such threads, and the kernel's select needs almost
 * none of it.  The library's select must fit too: it used to put 16 KiB
 * of arrays (1024 pollfds and records) on the stack at every call, and
 * such a thread died of SIGSEGV under the library.  The thread arms a
 * connection by reading, then waits with select for each of 200 small
 * messages, on the engine socket alone and beside the listener.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <limits.h>
#include <pthread.h>
#include <sys/select.h>

static int sel(int a, int b)
{
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(a, &rs);
	if (b >= 0)
		FD_SET(b, &rs);
	struct timeval tv = { 10, 0 };
	int r = select((a > b ? a : b) + 1, &rs, NULL, NULL, &tv);
	return r == 1 && FD_ISSET(a, &rs) ? 1 : r;
}

static void *worker(void *arg)
{
	(void)arg;
	int c, s;
	nb_pair(&c, &s);
	arm_by_reading(c, s);
	static int l = -1;
	struct sockaddr_storage a;
	socklen_t al = sizeof(a);
	l = tcp_listener(AF_INET, &a, &al);
	long ready = 0, got = 0;
	for (int i = 0; i < 200; i++) {
		if (send(c, "m", 1, 0) != 1)
			break;
		ready += sel(s, i % 2 ? l : -1) == 1;
		char b;
		got += recv(s, &b, 1, 0) == 1;
	}
	say("select ready %ld of 200, received %ld", ready, got);
	close(l);
	close(c);
	close(s);
	return NULL;
}

int main(void)
{
	pthread_attr_t at;
	pthread_attr_init(&at);
	R("setstacksize", pthread_attr_setstacksize(&at, PTHREAD_STACK_MIN + 8192));
	pthread_t t;
	if (pthread_create(&t, &at, worker, NULL) != 0)
		die("pthread_create");
	R("join", pthread_join(t, NULL));
	return 0;
}

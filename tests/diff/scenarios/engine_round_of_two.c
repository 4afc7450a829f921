/* A program whose small sends come as one round of two before it waits
 * (a length, then its message: iperf3 writes its parameters so on its
 * control socket, then streams bulk data) keeps its single thread under
 * the library: until the drain thread runs, a send the engine would queue
 * is the kernel's unless it is the third of its round or the second of
 * the second round with two (engine_int.h rs_ring_may_queue).  A second
 * thread would make every later system call of the process take a
 * reference to its file (the kernel's fdget), which the kernel path
 * does not; before session 42 this round started it.  Prints the
 * threads in /proc/self/task, which the kernel path says is 1.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <dirent.h>

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		die("opendir /proc/self/task");
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

int main(void)
{
	int s;
	int keep = engine_with_kernel_peer(&s);
	char b[64];
	R("send (the length)", send(s, "\0\0\0\x10", 4, 0));
	R("send (the message)", send(s, "sixteen bytes...", 16, 0));
	struct pollfd p = { s, POLLIN, 0 };
	R("poll (nothing to read: the round ends)", poll(&p, 1, 0));
	show("peer reads", b, R("recv", recv(keep, b, 20, MSG_WAITALL)));
	say("threads: %d", threads());
	for (int i = 0; i < 3; i++) {
		R("send (one a round)", send(s, "ping", 4, 0));
		show("peer reads", b, R("recv", recv(keep, b, 4, MSG_WAITALL)));
		R("poll (the round ends)", poll(&p, 1, 0));
	}
	say("threads: %d", threads());
	close(keep);
	close(s);
	return 0;
}

/* engine_fdopen: a socket the engine serves, given to stdio with fdopen
 * (inetd-style programs, old servers: fgets and fprintf on a socket).
 * stdio reads and writes with the C library's internal calls, which the
 * library does not see, and closes with its internal close (fclose):
 *   - bytes the program sent before the fdopen (queued by the engine)
 *     reach the peer before stdio's;
 *   - stdio's reads get every byte the peer sends after the fdopen (the
 *     engine reads nothing ahead from then on);
 *   - fclose ends the connection (the peer reads 0), and a socket made
 *     next gets the same descriptor number and is served as a new one.
 * Also pclose and closedir, whose closes are internal too.
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <dirent.h>

static void peer_reads(int c, const char *label, size_t n)
{
	char got[256];
	if (n >= sizeof(got) || read_full(c, got, n))
		die("peer read");
	show(label, got, (long)n);
}

int main(void)
{
	int c, s; /* (the peer c blocks: it waits for what stdio sends) */
	tcp_pair(&c, &s);
	set_nonblock(s);
	arm_by_reading(c, s); /* (read ahead from now on, in the runs that arm) */
	R("send before fdopen", send(s, "queued-1\n", 9, 0));
	FILE *f = fdopen(s, "r+");
	if (!f)
		die("fdopen");
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK); /* (stdio waits) */
	R("fprintf", fprintf(f, "stdio-2\n"));
	R("fflush", fflush(f));
	peer_reads(c, "peer got", 9 + 8);

	for (int i = 0; i < 3; i++) {
		char line[64];
		snprintf(line, sizeof(line), "line-%d\n", i);
		R("peer send", send(c, line, strlen(line), 0));
		char *g = fgets(line, sizeof(line), f);
		show("fgets", g ? line : "", g ? (long)strlen(line) : -1);
	}
	R("fclose", fclose(f));
	char b[8];
	R("peer recv after fclose", recv(c, b, sizeof(b), 0));
	close(c);

	/* The numbers stdio freed are plain ones again. */
	int c2, s2;
	tcp_pair(&c2, &s2);
	set_nonblock(s2);
	arm_by_reading(c2, s2);
	R("send c2", send(c2, "again", 5, 0));
	wait_fd(s2, POLLIN, 5000);
	long n = R("recv s2", recv(s2, b, sizeof(b), 0));
	show("got", b, n);

	FILE *p = popen("echo from-popen", "r");
	if (!p)
		die("popen");
	char pl[32];
	char *g = fgets(pl, sizeof(pl), p);
	show("popen", g ? pl : "", g ? (long)strlen(pl) : -1);
	R("pclose", pclose(p));
	DIR *d = opendir("/");
	if (!d)
		die("opendir");
	R("closedir", closedir(d));
	R("send s2", send(s2, "bye", 3, 0));
	peer_reads(c2, "c2 got", 3);
	return 0;
}

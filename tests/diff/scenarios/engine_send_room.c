/* Also run with every send queued by the engine (none straight to the kernel for its size):
 * RUN_ALSO=RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_ARM_AFTER=0 */
/* engine_send_room: a send the program was told succeeded is the kernel's
 * to deliver, whatever the process does next.  A child connects (its
 * socket is its own, not shared with the parent), is armed by reading,
 * then sends small pieces on a nonblocking socket to a parent that does
 * not read, until EAGAIN; asks TIOCOUTQ (which must answer, not wait for
 * the peer); tells the parent how much was accepted, and ends at once:
 * by exit(), by _exit(), by a fatal signal with its default action
 * (SIGTERM), by execve() of a program that exits.  Only then does the
 * parent read: every accepted byte must arrive, then the end of the
 * stream.  (How much the kernel accepts depends on timing, so only
 * whether it all arrived is printed.)  The engine may accept only what
 * the kernel's buffer takes at that moment; were it to accept more, the
 * rest would be waiting in the dead process, and lost.
 * ENGINE_MIN_ACCELERATED=4 */
#include "../scn.h"
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>

#define PIECE 1000

static const char *const how_names[] = { "exit", "_exit", "SIGTERM", "execve" };

static void child(int how, struct sockaddr_storage *a, socklen_t al, int report)
{
	int c = socket(a->ss_family, SOCK_STREAM, 0);
	int small = 65536;
	setsockopt(c, SOL_SOCKET, SO_SNDBUF, &small, sizeof(small));
	if (c < 0 || connect(c, (struct sockaddr *)a, al))
		die("child connect");
	set_nonblock(c);
	char buf[PIECE];
	for (int i = 0; i < 6; i++) { /* armed by reading */
		if (!wait_fd(c, POLLIN, 10000) || recv(c, buf, 1, 0) != 1)
			die("child arm");
	}
	fill_pattern(buf, sizeof(buf), 7);
	long total = 0;
	int rounds = 0;
	/* Until EAGAIN twice, a poll for room between (which the parent,
	 * not reading, never gives once the buffers are full). */
	for (;;) {
		size_t off = (size_t)(total % PIECE);
		ssize_t r = send(c, buf + off, sizeof(buf) - off, MSG_NOSIGNAL);
		if (r > 0) {
			total += r;
			continue;
		}
		if (r < 0 && errno != EAGAIN)
			die("child send");
		if (++rounds == 2)
			break;
		wait_fd(c, POLLOUT, 200);
	}
	int outq = -1;
	if (ioctl(c, TIOCOUTQ, &outq) < 0 || outq < 0)
		die("TIOCOUTQ");
	if (write(report, &total, sizeof(total)) != sizeof(total))
		die("report");
	switch (how) {
	case 0:
		exit(0);
	case 1:
		_exit(0);
	case 2:
		signal(SIGTERM, SIG_DFL);
		raise(SIGTERM);
		_exit(1);
	default:
		execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL);
		_exit(127);
	}
}

int main(void)
{
	alarm(30);
	for (int how = 0; how < 4; how++) {
		struct sockaddr_storage a;
		socklen_t al;
		int l = tcp_listener(AF_INET, &a, &al);
		int small = 65536;
		setsockopt(l, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		int p[2];
		if (pipe(p))
			die("pipe");
		fflush(stdout);
		pid_t pid = fork();
		if (pid < 0)
			die("fork");
		if (pid == 0) {
			close(p[0]);
			close(l);
			child(how, &a, al, p[1]);
		}
		close(p[1]);
		int s = accept(l, NULL, NULL);
		if (s < 0)
			die("accept");
		close(l);
		for (int i = 0; i < 6; i++)
			if (send(s, "x", 1, 0) != 1)
				die("arm send");
		long total = -1;
		if (read_full(p[0], &total, sizeof(total)))
			die("no report");
		close(p[0]);
		char label[64];
		snprintf(label, sizeof(label), "child ending by %s", how_names[how]);
		reap(label, pid);
		/* now read everything */
		static char in[PIECE * 64];
		char want[PIECE];
		fill_pattern(want, sizeof(want), 7);
		long got = 0, bad = 0;
		for (;;) {
			ssize_t r = recv(s, in, sizeof(in), 0);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				R("recv at the end", r);
				break;
			}
			for (ssize_t i = 0; i < r; i++)
				bad += in[i] != want[(got + i) % PIECE];
			got += r;
		}
		say("%s: accepted > 0: %d, every accepted byte arrived: %d, no more: %d, in order: %d",
		    how_names[how], total > 0, got >= total, got <= total, bad == 0);
		close(s);
	}
	return 0;
}

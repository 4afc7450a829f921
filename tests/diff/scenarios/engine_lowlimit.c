/* A low RLIMIT_NOFILE must never make a nonblocking call block.  With
 * room for 256 descriptors the drain thread registers fewer file slots;
 * with 48 it cannot register any and the rest of a send waits in the
 * owner's ring instead.  Either way: a peer that does not read yet, a
 * writer that fills every buffer with nonblocking sends (EAGAIN, never a
 * wait), then the peer reads it all and every accepted byte arrives.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"
#include <sys/resource.h>

#define CHUNK 16384

static void fill_then_read(int limit)
{
	int tok[2];
	if (pipe(tok))
		die("pipe");
	pid_t p = fork();
	if (p == 0) {
		struct rlimit rl = { (rlim_t)limit, (rlim_t)limit };
		struct rlimit old;
		getrlimit(RLIMIT_NOFILE, &old);
		if (old.rlim_max < rl.rlim_max)
			rl.rlim_max = old.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			die("setrlimit");
		int c, s;
		char buf[CHUNK];
		/* the reader, asleep until the writer is done; connected after
		 * the fork, so that the writer's end is the engine's */
		pid_t r = fork_nb_pair(&s, &c);
		if (r == 0) {
			/* a few exchanges first: the writer's reads arm its end */
			for (int i = 0; i < 6; i++) {
				if (send(c, "x", 1, 0) != 1 || !(wait_fd(c, POLLIN, 5000) & POLLIN) ||
				    recv(c, buf, 1, 0) != 1)
					_exit(4);
			}
			char go;
			if (read(tok[0], &go, 1) != 1)
				_exit(3);
			long got = 0;
			for (;;) {
				ssize_t n = recv(c, buf, sizeof(buf), MSG_DONTWAIT);
				if (n > 0) {
					got += n;
					continue;
				}
				if (n == 0)
					break;
				if (errno != EAGAIN || !(wait_fd(c, POLLIN, 20000) & POLLIN))
					break;
			}
			if (write(tok[1], &got, sizeof(got)) != sizeof(got))
				_exit(2);
			_exit(0);
		}
		/* arm s (the reader's exchanges), then fill it towards c */
		for (int i = 0; i < 6; i++) {
			if (!(wait_fd(s, POLLIN, 5000) & POLLIN) || recv(s, buf, 1, 0) != 1 || send(s, "y", 1, 0) != 1)
				die("exchange");
		}
		fill_pattern(buf, sizeof(buf), 3);
		long sent = 0;
		int eagain = 0;
		for (int i = 0; i < 4096 && eagain < 3; i++) {
			ssize_t n = send(s, buf, sizeof(buf), 0);
			if (n > 0)
				sent += n;
			else if (errno == EAGAIN)
				eagain++, wait_fd(s, POLLOUT, 20); /* nothing to wait for: the peer is asleep */
			else
				break;
		}
		say("limit %d: sends ended with EAGAIN: %s", limit, eagain ? "yes" : "no");
		if (write(tok[1], "g", 1) != 1)
			die("token");
		close(c);
		close(s); /* accepted bytes still go out after close */
		reap("reader", r);
		long got = -1;
		if (read_full(tok[0], &got, sizeof(got)))
			got = -1;
		say("limit %d: every accepted byte arrived: %s", limit, got == sent ? "yes" : "no");
		exit(0);
	}
	reap("writer", p);
	close(tok[0]);
	close(tok[1]);
}

int main(void)
{
	fill_then_read(256);
	fill_then_read(48);
	return 0;
}

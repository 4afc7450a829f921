/* engine_rr_switch: an event loop's request-response connection (a
 * nonblocking socket, poll, one read of a request, one send of its
 * answer) that the library moves between the engine and the kernel's
 * calls (RINGSOCK_REQUEST_RESPONSE, tcp_recv.c rs_tcp_rr_read): after 16
 * rounds of one read and one send its reads and sends are the kernel's;
 * rounds whose answer goes out in two sends give it back to the engine
 * (the fourth of them), one-send rounds take it to the kernel again, a
 * stream of sends with no read gives it back (the 16th), and so on.
 * Every request and answer must arrive whole and in order across each
 * switch (a receive cancelled with bytes held, reads that must take what
 * the engine held first), with every call's result the kernel's.
 * The default (auto) keeps the connection on the engine where system
 * calls are costly; the run with the kernel's calls chosen switches on
 * every machine.
 * RUN_ALSO=RINGSOCK_REQUEST_RESPONSE=kernel
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"

#define ROUNDS 140
#define PUSH_ROUND 100 /* after its answer, the server pushes PUSHES messages */
#define PUSHES 40
#define PUSH_SIZE 32

static size_t req_size(int i)
{
	return 16 + (size_t)(i * 53) % 700;
}

/* rounds whose answer goes out in two sends */
static int two_sends(int i)
{
	return (i >= 40 && i < 48) || (i >= 120 && i < 126);
}

static void server(int s)
{
	alarm(60);
	char req[1024], ans[1024], push[PUSH_SIZE];
	for (int i = 0; i < ROUNDS; i++) {
		size_t n = req_size(i), got = 0;
		while (got < n) {
			wait_fd(s, POLLIN, 10000);
			ssize_t r = recv(s, req + got, n - got, 0);
			if (r < 0 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (r <= 0)
				_exit(2);
			got += (size_t)r;
		}
		for (size_t k = 0; k < n; k++)
			ans[k] = (char)(req[k] + 1);
		size_t half = two_sends(i) ? n / 2 : n;
		if (send_all_nb(s, ans, half) != (long)half ||
		    (half < n && send_all_nb(s, ans + half, n - half) != (long)(n - half)))
			_exit(3);
		if (i == PUSH_ROUND)
			for (int k = 0; k < PUSHES; k++) {
				fill_pattern(push, sizeof(push), 1000u + (unsigned)k);
				if (send_all_nb(s, push, sizeof(push)) != (long)sizeof(push))
					_exit(4);
			}
	}
	_exit(0);
}

int main(void)
{
	int c, s;
	pid_t p = fork_nb_pair(&c, &s);
	if (p == 0)
		server(s);
	alarm(60);
	char req[1024], ans[1024], push[PUSH_SIZE], want[PUSH_SIZE];
	long ok = 0, bad = 0, pushed = 0;
	uint32_t sum = 0;
	for (int i = 0; i < ROUNDS; i++) {
		size_t n = req_size(i);
		fill_pattern(req, n, (unsigned)i);
		if (send_all_nb(c, req, n) != (long)n) {
			say("round %d: send failed: %s", i, scn_errname(errno));
			break;
		}
		long r = recv_all_nb(c, ans, n);
		int good = r == (long)n;
		for (size_t k = 0; good && k < n; k++)
			good = ans[k] == (char)(req[k] + 1);
		if (!good && bad++ < 5)
			say("round %d: answer of %ld bytes, %s", i, r, r == (long)n ? "wrong bytes" : "short");
		ok += good;
		if (r > 0)
			sum = sum * 31 + scn_sum(ans, (size_t)r);
		if (i == PUSH_ROUND)
			for (int k = 0; k < PUSHES; k++) {
				fill_pattern(want, sizeof(want), 1000u + (unsigned)k);
				if (recv_all_nb(c, push, sizeof(push)) == (long)sizeof(push) &&
				    !memcmp(push, want, sizeof(push)))
					pushed++;
			}
	}
	say("answers whole and in order = %ld, wrong = %ld, pushed messages = %ld, sum %08x", ok, bad, pushed, sum);
	reap("server", p);
	return 0;
}

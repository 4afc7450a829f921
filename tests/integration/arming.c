/* arming: when does the engine take a new nonblocking socket on?  An
 * epoll server in this process accepts one connection from a forked
 * client, registers it (EPOLLIN|EPOLLET), then answers ROUNDS requests.
 * Counters from ringsock_stats_snapshot (this process only; the client's
 * are its own) say, after the registration, whether the socket is served
 * by the engine yet, and for each read whether it went to the kernel
 * ("kernel": the direct counter moved) or was answered from the engine's
 * queue ("engine": calls_nosys moved), or neither ("passthrough": the
 * kernel's alone).  With "toggle", the second half's reads are blocking:
 * O_NONBLOCK cleared before each, set again after.  Prints one line per
 * fact; arming.sh compares them with what RINGSOCK_ARM_AFTER promises. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "counters.h"

static struct ringsock_stats now(void)
{
	return now_at_least(0);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 8;
	int toggle = argc > 2 && !strcmp(argv[2], "toggle");
	if (!counters_init()) {
		printf("ringsock not loaded\n");
		return 1;
	}
	struct sockaddr_in a;
	int l = loopback_listener(&a);
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) { /* the client: a request, then wait for the answer */
		close(l);
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(c, (struct sockaddr *)&a, sizeof(a)) < 0)
			_exit(1);
		char b[8];
		for (int i = 0; i < rounds; i++)
			if (send(c, "req", 3, 0) != 3 || recv(c, b, 3, MSG_WAITALL) != 3)
				_exit(1);
		close(c);
		_exit(0);
	}
	int s = accept4(l, NULL, NULL, SOCK_NONBLOCK);
	if (s < 0)
		die("accept4");
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET, .data.fd = s };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, s, &ev) < 0)
		die("epoll_ctl");
	printf("registered: accelerated %llu\n", (unsigned long long)now().sockets_accelerated);
	for (int i = 0; i < rounds; i++) {
		/* toggle: from the middle on, each read is made blocking
		 * (O_NONBLOCK cleared, then set again after it) */
		int blocking = toggle && i >= rounds / 2;
		/* (the request is in before a blocking read too: a read that
		 * must wait is another matter, see ringsock(7) Receive) */
		if (epoll_wait(ep, &ev, 1, 10000) != 1)
			die("epoll_wait");
		if (blocking && fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK) < 0)
			die("F_SETFL");
		char b[8];
		struct ringsock_stats before = now();
		ssize_t n = blocking ? recv(s, b, 3, MSG_WAITALL) : read(s, b, sizeof(b));
		struct ringsock_stats after = now();
		if (blocking && fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK) < 0)
			die("F_SETFL");
		if (n != 3)
			die("read");
		const char *from = after.direct > before.direct       ? "kernel"
				   : after.calls_nosys > before.calls_nosys ? "engine"
									    : "passthrough";
		printf("read %d: %s, accelerated %llu%s\n", i + 1, from,
		       (unsigned long long)after.sockets_accelerated, blocking ? ", blocking" : "");
		if (send(s, "ans", 3, 0) != 3)
			die("send");
	}
	int status;
	waitpid(child, &status, 0);
	printf("client %s\n", WIFEXITED(status) && WEXITSTATUS(status) == 0 ? "ok" : "failed");
	close(s);
	close(l);
	return 0;
}

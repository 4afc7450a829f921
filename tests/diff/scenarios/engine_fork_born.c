/* A connection made before fork() and first used after it, in both
 * processes (a forking server's connection served in the child, as
 * PostgreSQL's backends are): the engine could only pass its reads and
 * sends to the kernel, so it never arms it (pass-through reason fork).
 * Each process exchanges messages on its end, epoll and poll watching.
 * ENGINE_PASSTHROUGH=fork */
#include "../scn.h"
#include <sys/epoll.h>
#include <sys/wait.h>

static void rounds(int fd, const char *who, int first)
{
	int ep = epoll_create1(0);
	struct epoll_event e = { .events = EPOLLIN, .data.fd = fd };
	if (epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e))
		die("epoll_ctl");
	char b[32];
	for (int i = 0; i < 20; i++) {
		if (first && send(fd, "ping", 4, 0) != 4)
			die("send");
		struct epoll_event out;
		if (epoll_wait(ep, &out, 1, 5000) != 1)
			die("epoll_wait");
		if (!(wait_fd(fd, POLLIN, 5000) & POLLIN))
			die("poll");
		if (recv(fd, b, sizeof(b), 0) != 4)
			die("recv");
		if (!first && send(fd, "pong", 4, 0) != 4)
			die("send");
	}
	close(ep);
	if (first)
		say("%s: 20 round trips", who);
}

int main(void)
{
	int c, s;
	nb_pair(&c, &s);
	pid_t p = fork();
	if (p < 0)
		die("fork");
	if (p == 0) {
		close(c);
		rounds(s, "child", 0);
		_exit(0);
	}
	close(s);
	rounds(c, "parent", 1);
	close(c);
	reap("child", p);
	return 0;
}

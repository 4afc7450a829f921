/* Also run with every send through the frag pool and each batch sent zero-copy (tcp_send.c):
 * RUN_ALSO=RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0 RINGSOCK_ARM_AFTER=0 */
/* Children that share the parent's memory (vfork, posix_spawn, system,
 * popen) while the parent holds engine sockets with data read ahead and
 * sends queued, and signal handlers installed.  A vfork child resets
 * handlers and closes every descriptor (as Python's subprocess does):
 * the parent's handlers, sockets and data must be intact afterwards.  A
 * spawned program that inherits a socket reads what the kernel has, and
 * the parent's engine must not read ahead of it.  And socket calls made
 * through syscall(2).
 * ENGINE_MIN_ACCELERATED=2 */
#include "../scn.h"
#include <spawn.h>
#include <sys/epoll.h>
#include <sys/syscall.h>

extern char **environ;

static volatile sig_atomic_t n_term, n_usr1, n_chld;
static void on_term(int sig) { (void)sig; n_term++; }
static void on_usr1(int sig) { (void)sig; n_usr1++; }
static void on_chld(int sig) { (void)sig; n_chld++; }

/* A connected nonblocking pair whose server side s has been read through
 * enough times to be armed (the default RINGSOCK_ARM_AFTER is 4), then
 * holds "held-ahead" that the engine has read ahead. */
static void armed_pair(int *c, int *s)
{
	nb_pair(c, s);
	arm_by_reading(*c, *s);
	send(*c, "held-ahead", 10, 0);
	wait_fd(*s, POLLIN, 5000);
}

static void check_handlers(const char *label)
{
	n_term = n_usr1 = 0;
	raise(SIGTERM);
	raise(SIGUSR1);
	say("%s: SIGTERM handler ran %d, SIGUSR1 handler ran %d", label, (int)n_term, (int)n_usr1);
	struct sigaction sa;
	sigaction(SIGTERM, NULL, &sa);
	say("%s: sigaction reports our handler %d", label, sa.sa_handler == on_term);
}

static void read_rest(const char *label, int s, int c)
{
	char buf[256];
	long n = recv_all_nb(s, buf, 10);
	show(label, buf, n);
	R("send after", send(c, "more", 4, 0));
	wait_fd(s, POLLIN, 5000);
	n = recv(s, buf, sizeof(buf), 0);
	show("recv after", buf, n);
}

static void vfork_resets_everything(void)
{
	int c, s;
	armed_pair(&c, &s);
	/* queued on the engine, accepted */
	R("send queued", send(s, "queued-reply", 12, 0));
	pid_t p = vfork();
	if (p == 0) {
		/* what Python's _posixsubprocess does before exec */
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		sigaction(SIGTERM, &dfl, NULL);
		signal(SIGUSR1, SIG_DFL);
		sigaction(SIGCHLD, &dfl, NULL);
		int sock = socket(AF_INET, SOCK_STREAM, 0);
		close(sock);
		fcntl(s, F_SETFD, 0);
		dup2(s, 40);
		shutdown(40, SHUT_RD); /* the child's own call, on a shared socket */
		close(s);
		close(c);
#ifdef SYS_close_range
		syscall(SYS_close_range, 3, ~0u, 0);
#endif
		_exit(7);
	}
	reap("vfork child", p);
	check_handlers("after vfork");
	char buf[64];
	wait_fd(c, POLLIN, 5000);
	long n = recv(c, buf, sizeof(buf), 0);
	show("peer got queued", buf, n);
	read_rest("parent reads held data", s, c);
	close(c);
	close(s);
}

/* The spawned program inherits the socket as its stdin and reads 6 bytes
 * that arrive after it started: the parent's engine must not take them. */
static void spawn_reader(const char *how)
{
	int c, s;
	armed_pair(&c, &s);
	char buf[64];
	show("parent read", buf, recv(s, buf, sizeof(buf), 0));
	/* the child's reads wait for the data (the description is shared) */
	fcntl(s, F_SETFL, fcntl(s, F_GETFL) & ~O_NONBLOCK);
	pid_t p = -1;
	if (!strcmp(how, "posix_spawn")) {
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, s, 0);
		posix_spawn_file_actions_addclose(&fa, c);
		char *argv[] = { "sh", "-c", "head -c 6; echo", NULL };
		int e = posix_spawn(&p, "/bin/sh", &fa, NULL, argv, environ);
		say("posix_spawn = %d", e);
		posix_spawn_file_actions_destroy(&fa);
	} else {
		p = vfork();
		if (p == 0) {
			dup2(s, 0);
			execl("/bin/sh", "sh", "-c", "head -c 6; echo", (char *)NULL);
			_exit(127);
		}
	}
	/* the peer sends; an engine wait runs the parent's ring meanwhile */
	send(c, "second", 6, 0);
	wait_fd(c, POLLOUT, 100);
	reap(how, p);
	R("parent recv after child", recv(s, buf, sizeof(buf), MSG_DONTWAIT));
	close(c);
	close(s);
}

static void libc_spawners(void)
{
	int c, s;
	armed_pair(&c, &s);
	R("send queued", send(s, "before-system", 13, 0));
	int st = system("exit 3");
	say("system: exited %d", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	FILE *f = popen("echo from-popen", "r");
	char line[64] = "";
	if (f && fgets(line, sizeof(line), f))
		say("popen read: %s", strtok(line, "\n"));
	say("pclose: %d", f ? WEXITSTATUS(pclose(f)) : -1);
	pid_t p;
	char *argv[] = { "true", NULL };
	say("posix_spawnp = %d", posix_spawnp(&p, "true", NULL, NULL, argv, environ));
	reap("posix_spawnp child", p);
	check_handlers("after libc spawners");
	char buf[64];
	wait_fd(c, POLLIN, 5000);
	show("peer got queued", buf, recv(c, buf, sizeof(buf), 0));
	read_rest("parent reads held data", s, c);
	close(c);
	close(s);
}

/* Socket calls through syscall(2) on engine sockets. */
static void through_syscall(void)
{
	int c, s;
	armed_pair(&c, &s);
	char buf[64];
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = s }, out;
	R("syscall epoll_ctl", syscall(SYS_epoll_ctl, ep, EPOLL_CTL_ADD, s, &ev));
	R("syscall epoll_pwait", syscall(SYS_epoll_pwait, ep, &out, 1, 5000, NULL, 8));
	long n = syscall(SYS_recvfrom, s, buf, 4, 0, NULL, NULL);
	show("syscall recvfrom", buf, n);
	n = syscall(SYS_read, s, buf, sizeof(buf));
	show("syscall read", buf, n);
	R("syscall read again", syscall(SYS_read, s, buf, sizeof(buf)));
	R("syscall write", syscall(SYS_write, c, "via-syscall", 11));
	struct pollfd pf = { s, POLLIN, 0 };
	struct timespec ts = { 5, 0 };
	R("syscall ppoll", syscall(SYS_ppoll, &pf, 1, &ts, NULL, 8));
	n = syscall(SYS_recvfrom, s, buf, sizeof(buf), 0, NULL, NULL);
	show("syscall recvfrom", buf, n);
	R("syscall epoll_pwait bad sigset size", syscall(SYS_epoll_pwait, ep, &out, 1, 0, &ts, 4));
	R("syscall close", syscall(SYS_close, s));
	R("syscall getppid works", syscall(SYS_getppid) > 0);
	close(ep);
	close(c);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = on_chld;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGUSR1, on_usr1);
	vfork_resets_everything();
	spawn_reader("vfork");
	spawn_reader("posix_spawn");
	libc_spawners();
	through_syscall();
	say("SIGCHLD handler ran: %s", n_chld ? "yes" : "no");
	return 0;
}

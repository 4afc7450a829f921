/* fork with open sockets and data already buffered; every exec variant with
 * a socket inherited across it; vfork + exec; _exit and _Exit.
 * ENGINE_MIN_ACCELERATED=1 */
#include "../scn.h"

static int child_mode(int argc, char **argv)
{
	/* Re-executed: write our tag to the inherited socket fd. */
	int fd = atoi(argv[2]);
	const char *tag = argv[3];
	char msg[64];
	int n = snprintf(msg, sizeof(msg), "[%s]", tag);
	if (write(fd, msg, (size_t)n) != n)
		return 3;
	(void)argc;
	return 0;
}

static void expect(int s, const char *label)
{
	char buf[64];
	long n = R(label, recv(s, buf, sizeof(buf), 0));
	show("got", buf, n);
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "child"))
		return child_mode(argc, argv);

	int c, s;
	char buf[64];
	tcp_pair(&c, &s);

	/* Data buffered before fork: exactly one process reads it. */
	send(c, "before-fork", 11, 0);
	msleep(20);
	pid_t pid = fork();
	if (pid == 0) {
		long n = recv(s, buf, sizeof(buf), 0);
		send(s, buf, n > 0 ? (size_t)n : 0, 0); /* echo it back */
		send(s, "|child", 6, 0);
		_exit(0);
	}
	reap("fork child", pid);
	long n = R("recv echo from child", recv(c, buf, 17, MSG_WAITALL));
	show("got", buf, n);
	R("nothing left for the parent", recv(s, buf, sizeof(buf), MSG_DONTWAIT));

	/* Child writes then exits at once: nothing lost. */
	pid = fork();
	if (pid == 0) {
		for (int i = 0; i < 100; i++)
			send(s, "0123456789", 10, 0);
		_exit(0);
	}
	reap("writer child", pid);
	char big[1000];
	n = R("recv 1000 from exited child", recv(c, big, sizeof(big), MSG_WAITALL));
	show("got", big, n);

	/* Both processes keep using the socket. */
	pid = fork();
	if (pid == 0) {
		send(c, "C", 1, 0);
		_exit(0);
	}
	reap("child", pid);
	send(c, "P", 1, 0);
	n = R("recv both", recv(s, buf, 2, MSG_WAITALL));
	show("got", buf, n);

	/* exec variants: the socket survives exec (no CLOEXEC). */
	char fdstr[16];
	snprintf(fdstr, sizeof(fdstr), "%d", c);
	const char *self = "/proc/self/exe";
	char path[4096];
	ssize_t pl = readlink(self, path, sizeof(path) - 1);
	if (pl < 0)
		die("readlink");
	path[pl] = 0;
	char *name = strrchr(path, '/') + 1;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%.*s", (int)(name - path - 1), path);
	setenv("PATH", dir, 1);
	char *envp[] = { "SCN=1", NULL };
	for (int v = 0; v < 8; v++) {
		static const char *const tags[] = { "execv", "execve", "execvp", "execvpe",
						    "execl", "execlp", "execle", "fexecve" };
		char *args[] = { name, "child", fdstr, (char *)tags[v], NULL };
		/* execle's envp replaces the environment: keep LD_PRELOAD in it
		 * when present so the child stays under the same library. */
		const char *lp = getenv("LD_PRELOAD");
		char lpbuf[4200];
		char *envp2[] = { "SCN=1", NULL, NULL };
		if (lp) {
			snprintf(lpbuf, sizeof(lpbuf), "LD_PRELOAD=%s", lp);
			envp2[1] = lpbuf;
		}
		(void)envp;
		pid = fork();
		if (pid == 0) {
			switch (v) {
			case 0: execv(path, args); break;
			case 1: execve(path, args, envp2); break;
			case 2: execvp(name, args); break;
			case 3: execvpe(name, args, envp2); break;
			case 4: execl(path, name, "child", fdstr, tags[v], (char *)NULL); break;
			case 5: execlp(name, name, "child", fdstr, tags[v], (char *)NULL); break;
			case 6: execle(path, name, "child", fdstr, tags[v], (char *)NULL, envp2); break;
			case 7: {
				int fd = open(path, O_RDONLY | O_CLOEXEC);
				fexecve(fd, args, envp2);
				break;
			}
			}
			_exit(127);
		}
		reap(tags[v], pid);
		expect(s, tags[v]);
	}

	/* exec failures keep errno */
	char *nargs[] = { "nope", NULL };
	R("execv missing", execv("/nonexistent/prog", nargs));
	R("execvp missing", execvp("no-such-program-here", nargs));

	/* vfork + exec, and vfork + _exit */
	pid = vfork();
	if (pid == 0) {
		char *args[] = { name, "child", fdstr, "vfork", NULL };
		execv(path, args);
		_exit(127);
	}
	reap("vfork child", pid);
	expect(s, "vfork");
	pid = vfork();
	if (pid == 0)
		_exit(7);
	reap("vfork _exit child", pid);

	pid = fork();
	if (pid == 0) {
		send(c, "E", 1, 0);
		_Exit(5);
	}
	reap("_Exit child", pid);
	n = R("recv from _Exit child", recv(s, buf, 1, 0));
	show("got", buf, n);
	return 0;
}

/* engine_close_range: closing every descriptor but the ones a program
 * knows (close_range over a whole range, as daemons and spawners do) must
 * not change which sockets the engine serves.  The engine's own
 * descriptors stay open through it (close_range skips them), and the
 * library must still know them as its own: were it to take its own ring
 * for one the program made (foreign.c), every later socket would leave
 * the engine.  The same for a vfork child's close_range, which closes in
 * the child's own descriptor table while running in the parent's memory:
 * nothing it calls may change the parent's records.  Each step arms a new
 * pair by reading and exchanges bytes; the pairs must be served.
 * ENGINE_MIN_ACCELERATED=4 */
#include "../scn.h"
#include <sys/syscall.h>
#include <sys/wait.h>

static int pairs[4][2];
static int npairs;

static void step(const char *what)
{
	int *p = pairs[npairs++];
	nb_pair(&p[0], &p[1]);
	arm_by_reading(p[0], p[1]);
	char buf[16];
	R(what, send(p[0], "after", 5, 0));
	wait_fd(p[1], POLLIN, 10000);
	long n = R("recv", recv(p[1], buf, sizeof(buf), 0));
	show("got", buf, n);
}

static int top(void)
{
	int top = 2;
	for (int i = 0; i < npairs; i++)
		for (int j = 0; j < 2; j++)
			top = pairs[i][j] > top ? pairs[i][j] : top;
	return top;
}

int main(void)
{
	alarm(30);
	step("first pair");

	/* a vfork child closes everything from 3 and exits */
	fflush(stdout);
	pid_t pid = vfork();
	if (pid == 0) {
		close_range(3, ~0U, 0);
		_exit(0);
	}
	reap("vfork child", pid);
	step("after the vfork child's close_range");

	/* the program closes everything above its own */
	R("close_range above the program's", close_range((unsigned)top() + 1, ~0U, 0));
	step("after close_range");

	/* and one by one, as older programs do */
	for (int fd = top() + 1; fd < 4096; fd++)
		close(fd);
	step("after closing each");
	return 0;
}

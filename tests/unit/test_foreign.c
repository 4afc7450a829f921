/* Unit tests for the look for a program's own io_uring (foreign.c): no
 * ring, a ring made after a look (found by number, no listing), a ring far
 * above the other descriptors (found by the listing), the kept
 * /proc/<pid>/fd descriptor hidden among the engine's, a fork child, whose
 * count must be its own table's, not the parent's, and the descriptor
 * limit.  Each case runs in a child process: a ring once found is final
 * for the process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

/* A ring made as liburing 2.2 and later make it: nothing the library sees. */
static int raw_ring(void)
{
	struct io_uring_params p;
	memset(&p, 0, sizeof(p));
	return (int)syscall(__NR_io_uring_setup, 4, &p);
}

/* The listings of /proc/self/fd made so far. */
static uint64_t listings(void)
{
	uint64_t c[RS_C_COUNT];
	rs_stats_snapshot(c);
	return c[RS_C_FD_LISTINGS];
}

/* Run fn in a fork child: its exit status (0 = every check held). */
static int in_child(int (*fn)(void))
{
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(fn());
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static int no_ring(void)
{
	if (rs_foreign_uring_found() != 0) /* lists, finds none */
		return 1;
	if (rs_foreign_uring_found() != 0) /* the counts agree: no listing */
		return 2;
	int fd = open("/dev/null", O_RDONLY); /* seen by the library */
	rs_fdseen_add(fd);
	if (rs_foreign_uring_found() != 0)
		return 3;
	/* The kept descriptor is the engine's: hidden, close-on-exec. */
	int got[RS_MAX_ENGINE_FDS];
	int n = rs_fdguard_list(got, RS_MAX_ENGINE_FDS);
	if (n != 1 || !(fcntl(got[0], F_GETFD) & FD_CLOEXEC))
		return 4;
	return 0;
}

/* A file opened and closed around each look (nginx opens the file it
 * serves for each request), then a ring: each is found by number, with
 * no listing of the directory. */
static int ring_after_look(void)
{
	if (rs_foreign_uring_found() != 0)
		return 1;
	uint64_t before = listings();
	for (int i = 0; i < 20; i++) {
		int f = open("/dev/null", O_RDONLY); /* not seen by the library */
		if (f < 0 || rs_foreign_uring_found() != 0)
			return 2;
		close(f);
		rs_fdseen_gone(f); /* (what the library's close does) */
	}
	if (raw_ring() < 0)
		return 77;
	if (rs_foreign_uring_found() != 1)
		return 3;
	if (listings() != before)
		return 4;
	return 0;
}

/* A ring far above every other descriptor, past the numbers a look by
 * number tries: the listing finds it. */
static int far_ring(void)
{
	if (rs_foreign_uring_found() != 0)
		return 1;
	uint64_t before = listings();
	int ring = raw_ring();
	if (ring < 0)
		return 77;
	if (dup2(ring, 700) != 700)
		return 2;
	close(ring);
	if (rs_foreign_uring_found() != 1)
		return 3;
	if (listings() != before + 1)
		return 4;
	return 0;
}

/* The parent looked (the kept descriptor names its table) and waits;
 * the child, after the fork handler, makes a ring.  Had the child kept
 * the parent's descriptor, it would count the parent's table, which
 * equals the child's count of descriptors it saw, and miss the ring. */
static int fork_child_ring(void)
{
	if (rs_foreign_uring_found() != 0)
		return 1;
	pid_t pid = fork();
	if (pid < 0)
		return 2;
	if (pid == 0) {
		rs_foreign_after_fork_child(); /* what the atfork handler runs */
		if (raw_ring() < 0)
			_exit(77);
		_exit(rs_foreign_uring_found() == 1 ? 0 : 3);
	}
	int st;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 4;
	if (WEXITSTATUS(st) != 0)
		return WEXITSTATUS(st);
	/* The parent's own look still agrees with its table. */
	return rs_foreign_uring_found() == 0 ? 0 : 5;
}

/* At the descriptor limit: a descriptor found by number needs none free
 * (the answer is 0); one the listing must find cannot be listed, and the
 * answer is "not now" (the socket is not armed), never a ring found for
 * good. */
static int at_fd_limit(void)
{
	if (rs_foreign_uring_found() != 0)
		return 1;
	int unseen = open("/dev/null", O_RDONLY); /* not seen: the next look looks for it */
	int lowest = dup(0);
	if (unseen < 0 || lowest < 0)
		return 2;
	close(lowest);
	struct rlimit old, rl;
	getrlimit(RLIMIT_NOFILE, &old);
	rl = old;
	rl.rlim_cur = (rlim_t)lowest; /* no number free below it */
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 3;
	int r = rs_foreign_uring_found();
	setrlimit(RLIMIT_NOFILE, &old);
	if (r != 0)
		return 4;
	/* Now one far above the rest, which only a listing finds. */
	if (dup2(0, 800) != 800)
		return 5;
	lowest = dup(0);
	close(lowest);
	rl.rlim_cur = (rlim_t)lowest;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		return 6;
	r = rs_foreign_uring_found();
	setrlimit(RLIMIT_NOFILE, &old);
	if (r != RS_FOREIGN_UNKNOWN)
		return 7;
	if (rs_foreign_uring_found() != 0) /* room again: it lists, finds none */
		return 8;
	return 0;
}

static void check(int (*fn)(void))
{
	int r = in_child(fn);
	if (r == 77)
		skip();
	assert_int_equal(r, 0);
}

static void test_no_ring(void **state)
{
	(void)state;
	check(no_ring);
}

static void test_ring_after_look(void **state)
{
	(void)state;
	check(ring_after_look);
}

static void test_far_ring(void **state)
{
	(void)state;
	check(far_ring);
}

static void test_fork_child_ring(void **state)
{
	(void)state;
	check(fork_child_ring);
}

static void test_at_fd_limit(void **state)
{
	(void)state;
	check(at_fd_limit);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_ring),
		cmocka_unit_test(test_ring_after_look),
		cmocka_unit_test(test_far_ring),
		cmocka_unit_test(test_fork_child_ring),
		cmocka_unit_test(test_at_fd_limit),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

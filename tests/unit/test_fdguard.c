/* Unit tests for the engine's own descriptors: moved high, recognised,
 * listed in order, moved out of the way on eviction, released. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <unistd.h>

#include "internal.h"

static int is_open(int fd)
{
	return fcntl(fd, F_GETFD) >= 0;
}

static void test_adopt_and_release(void **state)
{
	(void)state;
	int fd = open("/dev/null", O_RDONLY);
	assert_true(fd >= 0);
	int where = -1;
	int nfd = rs_fdguard_adopt(fd, &where);
	assert_true(nfd > fd);
	assert_int_equal(where, nfd);
	assert_false(is_open(fd));          /* the low number is free again */
	assert_true(is_open(nfd));
	assert_true(fcntl(nfd, F_GETFD) & FD_CLOEXEC);
	assert_true(rs_fdguard_is_engine(nfd));
	assert_false(rs_fdguard_is_engine(fd));
	assert_false(rs_fdguard_is_engine(-1));
	rs_fdguard_release(nfd);
	assert_false(rs_fdguard_is_engine(nfd));
	assert_false(is_open(nfd));
}

static void test_list_sorted(void **state)
{
	(void)state;
	int w[3], got[RS_MAX_ENGINE_FDS];
	for (int i = 0; i < 3; i++)
		rs_fdguard_adopt(open("/dev/null", O_RDONLY), &w[i]);
	int n = rs_fdguard_list(got, RS_MAX_ENGINE_FDS);
	assert_int_equal(n, 3);
	assert_true(got[0] < got[1] && got[1] < got[2]);
	for (int i = 0; i < 3; i++)
		rs_fdguard_release(w[i]);
	assert_int_equal(rs_fdguard_list(got, RS_MAX_ENGINE_FDS), 0);
}

static void test_evict(void **state)
{
	(void)state;
	int where = -1;
	int nfd = rs_fdguard_adopt(open("/dev/null", O_RDONLY), &where);
	int old = nfd;
	/* The application wants that number (dup2 target). */
	assert_int_equal(rs_fdguard_evict(old), 0);
	assert_true(where != old);           /* the owner learnt the new number */
	assert_true(is_open(where));
	assert_true(rs_fdguard_is_engine(where));
	assert_false(rs_fdguard_is_engine(old));
	assert_false(is_open(old));          /* free for the application */
	assert_int_equal(rs_fdguard_evict(12345), 0); /* not ours: nothing to do */
	rs_fdguard_release(where);
}

/* More than fit at the top (a thread-per-connection server's rings):
 * every one is still the engine's, and listed in order. */
static void test_many(void **state)
{
	(void)state;
	enum { N = 300 };
	static int w[N], got[RS_MAX_ENGINE_FDS];
	for (int i = 0; i < N; i++)
		assert_true(rs_fdguard_adopt(open("/dev/null", O_RDONLY), &w[i]) >= 0);
	for (int i = 0; i < N; i++)
		assert_true(rs_fdguard_is_engine(w[i]));
	assert_false(rs_fdguard_is_engine(0));
	int n = rs_fdguard_list(got, RS_MAX_ENGINE_FDS);
	assert_int_equal(n, N);
	for (int i = 1; i < n; i++)
		assert_true(got[i - 1] < got[i]);
	for (int i = 0; i < N; i++)
		rs_fdguard_release(w[i]);
	assert_int_equal(rs_fdguard_list(got, RS_MAX_ENGINE_FDS), 0);
	for (int i = 0; i < N; i++)
		assert_false(rs_fdguard_is_engine(w[i]));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_adopt_and_release),
		cmocka_unit_test(test_list_sorted),
		cmocka_unit_test(test_evict),
		cmocka_unit_test(test_many),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

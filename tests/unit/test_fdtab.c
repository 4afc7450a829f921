/* Unit tests for the fd table: tracking, dup sharing, forgetting, stale
 * entries, reference counts, ranges, and concurrent use. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "internal.h"

static void test_track_peek_forget(void **state)
{
	(void)state;
	size_t base = rs_fdtab_live();
	assert_null(rs_fd_peek(10));
	assert_int_equal(rs_fd_track(10, AF_INET, SOCK_STREAM, 0), 0);
	struct rs_sock *s = rs_fd_peek(10);
	assert_non_null(s);
	assert_int_equal(s->domain, AF_INET);
	assert_int_equal(s->type, SOCK_STREAM);
	assert_int_equal(rs_fdtab_live(), base + 1);
	rs_fd_forget(10);
	assert_null(rs_fd_peek(10));
	assert_int_equal(rs_fdtab_live(), base);
	rs_fd_forget(10); /* forgetting twice is harmless */
	assert_null(rs_fd_peek(-1));
	assert_null(rs_fd_peek(1 << 30));
	assert_int_equal(rs_fd_track(-3, AF_INET, SOCK_STREAM, 0), -1);
}

static void test_dup_shares_record(void **state)
{
	(void)state;
	size_t base = rs_fdtab_live();
	rs_fd_track(20, AF_INET6, SOCK_DGRAM, 0);
	rs_fd_dup(20, 21);
	rs_fd_dup(20, 5000); /* another chunk of the table */
	assert_ptr_equal(rs_fd_peek(20), rs_fd_peek(21));
	assert_ptr_equal(rs_fd_peek(20), rs_fd_peek(5000));
	assert_int_equal(atomic_load(&rs_fd_peek(20)->refs), 3);
	assert_int_equal(rs_fdtab_live(), base + 1);
	rs_fd_forget(20);
	assert_non_null(rs_fd_peek(21));
	rs_fd_forget(21);
	assert_non_null(rs_fd_peek(5000));
	assert_int_equal(rs_fdtab_live(), base + 1);
	rs_fd_forget(5000);
	assert_int_equal(rs_fdtab_live(), base);
	/* dup of an untracked fd clears the target */
	rs_fd_track(22, AF_INET, SOCK_STREAM, 0);
	rs_fd_dup(23, 22);
	assert_null(rs_fd_peek(22));
	assert_int_equal(rs_fdtab_live(), base);
}

static void test_stale_replaced(void **state)
{
	(void)state;
	size_t base = rs_fdtab_live();
	rs_fd_track(30, AF_INET, SOCK_STREAM, 0);
	struct rs_sock *old = rs_fd_peek(30);
	unsigned gen = atomic_load(&old->gen);
	/* fd 30 was closed behind our back and reused for a new socket */
	rs_fd_track(30, AF_INET, SOCK_DGRAM, 0);
	struct rs_sock *s = rs_fd_peek(30);
	assert_int_equal(s->type, SOCK_DGRAM);
	assert_int_equal(rs_fdtab_live(), base + 1);
	rs_fd_forget(30);
	/* records are recycled with a new generation */
	rs_fd_track(31, AF_INET, SOCK_STREAM, 0);
	struct rs_sock *r = rs_fd_peek(31);
	if (r == old)
		assert_true(atomic_load(&r->gen) != gen);
	rs_fd_forget(31);
	assert_int_equal(rs_fdtab_live(), base);
}

static void test_get_holds_reference(void **state)
{
	(void)state;
	size_t base = rs_fdtab_live();
	rs_fd_track(40, AF_INET, SOCK_STREAM, 0);
	struct rs_sock *s = rs_fd_get(40);
	assert_non_null(s);
	rs_fd_forget(40); /* the fd is closed while we hold the record */
	assert_null(rs_fd_peek(40));
	assert_int_equal(rs_fdtab_live(), base + 1);
	assert_int_equal(atomic_load(&s->refs), 1);
	rs_sock_put(s);
	assert_int_equal(rs_fdtab_live(), base);
	assert_null(rs_fd_get(40));
}

static void test_forget_range(void **state)
{
	(void)state;
	size_t base = rs_fdtab_live();
	for (int fd = 100; fd < 110; fd++)
		rs_fd_track(fd, AF_INET, SOCK_STREAM, 0);
	rs_fd_track(9000, AF_INET, SOCK_STREAM, 0);
	rs_fd_forget_range(103, 106);
	for (int fd = 100; fd < 110; fd++)
		assert_true((rs_fd_peek(fd) == NULL) == (fd >= 103 && fd <= 106));
	rs_fd_forget_range(100, ~0u);
	assert_null(rs_fd_peek(9000));
	assert_int_equal(rs_fdtab_live(), base);
}

static void *churn(void *arg)
{
	int base = (int)(long)arg;
	for (int i = 0; i < 20000; i++) {
		int fd = base + (i % 64);
		rs_fd_track(fd, AF_INET, SOCK_STREAM, 0);
		rs_fd_dup(fd, fd + 64);
		struct rs_sock *s = rs_fd_get(fd + 64);
		if (s)
			rs_sock_put(s);
		rs_fd_forget(fd);
		rs_fd_forget(fd + 64);
	}
	return NULL;
}

static void *reader(void *arg)
{
	int base = (int)(long)arg;
	for (int i = 0; i < 200000; i++) {
		struct rs_sock *s = rs_fd_get(base + (i % 128));
		if (s) {
			assert_true(atomic_load(&s->refs) > 0);
			rs_sock_put(s);
		}
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	(void)state;
	size_t base = rs_fdtab_live();
	pthread_t t[4];
	pthread_create(&t[0], NULL, churn, (void *)1000L);
	pthread_create(&t[1], NULL, churn, (void *)1000L); /* same fds: races on purpose */
	pthread_create(&t[2], NULL, reader, (void *)1000L);
	pthread_create(&t[3], NULL, churn, (void *)2000L);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(rs_fdtab_live(), base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_track_peek_forget), cmocka_unit_test(test_dup_shares_record),
		cmocka_unit_test(test_stale_replaced),    cmocka_unit_test(test_get_holds_reference),
		cmocka_unit_test(test_forget_range),      cmocka_unit_test(test_concurrent),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the counters: per-thread blocks summed on demand, folded
 * when a thread exits, mapped onto struct ringsock_stats, formatted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <string.h>

#include "internal.h"

static void *count_some(void *arg)
{
	for (int i = 0; i < 1000; i++)
		rs_stat_add(RS_C_BYTES_SENT, 3);
	rs_stat_add(RS_C_CALLS_SOCKET + RINGSOCK_FAM_RW, (uint64_t)(long)arg);
	return NULL;
}

static void test_threads_summed(void **state)
{
	(void)state;
	uint64_t before[RS_C_COUNT], after[RS_C_COUNT];
	rs_stats_snapshot(before);
	pthread_t t[4];
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, count_some, (void *)(i + 1));
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL); /* blocks folded into the retired sum */
	rs_stat_add(RS_C_BYTES_SENT, 1);
	rs_stats_snapshot(after);
	assert_int_equal(after[RS_C_BYTES_SENT] - before[RS_C_BYTES_SENT], 4 * 3000 + 1);
	assert_int_equal(after[RS_C_CALLS_SOCKET + RINGSOCK_FAM_RW] -
				 before[RS_C_CALLS_SOCKET + RINGSOCK_FAM_RW], 1 + 2 + 3 + 4);
	/* blocks of exited threads are reused, not leaked: run again */
	for (long i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, count_some, (void *)0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	rs_stats_snapshot(after);
	assert_int_equal(after[RS_C_BYTES_SENT] - before[RS_C_BYTES_SENT], 8 * 3000 + 1);
}

static void test_public_snapshot(void **state)
{
	(void)state;
	struct ringsock_stats st;
	memset(&st, 0xff, sizeof(st));
	st.size = sizeof(st);
	rs_stat_add(RS_C_SOCKETS_CREATED + RINGSOCK_DOM_INET6, 2);
	rs_stat_add(RS_C_PASSTHROUGH + RINGSOCK_PT_ENGINE_OFF, 5);
	uint64_t raw[RS_C_COUNT];
	rs_stats_snapshot(raw);
	assert_int_equal(ringsock_stats_snapshot(&st), 0);
	assert_int_equal(st.version, 14);
	assert_int_equal(st.sockets_created[RINGSOCK_DOM_INET6], raw[RS_C_SOCKETS_CREATED + RINGSOCK_DOM_INET6]);
	assert_int_equal(st.passthrough[RINGSOCK_PT_ENGINE_OFF], raw[RS_C_PASSTHROUGH + RINGSOCK_PT_ENGINE_OFF]);
	assert_int_equal(st.bytes_received, raw[RS_C_BYTES_RECEIVED]);
	rs_stat_add(RS_C_FILE_SLOTS, 3);
	rs_stats_snapshot(raw);
	assert_int_equal(ringsock_stats_snapshot(&st), 0);
	assert_int_equal(st.file_slots, raw[RS_C_FILE_SLOTS]);
	/* an older, smaller struct: fields beyond its size untouched */
	struct ringsock_stats small;
	memset(&small, 0xab, sizeof(small));
	small.size = offsetof(struct ringsock_stats, sockets_created);
	assert_int_equal(ringsock_stats_snapshot(&small), 0);
	assert_int_equal(small.sockets_created[0], 0xababababababababULL);
	struct ringsock_stats tiny = { .size = 4 };
	assert_int_equal(ringsock_stats_snapshot(&tiny), -1);
	assert_int_equal(ringsock_stats_snapshot(NULL), -1);
}

static void test_format(void **state)
{
	(void)state;
	char buf[4096];
	int n = ringsock_stats_format(buf, sizeof(buf));
	assert_true(n > 0 && n < (int)sizeof(buf));
	assert_int_equal((int)strlen(buf), n);
	assert_non_null(strstr(buf, "stats version="));
	assert_non_null(strstr(buf, "inet6="));
	assert_non_null(strstr(buf, "calls.socket socket="));
	assert_non_null(strstr(buf, "passthrough engine_off="));
	/* truncation behaves like snprintf */
	char small[16];
	assert_int_equal(ringsock_stats_format(small, sizeof(small)), n);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_int_equal(ringsock_stats_format(NULL, 0), n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_summed),
		cmocka_unit_test(test_public_snapshot),
		cmocka_unit_test(test_format),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

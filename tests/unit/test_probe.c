/* Unit tests for the io_uring probe: a real probe on this kernel (skipped
 * where io_uring is unavailable), and the blocker decisions on synthetic
 * probe results. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <linux/io_uring.h>
#include <string.h>

#include "internal.h"

static void test_real_probe(void **state)
{
	(void)state;
	struct rs_probe p;
	rs_probe_run(&p);
	if (!p.available) {
		assert_true(p.setup_errno > 0);
		assert_non_null(rs_probe_blocker(&p, 0));
		skip();
	}
	assert_true(p.last_op >= IORING_OP_RECV);
	assert_true(p.op_ok[IORING_OP_NOP]);
	/* Features the probe found by doing them imply their prerequisites. */
	if (p.mshot_recv)
		assert_true(p.buf_ring);
	if (p.buf_ring_inc)
		assert_true(p.buf_ring);
	assert_string_equal(rs_probe_op_name(IORING_OP_RECV), "RECV");
	assert_null(rs_probe_op_name(-1));
	assert_null(rs_probe_op_name(1000));
}

static struct rs_probe good(void)
{
	struct rs_probe p;
	memset(&p, 0, sizeof(p));
	p.available = 1;
	p.buf_ring = 1;
	p.mshot_recv = 1;
	p.setup_flags_ok = (1u << 12) | (1u << 13); /* SINGLE_ISSUER, DEFER_TASKRUN */
	int ops[] = { IORING_OP_RECV, IORING_OP_SEND, IORING_OP_ASYNC_CANCEL, IORING_OP_POLL_ADD,
		      IORING_OP_ACCEPT };
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		p.op_ok[ops[i]] = 1;
	return p;
}

static void test_blockers(void **state)
{
	(void)state;
	struct rs_probe p = good(), good_p = good();
	assert_null(rs_probe_blocker(&p, 0));
	assert_non_null(strstr(rs_probe_blocker(&p, RS_FEAT_IO_URING), "RINGSOCK_FEATURES_DISABLE"));
	assert_non_null(strstr(rs_probe_blocker(&p, RS_FEAT_BUF_RING), "provided-buffer rings disabled"));
	p.buf_ring = 0;
	assert_non_null(strstr(rs_probe_blocker(&p, 0), "lacks provided-buffer rings"));
	p = good();
	p.mshot_recv = 0;
	assert_non_null(strstr(rs_probe_blocker(&p, 0), "multishot receive"));
	p = good();
	p.setup_flags_ok = 1u << 12;
	assert_non_null(strstr(rs_probe_blocker(&p, 0), "DEFER_TASKRUN"));
	assert_non_null(strstr(rs_probe_blocker(&good_p, RS_FEAT_DEFER_TASKRUN), "disabled by"));
	p = good();
	p.op_ok[IORING_OP_SEND] = 0;
	assert_non_null(strstr(rs_probe_blocker(&p, 0), "IORING_OP_SEND"));
	p = good();
	p.available = 0;
	p.setup_errno = EPERM;
	p.disabled_sysctl = 0;
	assert_non_null(strstr(rs_probe_blocker(&p, 0), "blocked (EPERM"));
	p.disabled_sysctl = 1;
	assert_non_null(strstr(rs_probe_blocker(&p, 0), "io_uring_disabled=1"));
	p.disabled_sysctl = 2;
	assert_non_null(strstr(rs_probe_blocker(&p, 0), "io_uring_disabled=2"));
	p.disabled_sysctl = 0;
	p.setup_errno = ENOSYS;
	assert_non_null(strstr(rs_probe_blocker(&p, 0), "no io_uring"));
	p.setup_errno = ENOMEM;
	assert_non_null(strstr(rs_probe_blocker(&p, 0), "memlock"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_probe),
		cmocka_unit_test(test_blockers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

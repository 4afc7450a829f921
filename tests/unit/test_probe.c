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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* A vulnerabilities directory with the given files (name, line; NULL ends). */
static void vuln_dir(char *dir, const char *const *files)
{
	strcpy(dir, "/tmp/rs-vuln-XXXXXX");
	assert_non_null(mkdtemp(dir));
	for (int i = 0; files[i]; i += 2) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		FILE *f = fopen(path, "w");
		assert_non_null(f);
		fprintf(f, "%s\n", files[i + 1]);
		fclose(f);
	}
}

static void vuln_rm(const char *dir, const char *const *files)
{
	for (int i = 0; files[i]; i += 2) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, files[i]);
		unlink(path);
	}
	rmdir(dir);
}

static int costly_in(const char *const *files, char *why, size_t n)
{
	char dir[64];
	vuln_dir(dir, files);
	int r = rs_probe_costly_calls(dir, why, n);
	vuln_rm(dir, files);
	return r;
}

static void test_costly_calls(void **state)
{
	(void)state;
	char why[512];
	/* this session's EPYC: retpolines and Safe RET */
	const char *const epyc[] = { "meltdown", "Not affected",
		"spectre_v2", "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected",
		"spec_rstack_overflow", "Vulnerable: Safe RET, no microcode", "mds", "Not affected", NULL };
	assert_int_equal(costly_in(epyc, why, sizeof(why)), 1);
	assert_non_null(strstr(why, "spectre_v2 (Mitigation: Retpolines"));
	assert_non_null(strstr(why, ", spec_rstack_overflow (Vulnerable: Safe RET, no microcode)"));
	/* a Xeon with enhanced IBRS and nothing on each call */
	const char *const xeon[] = { "meltdown", "Not affected",
		"spectre_v2", "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; RSB filling; PBRSB-eIBRS: SW sequence",
		"retbleed", "Mitigation: Enhanced IBRS", "mds", "Not affected", "mmio_stale_data", "Not affected",
		"spec_store_bypass", "Mitigation: Speculative Store Bypass disabled via prctl", NULL };
	assert_int_equal(costly_in(xeon, why, sizeof(why)), 0);
	assert_string_equal(why, "");
	/* each kind alone */
	const char *const pti[] = { "meltdown", "Mitigation: PTI", NULL };
	assert_int_equal(costly_in(pti, why, sizeof(why)), 1);
	assert_string_equal(why, "meltdown (Mitigation: PTI)");
	const char *const verw[] = { "mds", "Mitigation: Clear CPU buffers; SMT Host state unknown", NULL };
	assert_int_equal(costly_in(verw, why, sizeof(why)), 1);
	const char *const ibrs[] = { "spectre_v2", "Mitigation: IBRS; IBPB: conditional", NULL };
	assert_int_equal(costly_in(ibrs, why, sizeof(why)), 1);
	const char *const thunk[] = { "retbleed", "Mitigation: untrained return thunk; SMT enabled with STIBP protection", NULL };
	assert_int_equal(costly_in(thunk, why, sizeof(why)), 1);
	/* a short buffer: cut, still a string; no buffer at all */
	assert_int_equal(costly_in(epyc, why, 12), 1);
	assert_int_equal(strlen(why), 11);
	assert_int_equal(costly_in(epyc, NULL, 0), 1);
	/* no such directory: the kernel does not say */
	assert_int_equal(rs_probe_costly_calls("/nonexistent-rs-vuln", why, sizeof(why)), -1);
	/* this machine's answer: one of the three, the same every time */
	int a = rs_probe_costly_calls(NULL, why, sizeof(why));
	char again[512];
	assert_int_equal(rs_probe_costly_calls(NULL, again, sizeof(again)), a);
	assert_string_equal(why, again);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_real_probe),
		cmocka_unit_test(test_blockers),
		cmocka_unit_test(test_costly_calls),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

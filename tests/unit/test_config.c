/* Unit tests for the knob table and parser: every knob with valid,
 * boundary and invalid values, and unknown names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "config.h"

struct diags {
	int n;
	char first[1024];
	char last[1024];
};

static void collect(void *ctx, const char *msg)
{
	struct diags *d = ctx;
	if (d->n++ == 0)
		snprintf(d->first, sizeof(d->first), "%s", msg);
	snprintf(d->last, sizeof(d->last), "%s", msg);
}

/* Parse a single NAME=VALUE; returns the number of diagnostics. */
static int parse1(struct rs_config *cfg, const char *name, const char *val, struct diags *d)
{
	char ent[2048];
	snprintf(ent, sizeof(ent), "%s=%s", name, val);
	char *envp[] = { "PATH=/usr/bin", ent, "HOME=/root", NULL };
	memset(d, 0, sizeof(*d));
	return rs_config_parse(cfg, envp, collect, d);
}

static long long default_of(int id)
{
	struct rs_config cfg;
	rs_config_parse(&cfg, NULL, NULL, NULL);
	return cfg.v[id];
}

static void test_defaults_parse(void **state)
{
	(void)state;
	for (int i = 0; i < RS_K_COUNT; i++) {
		long long v;
		char s[RS_STR_KNOB_MAX], why[128];
		assert_int_equal(rs_knob_parse_value(i, rs_knobs[i].def, &v, s, sizeof(s), why, sizeof(why)), 0);
		assert_true(strncmp(rs_knobs[i].name, "RINGSOCK_", 9) == 0);
		assert_true(strlen(rs_knobs[i].doc) > 10);
		if (rs_knobs[i].type == RS_KT_INT || rs_knobs[i].type == RS_KT_SIZE) {
			assert_true(v >= rs_knobs[i].min && v <= rs_knobs[i].max);
			assert_true(rs_knobs[i].min <= rs_knobs[i].max);
		}
	}
	struct rs_config cfg;
	assert_int_equal(rs_config_parse(&cfg, NULL, NULL, NULL), 0);
	assert_int_equal(cfg.v[RS_K_BUF_COUNT], 512);
	assert_int_equal(cfg.v[RS_K_RECLAIM_THRESHOLD], 2 << 20);
	assert_int_equal(cfg.v[RS_K_LOG], RS_LOG_WARN);
	assert_string_equal(cfg.s[RS_K_STATS], "0");
}

static void test_names_unique(void **state)
{
	(void)state;
	for (int i = 0; i < RS_K_COUNT; i++) {
		assert_int_equal(rs_knob_find(rs_knobs[i].name, strlen(rs_knobs[i].name)), i);
		for (int j = i + 1; j < RS_K_COUNT; j++)
			assert_string_not_equal(rs_knobs[i].name, rs_knobs[j].name);
	}
}

/* Every numeric knob: min and max accepted, min-1 and max+1 refused with
 * the default kept and one diagnostic naming the variable and range. */
static void test_numeric_boundaries(void **state)
{
	(void)state;
	for (int i = 0; i < RS_K_COUNT; i++) {
		const struct rs_knob_def *k = &rs_knobs[i];
		if (k->type != RS_KT_INT && k->type != RS_KT_SIZE)
			continue;
		struct rs_config cfg;
		struct diags d;
		char v[64], range[64];
		snprintf(v, sizeof(v), "%lld", k->min);
		assert_int_equal(parse1(&cfg, k->name, v, &d), 0);
		assert_int_equal(cfg.v[i], k->min);
		assert_true(cfg.from_env[i]);
		snprintf(v, sizeof(v), "%lld", k->max);
		assert_int_equal(parse1(&cfg, k->name, v, &d), 0);
		assert_int_equal(cfg.v[i], k->max);
		snprintf(v, sizeof(v), "%lld", k->max + 1);
		assert_int_equal(parse1(&cfg, k->name, v, &d), 1);
		assert_int_equal(cfg.v[i], default_of(i));
		assert_false(cfg.from_env[i]);
		assert_non_null(strstr(d.last, k->name));
		assert_non_null(strstr(d.last, "out of range"));
		snprintf(range, sizeof(range), "%lld..%lld", k->min, k->max);
		assert_non_null(strstr(d.last, range));
		if (k->min > 0) {
			snprintf(v, sizeof(v), "%lld", k->min - 1);
			assert_int_equal(parse1(&cfg, k->name, v, &d), 1);
			assert_int_equal(cfg.v[i], default_of(i));
		}
	}
}

/* Every knob refuses garbage, empty values and trailing junk. */
static void test_invalid_values(void **state)
{
	(void)state;
	static const char *const bad_numbers[] = { "", "abc", "12x", " 5", "5 ", "-1", "+5", "0x10",
						   "1.5", "99999999999999999999999" };
	for (int i = 0; i < RS_K_COUNT; i++) {
		const struct rs_knob_def *k = &rs_knobs[i];
		struct rs_config cfg;
		struct diags d;
		for (size_t b = 0; b < sizeof(bad_numbers) / sizeof(bad_numbers[0]); b++) {
			const char *val = bad_numbers[b];
			/* For strings only the empty value is invalid. */
			if (k->type == RS_KT_STRING && *val)
				continue;
			int n = parse1(&cfg, k->name, val, &d);
			assert_int_equal(n, 1);
			assert_non_null(strstr(d.last, k->name));
			assert_non_null(strstr(d.last, "expected"));
			assert_non_null(strstr(d.last, "using the default"));
			assert_int_equal(cfg.v[i], default_of(i));
		}
	}
}

static void test_sizes_and_bools(void **state)
{
	(void)state;
	struct rs_config cfg;
	struct diags d;
	assert_int_equal(parse1(&cfg, "RINGSOCK_BUF_SIZE", "4K", &d), 0);
	assert_int_equal(cfg.v[RS_K_BUF_SIZE], 4096);
	assert_int_equal(parse1(&cfg, "RINGSOCK_BUF_SIZE", "16KiB", &d), 0);
	assert_int_equal(cfg.v[RS_K_BUF_SIZE], 16384);
	assert_int_equal(parse1(&cfg, "RINGSOCK_RECLAIM_THRESHOLD", "3m", &d), 0);
	assert_int_equal(cfg.v[RS_K_RECLAIM_THRESHOLD], 3 << 20);
	assert_int_equal(parse1(&cfg, "RINGSOCK_RECLAIM_THRESHOLD", "1G", &d), 0);
	assert_int_equal(parse1(&cfg, "RINGSOCK_RECLAIM_THRESHOLD", "2G", &d), 1); /* > max */
	assert_int_equal(parse1(&cfg, "RINGSOCK_BUF_SIZE", "4Q", &d), 1);
	assert_non_null(strstr(d.last, "unit suffix"));
	assert_int_equal(parse1(&cfg, "RINGSOCK_BUF_SIZE", "4KiBs", &d), 1);
	assert_int_equal(parse1(&cfg, "RINGSOCK_BUF_COUNT", "4K", &d), 1); /* INT takes no suffix */
	static const char *const yes[] = { "1", "yes", "TRUE", "On" };
	static const char *const no[] = { "0", "no", "false", "OFF" };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(parse1(&cfg, "RINGSOCK_DISABLE", yes[i], &d), 0);
		assert_int_equal(cfg.v[RS_K_DISABLE], 1);
		assert_int_equal(parse1(&cfg, "RINGSOCK_DISABLE", no[i], &d), 0);
		assert_int_equal(cfg.v[RS_K_DISABLE], 0);
	}
	assert_int_equal(parse1(&cfg, "RINGSOCK_DISABLE", "2", &d), 1);
	assert_int_equal(parse1(&cfg, "RINGSOCK_DISABLE", "maybe", &d), 1);
}

static void test_enums_flags_strings(void **state)
{
	(void)state;
	struct rs_config cfg;
	struct diags d;
	char buf[256];
	assert_int_equal(parse1(&cfg, "RINGSOCK_LOG", "debug", &d), 0);
	assert_int_equal(cfg.v[RS_K_LOG], RS_LOG_DEBUG);
	assert_int_equal(parse1(&cfg, "RINGSOCK_LOG", "ERROR", &d), 0);
	assert_int_equal(cfg.v[RS_K_LOG], RS_LOG_ERROR);
	assert_int_equal(parse1(&cfg, "RINGSOCK_LOG", "verbose", &d), 1);
	assert_non_null(strstr(d.last, "error,warn,info,debug"));
	assert_int_equal(parse1(&cfg, "RINGSOCK_RECLAIM", "per-op", &d), 0);
	rs_knob_format(&cfg, RS_K_RECLAIM, buf, sizeof(buf));
	assert_string_equal(buf, "per-op");
	assert_int_equal(cfg.v[RS_K_RECLAIM], RS_RECLAIM_PER_OP);
	/* the named values of the ENUM knobs follow their choices */
	assert_int_equal(parse1(&cfg, "RINGSOCK_RECLAIM", "coalesced", &d), 0);
	assert_int_equal(cfg.v[RS_K_RECLAIM], RS_RECLAIM_COALESCED);
	assert_int_equal(parse1(&cfg, "RINGSOCK_WAIT", "ring", &d), 0);
	assert_int_equal(cfg.v[RS_K_WAIT], RS_WAIT_RING);
	assert_int_equal(parse1(&cfg, "RINGSOCK_WAIT", "epoll", &d), 0);
	assert_int_equal(cfg.v[RS_K_WAIT], RS_WAIT_EPOLL);
	assert_int_equal(parse1(&cfg, "RINGSOCK_BLOCKING", "engine", &d), 0);
	assert_int_equal(cfg.v[RS_K_BLOCKING], RS_BLOCKING_ENGINE);
	assert_int_equal(parse1(&cfg, "RINGSOCK_BLOCKING", "kernel", &d), 0);
	assert_int_equal(cfg.v[RS_K_BLOCKING], RS_BLOCKING_KERNEL);
	const char *setups[] = { "auto", "defer", "coop", "plain" };
	const int setup_vals[] = { RS_SETUP_AUTO, RS_SETUP_DEFER, RS_SETUP_COOP, RS_SETUP_PLAIN };
	for (int i = 0; i < 4; i++) {
		assert_int_equal(parse1(&cfg, "RINGSOCK_SETUP", setups[i], &d), 0);
		assert_int_equal(cfg.v[RS_K_SETUP], setup_vals[i]);
	}

	assert_int_equal(parse1(&cfg, "RINGSOCK_FEATURES_DISABLE", "buf_ring,recv_cap", &d), 0);
	assert_int_equal(cfg.v[RS_K_FEATURES_DISABLE], RS_FEAT_BUF_RING | RS_FEAT_RECV_CAP);
	rs_knob_format(&cfg, RS_K_FEATURES_DISABLE, buf, sizeof(buf));
	assert_string_equal(buf, "buf_ring,recv_cap");
	assert_int_equal(parse1(&cfg, "RINGSOCK_FEATURES_DISABLE", "io_uring", &d), 0);
	assert_int_equal(cfg.v[RS_K_FEATURES_DISABLE], RS_FEAT_IO_URING);
	assert_int_equal(parse1(&cfg, "RINGSOCK_FEATURES_DISABLE", "none", &d), 0);
	assert_int_equal(cfg.v[RS_K_FEATURES_DISABLE], 0);
	assert_int_equal(parse1(&cfg, "RINGSOCK_FEATURES_DISABLE", "buf_ring,,recv_cap", &d), 1);
	/* features the engine does not use are not values */
	assert_int_equal(parse1(&cfg, "RINGSOCK_FEATURES_DISABLE", "send_zc", &d), 1);
	assert_int_equal(parse1(&cfg, "RINGSOCK_FEATURES_DISABLE", "buf_ring,warp_drive", &d), 1);
	assert_int_equal(cfg.v[RS_K_FEATURES_DISABLE], 0);

	assert_int_equal(parse1(&cfg, "RINGSOCK_STATS", "/tmp/x.%p", &d), 0);
	assert_string_equal(cfg.s[RS_K_STATS], "/tmp/x.%p");
	char longv[RS_STR_KNOB_MAX + 10];
	memset(longv, 'a', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = 0;
	assert_int_equal(parse1(&cfg, "RINGSOCK_STATS", longv, &d), 1);
	assert_string_equal(cfg.s[RS_K_STATS], "0");
}

static void test_unknown_names(void **state)
{
	(void)state;
	struct rs_config cfg;
	struct diags d;
	assert_int_equal(parse1(&cfg, "RINGSOCK_BUF_CONUT", "5", &d), 1);
	assert_non_null(strstr(d.last, "unknown variable RINGSOCK_BUF_CONUT"));
	assert_non_null(strstr(d.last, "did you mean RINGSOCK_BUF_COUNT?"));
	assert_int_equal(parse1(&cfg, "RINGSOCK_COMPLETELY_DIFFERENT", "1", &d), 1);
	assert_null(strstr(d.last, "did you mean"));
	/* A name without '=' and non-RINGSOCK names */
	char *envp[] = { "RINGSOCKX=1", "XRINGSOCK_LOG=1", "RINGSOCK_LOG", NULL };
	memset(&d, 0, sizeof(d));
	assert_int_equal(rs_config_parse(&cfg, envp, collect, &d), 1); /* RINGSOCK_LOG with no value: empty */
	/* Several problems: each reported once, all good values applied. */
	char *envp2[] = { "RINGSOCK_BUF_COUNT=64", "RINGSOCK_TYPO=1", "RINGSOCK_SEND_BATCH=0",
			  "RINGSOCK_LOG=info", NULL };
	memset(&d, 0, sizeof(d));
	assert_int_equal(rs_config_parse(&cfg, envp2, collect, &d), 2);
	assert_int_equal(d.n, 2);
	assert_int_equal(cfg.v[RS_K_BUF_COUNT], 64);
	assert_int_equal(cfg.v[RS_K_SEND_BATCH], 32);
	assert_int_equal(cfg.v[RS_K_LOG], RS_LOG_INFO);
}

/* Messages carry printable ASCII only, and say "ignored"/"using the
 * default" only when the program is not refused for the problem. */
static void test_message_wording(void **state)
{
	(void)state;
	struct rs_config cfg;
	struct diags d;
	char *bad_name[] = { "RINGSOCK_F\xff\x1bOO=1", NULL };
	memset(&d, 0, sizeof(d));
	assert_int_equal(rs_config_parse(&cfg, bad_name, collect, &d), 1);
	assert_non_null(strstr(d.last, "RINGSOCK_F\\xff\\x1bOO ignored"));
	char *bad_value[] = { "RINGSOCK_BUF_COUNT=\xfe", NULL };
	memset(&d, 0, sizeof(d));
	assert_int_equal(rs_config_parse(&cfg, bad_value, collect, &d), 1);
	assert_non_null(strstr(d.last, "'\\xfe'"));
	assert_non_null(strstr(d.last, "using the default"));
	char *strict[] = { "RINGSOCK_TYPO=1", "RINGSOCK_BUF_COUNT=x", "RINGSOCK_STRICT=1", NULL };
	memset(&d, 0, sizeof(d));
	assert_int_equal(rs_config_parse(&cfg, strict, collect, &d), 2);
	assert_null(strstr(d.first, "ignored"));
	assert_null(strstr(d.last, "using the default"));
	memset(&d, 0, sizeof(d));
	assert_int_equal(rs_config_parse_ex(&cfg, bad_value, collect, &d, 1), 1);
	assert_null(strstr(d.last, "using the default"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults_parse),
		cmocka_unit_test(test_names_unique),
		cmocka_unit_test(test_numeric_boundaries),
		cmocka_unit_test(test_invalid_values),
		cmocka_unit_test(test_sizes_and_bools),
		cmocka_unit_test(test_enums_flags_strings),
		cmocka_unit_test(test_unknown_names),
		cmocka_unit_test(test_message_wording),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

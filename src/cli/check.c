/* check.c - `ringsock check` and `ringsock knobs`. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>

#include "cli.h"
#include "internal.h"
#include "netinfo.h"
#include "route.h"

static const char *const setup_flag_names[] = {
	"IOPOLL", "SQPOLL", "SQ_AFF", "CQSIZE", "CLAMP", "ATTACH_WQ", "R_DISABLED", "SUBMIT_ALL",
	"COOP_TASKRUN", "TASKRUN_FLAG", "SQE128", "CQE32", "SINGLE_ISSUER", "DEFER_TASKRUN",
	"NO_MMAP", "REGISTERED_FD_ONLY", "NO_SQARRAY",
};
static const char *const feat_names[] = {
	"SINGLE_MMAP", "NODROP", "SUBMIT_STABLE", "RW_CUR_POS", "CUR_PERSONALITY", "FAST_POLL",
	"POLL_32BITS", "SQPOLL_NONFIXED", "EXT_ARG", "NATIVE_WORKERS", "RSRC_TAGS", "CQE_SKIP",
	"LINKED_FILE", "REG_REG_RING", "RECVSEND_BUNDLE", "MIN_TIMEOUT", "RW_ATTR", "NO_IOWAIT",
};

/* "yes", "no", or "yes (disabled by RINGSOCK_FEATURES_DISABLE)". */
static const char *feat(int have, unsigned disabled, unsigned bit)
{
	if (!have)
		return "no";
	return (disabled & bit) ? "yes (treated as missing: RINGSOCK_FEATURES_DISABLE)" : "yes";
}

const char *rs_cli_io_uring_blocker(const struct rs_config *cfg)
{
	static struct rs_probe p;
	rs_probe_run(&p);
	return rs_probe_blocker(&p, (unsigned)cfg->v[RS_K_FEATURES_DISABLE]);
}

static void print_limit(const char *label, int res, unsigned long unit, const char *uname)
{
	struct rlimit rl;
	if (getrlimit(res, &rl) != 0)
		return;
	printf("%-26s", label);
	if (rl.rlim_cur == RLIM_INFINITY)
		printf("unlimited");
	else
		printf("%llu%s", (unsigned long long)rl.rlim_cur / unit, uname);
	if (rl.rlim_max == RLIM_INFINITY)
		printf(" (hard: unlimited)\n");
	else
		printf(" (hard: %llu%s)\n", (unsigned long long)rl.rlim_max / unit, uname);
}

static void print_knobs(const struct rs_config *cfg)
{
	char buf[RS_STR_KNOB_MAX];
	printf("knobs (effective values; * = set in the environment):\n");
	for (int i = 0; i < RS_K_COUNT; i++) {
		rs_knob_format(cfg, i, buf, sizeof(buf));
		printf("  %c %s=%s\n", cfg->from_env[i] ? '*' : ' ', rs_knobs[i].name, buf);
	}
}

/* ---- routes and the send policy (route.c decides, for the engine too) ---- */

struct route_ctx {
	const struct rs_config *cfg;
	const struct rs_probe *p;
};

static void print_policy(const struct route_ctx *x, const struct rs_route *r, int err, const char *indent)
{
	if (err)
		printf("%sroute lookup failed (%s): the engine uses neither zero-copy nor UDP GSO there\n", indent,
		       strerror(-err));
	else
		printf("%sdevice %s (%s%s, mtu %u%s)\n", indent, r->ifname, r->driver[0] ? r->driver : "driver unknown",
		       r->local ? ", this host" : r->physical ? ", on a bus" : ", virtual", r->mtu,
		       r->txcsum ? ", checksum offload" : "");
	long zc = x->cfg->v[RS_K_ZEROCOPY];
	printf("%s  zero-copy sends: ", indent);
	if (!x->p->send_zc)
		printf("no (the kernel lacks IORING_OP_SEND_ZC)\n");
	else if (zc == RS_ZC_NEVER)
		printf("no (RINGSOCK_ZEROCOPY=never)\n");
	else if (zc == RS_ZC_ALWAYS)
		printf("yes, batches of %lld bytes or more (RINGSOCK_ZEROCOPY=always)\n", (long long)x->cfg->v[RS_K_ZEROCOPY_MIN]);
	else if (r->zc)
		printf("yes, batches of %lld bytes or more (%s)\n", (long long)x->cfg->v[RS_K_ZEROCOPY_MIN], r->zc_why);
	else
		printf("no (%s)\n", r->zc_why);
	printf("%s  UDP GSO: ", indent);
	if (!x->cfg->v[RS_K_UDP] || !x->cfg->v[RS_K_UDP_SEND_BATCH])
		printf("no (RINGSOCK_%s=0)\n", x->cfg->v[RS_K_UDP] ? "UDP_SEND_BATCH" : "UDP");
	else if (r->gso_max)
		printf("runs of datagrams up to %u bytes (%s)\n", r->gso_max, r->gso_why);
	else
		printf("no (%s)\n", r->gso_why);
}

static void route_line(const char *prefix, const struct sockaddr *probe, socklen_t len, const char *dev, void *arg)
{
	printf("  %s dev %s\n", prefix, dev);
	if (!probe) {
		printf("    (no gateway: ask about an address with check --route ADDR)\n");
		return;
	}
	struct rs_route r;
	int e = rs_route_query(probe, len, &r);
	print_policy(arg, &r, e, "    ");
}

/* ringsock check --route ADDR: the engine's own lookup for one address. */
static int check_route(const struct route_ctx *x, const char *addr)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	const struct sockaddr *sa;
	socklen_t sl;
	if (inet_pton(AF_INET, addr, &s4.sin_addr) == 1) {
		sa = (struct sockaddr *)&s4;
		sl = sizeof(s4);
	} else if (inet_pton(AF_INET6, addr, &s6.sin6_addr) == 1) {
		sa = (struct sockaddr *)&s6;
		sl = sizeof(s6);
	} else {
		fprintf(stderr, "ringsock: check --route: '%s' is not an IPv4 or IPv6 address\n", addr);
		return 2;
	}
	struct rs_route r;
	int e = rs_route_query(sa, sl, &r);
	printf("route to %s:\n", addr);
	print_policy(x, &r, e, "  ");
	return e ? 1 : 0;
}

int rs_cli_check(const struct rs_config *cfg, int knobs_only, char **routes, int nroutes)
{
	struct utsname u;
	struct rs_probe p;
	unsigned dis = (unsigned)cfg->v[RS_K_FEATURES_DISABLE];

	if (knobs_only) {
		print_knobs(cfg);
		return 0;
	}
	if (nroutes) {
		rs_probe_run(&p);
		struct route_ctx x = { cfg, &p };
		int rc = 0;
		for (int i = 0; i < nroutes; i++) {
			int e = check_route(&x, routes[i]);
			rc = e > rc ? e : rc;
		}
		return rc;
	}
	printf("ringsock %s\n", RINGSOCK_VERSION_STRING);
	if (uname(&u) == 0)
		printf("%-26s%s %s %s\n", "kernel:", u.sysname, u.release, u.machine);
	rs_probe_run(&p);
	printf("%-26s%s\n", "kernel.io_uring_disabled:",
	       p.disabled_sysctl < 0 ? "(not present)"
	       : p.disabled_sysctl == 0 ? "0 (enabled)"
	       : p.disabled_sysctl == 1 ? "1 (only io_uring_group members and CAP_SYS_ADMIN)"
				       : "2 (disabled)");
	if (!p.available) {
		printf("%-26sunavailable: io_uring_setup failed: %s\n", "io_uring:",
		       strerror(p.setup_errno));
	} else {
		printf("%-26savailable\n", "io_uring:");
		printf("%-26s", "  setup flags:");
		for (unsigned i = 0; i < sizeof(setup_flag_names) / sizeof(setup_flag_names[0]); i++)
			if (p.setup_flags_ok & (1u << i))
				printf(" %s", setup_flag_names[i]);
		printf("\n%-26s", "  features:");
		for (unsigned i = 0; i < sizeof(feat_names) / sizeof(feat_names[0]); i++)
			if (p.features & (1u << i))
				printf(" %s", feat_names[i]);
		int known = 0;
		for (int i = 0; i < 64; i++)
			known += p.op_ok[i];
		printf("\n%-26s%d supported (last opcode %d)\n", "  opcodes:", known, p.last_op);
		static const int used[] = { 13, 26, 27, 9, 10, 6, 14, 15, 34, 19, 40, 47, 48, 59 };
		printf("%-26s", "  opcodes ringsock uses:");
		for (unsigned i = 0; i < sizeof(used) / sizeof(used[0]); i++)
			printf(" %s%s", rs_probe_op_name(used[i]), p.op_ok[used[i]] ? "" : "(missing)");
		printf("\n");
		printf("%-26s%s\n", "  provided-buffer rings:", feat(p.buf_ring, dis, RS_FEAT_BUF_RING));
		printf("%-26s%s\n", "  incremental buffers:", feat(p.buf_ring_inc, 0, 0));
		printf("%-26s%s\n", "  multishot accept:", feat(p.mshot_accept, 0, 0));
		printf("%-26s%s\n", "  multishot recv:", feat(p.mshot_recv, dis, RS_FEAT_MSHOT_RECV));
		printf("%-26s%s\n", "  recv/send bundles:", feat(p.bundle, dis, RS_FEAT_BUNDLE));
		printf("%-26s%s\n", "  registered files:", feat(p.sparse_files, dis, RS_FEAT_FIXED_FILES));
		printf("%-26s%s%s\n", "  send_zc:", feat(p.send_zc, 0, 0),
		       p.send_zc && rs_probe_zc_usage() ? ", reports copies" : "");
		printf("%-26s%s\n", "  SINGLE_ISSUER:",
		       feat(!!(p.setup_flags_ok & (1u << 12)), dis, RS_FEAT_SINGLE_ISSUER));
		printf("%-26s%s\n", "  DEFER_TASKRUN:",
		       feat(!!(p.setup_flags_ok & (1u << 13)), dis, RS_FEAT_DEFER_TASKRUN));
		printf("%-26s%s\n", "  COOP_TASKRUN:",
		       feat(!!(p.setup_flags_ok & (1u << 8)), 0, 0));
	}
	print_limit("memlock limit:", RLIMIT_MEMLOCK, 1024, " KiB");
	print_limit("open files limit:", RLIMIT_NOFILE, 1, "");
	const char *blocker = rs_probe_blocker(&p, dis);
	if (cfg->v[RS_K_DISABLE])
		printf("%-26sRINGSOCK_DISABLE=1: pure pass-through\n", "sockets:");
	else if (blocker)
		printf("%-26spassed through to the kernel: %s\n", "sockets:", blocker);
	else if (cfg->v[RS_K_SETUP] >= RS_SETUP_COOP)
		printf("%-26spassed through to the kernel: RINGSOCK_SETUP=%s (the engine needs "
		       "DEFER_TASKRUN)\n", "sockets:", cfg->v[RS_K_SETUP] == RS_SETUP_COOP ? "coop" : "plain");
	else
		printf("%-26sconnected TCP sockets%s are served by the io_uring engine%s; "
		       "%slisteners go to the kernel\n", "sockets:",
		       cfg->v[RS_K_UDP] ? " and UDP receives (and sends, unconnected)" : "",
		       cfg->v[RS_K_BLOCKING] == RS_BLOCKING_KERNEL ? " (blocking ones go to the kernel: RINGSOCK_BLOCKING=kernel)" : "",
		       cfg->v[RS_K_UDP] ? "" : "UDP (RINGSOCK_UDP=0) and ");
	char why[512];
	int costly = rs_probe_costly_calls(NULL, why, sizeof(why));
	long mode = cfg->v[RS_K_REQUEST_RESPONSE];
	int batched = rs_rr_engine(mode, costly);
	printf("%-26s%s%s\n", "costly system calls:",
	       costly > 0 ? "yes, mitigations on every call: " : costly == 0 ? "no (no mitigation on every call reported)"
	       : "unknown (no /sys/devices/system/cpu/vulnerabilities)", costly > 0 ? why : "");
	printf("%-26s%s (RINGSOCK_REQUEST_RESPONSE=%s)\n", "request-response:",
	       batched ? "batched by the engine" : "the kernel's calls after 16 rounds",
	       mode == RS_RR_AUTO ? (batched ? "auto: costly calls" : "auto") : batched ? "engine" : "kernel");
	printf("network links:\n");
	rs_netinfo_print_links(stdout, "  ");
	printf("routes and send policy (the engine asks the kernel per destination: check --route ADDR):\n");
	struct route_ctx x = { cfg, &p };
	char err[256];
	if (rs_netinfo_routes(route_line, &x, err, sizeof(err)) < 0)
		printf("  (%s)\n", err);
	print_knobs(cfg);
	return blocker ? 1 : 0;
}

/* Escape a string for roff: backslashes and leading dots/quotes. */
static void roff(FILE *out, const char *s)
{
	if (*s == '.' || *s == '\'')
		fputs("\\&", out);
	for (; *s; s++) {
		if (*s == '\\')
			fputs("\\e", out);
		else if (*s == '-')
			fputs("\\-", out);
		else
			fputc(*s, out);
	}
}

void rs_cli_knobs(FILE *out, int man)
{
	char acc[256];
	if (man) {
		fputs(".SH ENVIRONMENT\n"
		      "Every variable is read once, at start-up.  A bad value (not a number, out of\n"
		      "range, empty, trailing characters) prints one warning naming the variable,\n"
		      "the value and what is accepted, and the default is kept; with\n"
		      ".B RINGSOCK_STRICT=1\n"
		      "the process refuses to start instead.  Unknown\n"
		      ".B RINGSOCK_*\n"
		      "names are reported as likely typos.  Under AT_SECURE (setuid and setgid\n"
		      "programs) the environment is ignored.\n",
		      out);
		for (int i = 0; i < RS_K_COUNT; i++) {
			rs_knob_describe(i, acc, sizeof(acc));
			fprintf(out, ".TP\n.B %s\n", rs_knobs[i].name);
			roff(out, rs_knobs[i].doc);
			fputs("\nAccepts ", out);
			roff(out, acc);
			fputs("; default\n.BR ", out);
			roff(out, rs_knobs[i].def);
			fputs(" .\n", out);
		}
		return;
	}
	for (int i = 0; i < RS_K_COUNT; i++) {
		rs_knob_describe(i, acc, sizeof(acc));
		fprintf(out, "%s (default %s)\n    %s\n    accepts %s\n", rs_knobs[i].name,
			rs_knobs[i].def, rs_knobs[i].doc, acc);
	}
}

/* main.c - the ringsock command: launcher, `check`, `knobs`; `stat` is
 * stat.c's, `enable` and `disable` service.c's. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "internal.h"

extern char **environ;

static const char usage[] =
	"Usage: ringsock [OPTIONS] [--] PROGRAM [ARGS...]\n"
	"       ringsock stat [--sockets] [--json] [--watch[=SECONDS]] [--count N] [PID...]\n"
	"       ringsock stat --openmetrics [PID...] | --serve [ADDR:]PORT\n"
	"       ringsock check [--knobs] [--route ADDR]...\n"
	"       ringsock knobs [--man]\n"
	"       ringsock enable UNIT [--profile NAME] [--set KNOB=VALUE]... [--dir DIR]\n"
	"       ringsock disable UNIT [--dir DIR]\n"
	"\n"
	"Run PROGRAM with libringsock.so preloaded: its connected TCP sockets, and\n"
	"its UDP sockets' receives (and an unconnected one's sends, in batches),\n"
	"are served by the io_uring engine, every other socket by the kernel as\n"
	"before.\n"
	"The program's output and exit status are its own.\n"
	"\n"
	"Options:\n"
	"  -s, --set KNOB=VALUE   set a knob (the RINGSOCK_ prefix may be left out);\n"
	"                         repeatable, applied after the profile\n"
	"  -p, --profile NAME     preset knobs: latency or throughput\n"
	"      --stats[=DEST]     print counters at exit: to stderr, or to the file DEST\n"
	"                         (%p in DEST becomes the process id)\n"
	"  -d, --disable          pure pass-through (RINGSOCK_DISABLE=1)\n"
	"  -l, --library PATH     preload this libringsock.so instead of the installed one\n"
	"  -q, --quiet            do not warn when PROGRAM cannot be accelerated\n"
	"  -h, --help             show this help\n"
	"  -V, --version          show the version\n"
	"\n"
	"Commands:\n"
	"  stat                   processes running under ringsock: engine state, sockets,\n"
	"                         bytes, calls and rates; --sockets adds each socket with\n"
	"                         the engine's and the kernel's view (rtt, cwnd, queues);\n"
	"                         --watch refreshes (--count N times); --json for\n"
	"                         scripts; PIDs to choose; --openmetrics prints them\n"
	"                         as Prometheus metrics, --serve [ADDR:]PORT serves\n"
	"                         them over HTTP (GET /metrics, 127.0.0.1 by default)\n"
	"                         (`ringsock -- stat` runs the stat program)\n"
	"  check                  what this machine's kernel supports, and the knobs\n"
	"  check --knobs          only the effective knob values\n"
	"  check --route ADDR     the route to ADDR and what the engine does on it\n"
	"                         (zero-copy sends, UDP GSO)\n"
	"  knobs                  every RINGSOCK_* knob with its default and range\n"
	"  enable UNIT            a systemd drop-in that starts the service UNIT under\n"
	"                         the library, with the profile's and --set's knobs\n"
	"                         (checked as for PROGRAM); in /etc/systemd/system or\n"
	"                         --dir DIR\n"
	"  disable UNIT           remove that drop-in\n"
	"\n"
	"Bad knobs are refused before PROGRAM starts (exit status 2).  Exit status:\n"
	"PROGRAM's; 2 for a usage error or a bad knob; 126 if PROGRAM cannot be run;\n"
	"127 if it is not found.  See ringsock(1) and, for the knobs, ringsock(7).\n";

struct profile {
	const char *name;
	const char *doc;
	const char *const sets[6];
};
static const struct profile profiles[] = {
	{ "latency", "submit every send at once; per-socket buffer caches; blocking sockets on the kernel path",
	  { "RINGSOCK_SEND_BATCH=1", "RINGSOCK_RX_CACHE=1", "RINGSOCK_TX_CACHE=1", "RINGSOCK_BLOCKING=kernel", NULL } },
	{ "throughput", "bigger batches and buffers",
	  { "RINGSOCK_SEND_BATCH=128", "RINGSOCK_BUF_COUNT=2048", "RINGSOCK_BUF_SIZE=16384", NULL } },
};

const char *const *rs_cli_profile(const char *name)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strcmp(profiles[i].name, name))
			return profiles[i].sets;
	fprintf(stderr, "ringsock: unknown profile '%s' (latency, throughput)\n", name);
	return NULL;
}

int rs_cli_knob_name(const char *kv, char *name, size_t len)
{
	const char *eq = strchr(kv, '=');
	if (!eq || eq == kv) {
		fprintf(stderr, "ringsock: --set needs KNOB=VALUE, got '%s'\n", kv);
		return -1;
	}
	size_t nl = (size_t)(eq - kv);
	int has_prefix = nl >= 9 && !strncmp(kv, "RINGSOCK_", 9);
	if (nl + 10 > len) {
		fprintf(stderr, "ringsock: knob name too long in '%s'\n", kv);
		return -1;
	}
	snprintf(name, len, "%s%.*s", has_prefix ? "" : "RINGSOCK_", (int)nl, kv);
	for (char *p = name; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	if (rs_knob_find(name, strlen(name)) < 0) {
		fprintf(stderr, "ringsock: unknown knob %s (see 'ringsock knobs')\n", name);
		return -1;
	}
	return 0;
}

static int set_knob(const char *kv)
{
	char name[256];
	if (rs_cli_knob_name(kv, name, sizeof(name)) < 0)
		return -1;
	setenv(name, strchr(kv, '=') + 1, 1);
	return 0;
}

static void print_diag(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "ringsock: %s\n", msg);
}

int rs_cli_knobs_check(char *const *envp, struct rs_config *cfg, const char *refusal)
{
	int problems = rs_config_parse_ex(cfg, envp, print_diag, NULL, 1);
	if (problems)
		fprintf(stderr, "ringsock: %s: %d problem%s with RINGSOCK_* knobs\n", refusal, problems,
			problems == 1 ? "" : "s");
	return problems ? -1 : 0;
}

/* Directory of this executable. */
static int self_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	char *slash = strrchr(buf, '/');
	if (!slash)
		return -1;
	*slash = 0;
	return 0;
}

int rs_cli_find_library(char *out, size_t len)
{
	char dir[PATH_MAX - 64], cand[PATH_MAX];
	if (self_dir(dir, sizeof(dir)) == 0) {
		const char *rel[] = { "/libringsock.so", "/../lib/libringsock.so" };
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(cand, sizeof(cand), "%s%s", dir, rel[i]);
			if (access(cand, R_OK) == 0 && realpath(cand, out))
				return 0;
		}
	}
	snprintf(cand, sizeof(cand), "%s/libringsock.so", RS_LIBDIR);
	if (access(cand, R_OK) == 0) {
		snprintf(out, len, "%s", cand);
		return 0;
	}
	snprintf(cand, sizeof(cand), "%s/libringsock.so.%d", RS_LIBDIR, RINGSOCK_VERSION_MAJOR);
	if (access(cand, R_OK) == 0) {
		snprintf(out, len, "%s", cand);
		return 0;
	}
	fprintf(stderr, "ringsock: cannot find libringsock.so (looked next to this program and in %s); use --library\n",
		RS_LIBDIR);
	return -1;
}

/* Resolve PROGRAM like execvp; returns 0 with the path, or -errno. */
static int find_program(const char *prog, char *out, size_t len)
{
	if (strchr(prog, '/')) {
		snprintf(out, len, "%s", prog);
		return access(prog, F_OK) == 0 ? 0 : -errno;
	}
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	int err = -ENOENT;
	while (*path) {
		const char *c = strchr(path, ':');
		size_t dl = c ? (size_t)(c - path) : strlen(path);
		snprintf(out, len, "%.*s/%s", (int)(dl ? dl : 1), dl ? path : ".", prog);
		struct stat st;
		if (stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			err = -EACCES;
		}
		if (!c)
			break;
		path = c + 1;
	}
	return err;
}

/* Prepend lib to LD_PRELOAD unless it is already there. */
static void add_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	if (!old || !*old) {
		setenv("LD_PRELOAD", lib, 1);
		return;
	}
	size_t ll = strlen(lib);
	for (const char *p = old; *p;) {
		size_t n = strcspn(p, ": ");
		if (n == ll && !strncmp(p, lib, n))
			return;
		p += n;
		p += strspn(p, ": ");
	}
	char *v = malloc(ll + strlen(old) + 2);
	if (!v)
		return;
	sprintf(v, "%s:%s", lib, old);
	setenv("LD_PRELOAD", v, 1);
	free(v);
}

enum { OPT_STATS = 256 };

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "set", required_argument, NULL, 's' },
		{ "profile", required_argument, NULL, 'p' },
		{ "stats", optional_argument, NULL, OPT_STATS },
		{ "disable", no_argument, NULL, 'd' },
		{ "library", required_argument, NULL, 'l' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "knobs", no_argument, NULL, 'k' },
		{ "man", no_argument, NULL, 'm' },
		{ NULL, 0, NULL, 0 },
	};
	const char *library = NULL, *profile = NULL;
	const char *sets[64];
	int nsets = 0, quiet = 0, knobs_flag = 0, man_flag = 0, c;

	/* Options stop at the first non-option: PROGRAM's own options are its. */
	while ((c = getopt_long(argc, argv, "+s:p:dl:qhV", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (nsets == 62) {
				fprintf(stderr, "ringsock: too many --set options\n");
				return 2;
			}
			sets[nsets++] = optarg;
			break;
		case 'p':
			profile = optarg;
			break;
		case OPT_STATS: {
			static char buf[RS_STR_KNOB_MAX + 16];
			snprintf(buf, sizeof(buf), "STATS=%s", optarg ? optarg : "stderr");
			sets[nsets++] = buf;
			break;
		}
		case 'd':
			sets[nsets++] = "DISABLE=1";
			break;
		case 'l':
			library = optarg;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case 'V':
			printf("ringsock %s\n", RINGSOCK_VERSION_STRING);
			return 0;
		case 'k':
			knobs_flag = 1;
			break;
		case 'm':
			man_flag = 1;
			break;
		default:
			fputs("Try 'ringsock --help'.\n", stderr);
			return 2;
		}
	}

	const char *cmd = optind < argc ? argv[optind] : NULL;
	/* `ringsock stat`: ours; `ringsock -- stat FILE` runs the program */
	if (cmd && !strcmp(cmd, "stat") && strcmp(argv[optind - 1], "--"))
		return rs_cli_stat(argc - optind - 1, argv + optind + 1);
	if (cmd && (!strcmp(cmd, "enable") || !strcmp(cmd, "disable")) && strcmp(argv[optind - 1], "--")) {
		if (profile || nsets || library || quiet) {
			fprintf(stderr, "ringsock: the options of %s go after it: ringsock %s UNIT [OPTIONS]\n", cmd, cmd);
			return 2;
		}
		return rs_cli_service(cmd[0] == 'e', argc - optind - 1, argv + optind + 1);
	}
	int is_check = cmd && !strcmp(cmd, "check");
	int is_knobs = cmd && !strcmp(cmd, "knobs");
	static char *routes[64];
	int nroutes = 0;
	if (is_check || is_knobs) {
		/* Sub-command options may follow the word: ringsock check --knobs */
		for (int i = optind + 1; i < argc; i++) {
			if (!strcmp(argv[i], "--knobs"))
				knobs_flag = 1;
			else if (!strcmp(argv[i], "--man"))
				man_flag = 1;
			else if (is_check && !strcmp(argv[i], "--route") && i + 1 < argc && nroutes < 64)
				routes[nroutes++] = argv[++i];
			else {
				fprintf(stderr, "ringsock: unknown argument '%s' to %s\n", argv[i], cmd);
				return 2;
			}
		}
	} else if (knobs_flag || man_flag) {
		fprintf(stderr, "ringsock: --knobs and --man belong to 'check' and 'knobs'\n");
		return 2;
	}
	if (is_knobs) {
		rs_cli_knobs(stdout, man_flag);
		return 0;
	}
	if (!cmd) {
		fputs(usage, stderr);
		return 2;
	}

	/* Knobs: environment < profile < --set, all checked before PROGRAM. */
	if (profile) {
		const char *const *ps = rs_cli_profile(profile);
		if (!ps)
			return 2;
		for (int i = 0; ps[i]; i++)
			if (set_knob(ps[i]))
				return 2;
	}
	for (int i = 0; i < nsets; i++)
		if (set_knob(sets[i]))
			return 2;
	struct rs_config cfg;
	if (rs_cli_knobs_check(environ, &cfg, "refusing to start") < 0)
		return 2;
	if (is_check)
		return rs_cli_check(&cfg, knobs_flag, routes, nroutes);

	char lib[PATH_MAX], prog[PATH_MAX], why[PATH_MAX + 128];
	if (library) {
		if (!realpath(library, lib)) {
			fprintf(stderr, "ringsock: library %s: %s\n", library, strerror(errno));
			return 2;
		}
	} else if (rs_cli_find_library(lib, sizeof(lib))) {
		return 2;
	}
	int fr = find_program(cmd, prog, sizeof(prog));
	if (fr < 0) {
		fprintf(stderr, "ringsock: %s: %s\n", cmd, fr == -ENOENT ? "command not found" : strerror(-fr));
		return fr == -ENOENT ? 127 : 126;
	}
	if (!quiet) {
		const char *b = rs_prog_blocker(prog, why, sizeof(why));
		if (b)
			fprintf(stderr, "ringsock: warning: %s; it runs without ringsock\n", b);
		else if (!cfg.v[RS_K_DISABLE] && (b = rs_cli_io_uring_blocker(&cfg)) != NULL)
			fprintf(stderr, "ringsock: warning: %s; sockets will take the kernel path\n", b);
	}
	add_preload(lib);
	execv(prog, argv + optind);
	int e = errno;
	fprintf(stderr, "ringsock: cannot run %s: %s\n", prog, strerror(e));
	return e == ENOENT ? 127 : 126;
}

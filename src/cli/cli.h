/* cli.h - the ringsock command's parts. */
#ifndef RS_CLI_H
#define RS_CLI_H
#include <stdio.h>
#include "config.h"

/* check.c: `ringsock check [--route ADDR...]`; returns the exit status. */
int rs_cli_check(const struct rs_config *cfg, int knobs_only, char **routes, int nroutes);
/* check.c: print the knob table (`ringsock knobs`), or as roff for the man
 * page (`ringsock knobs --man`). */
void rs_cli_knobs(FILE *out, int man);
/* check.c: why io_uring cannot serve sockets here, or NULL. */
const char *rs_cli_io_uring_blocker(const struct rs_config *cfg);

/* stat.c: `ringsock stat ARGS...`; returns the exit status. */
int rs_cli_stat(int argc, char **argv);

/* stat.c, for metrics.c: a process's consistent copy of its segment. */
struct rs_pub;
struct proc {
	struct rs_pub *p; /* a consistent copy */
	struct proc *prev_sample; /* (--watch: the same process one interval ago) */
};
/* The processes of PIDs (none: every one this user may read); 0, or 1
 * after a message for each PID that cannot be shown. */
int rs_stat_gather(int npids, const int *pids, struct proc **out, int *n);
void rs_stat_free(struct proc *ps, int n);
/* The command name, printable (a program chooses its own). */
const char *rs_stat_comm(const struct rs_pub *p, char *buf, size_t len);

/* metrics.c: the copies in the Prometheus text format (version 0.0.4). */
void rs_metrics_print(FILE *o, const struct proc *ps, int n);
/* metrics.c: `ringsock stat --serve [ADDR:]PORT`: GET /metrics over HTTP
 * until SIGINT or SIGTERM; returns the exit status. */
int rs_metrics_serve(const char *spec);

/* main.c: the knob settings of a profile (NULL-terminated), or NULL after
 * a message. */
const char *const *rs_cli_profile(const char *name);
/* main.c: the full name (RINGSOCK_X, upper case) of a KNOB=VALUE setting
 * whose prefix may be left out; 0, or -1 after a message (no '=', an
 * unknown knob). */
int rs_cli_knob_name(const char *kv, char *name, size_t len);
/* main.c: parse and check RINGSOCK_* settings as the launcher does before
 * PROGRAM; 0, or -1 after a message for each problem and one saying what
 * is refused. */
int rs_cli_knobs_check(char *const *envp, struct rs_config *cfg, const char *refusal);
/* main.c: the library to preload: next to a build-tree binary, else the
 * installed one; 0, or -1 after a message. */
int rs_cli_find_library(char *out, size_t len);

/* service.c: `ringsock enable|disable UNIT ARGS...`; the exit status. */
int rs_cli_service(int enable, int argc, char **argv);

/* progcheck.c: why PROGRAM (a path) cannot take a preload library, or NULL
 * if it can.  Follows one level of #! to the interpreter. */
const char *rs_prog_blocker(const char *path, char *why, size_t len);
#endif

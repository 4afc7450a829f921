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

/* progcheck.c: why PROGRAM (a path) cannot take a preload library, or NULL
 * if it can.  Follows one level of #! to the interpreter. */
const char *rs_prog_blocker(const char *path, char *why, size_t len);
#endif

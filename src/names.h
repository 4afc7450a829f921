/* names.h - counter names (names.c), in the order of struct ringsock_stats. */
#ifndef RS_NAMES_H
#define RS_NAMES_H

#include "ringsock.h"

/* the engine's counters: struct ringsock_stats from `rings` on */
#define RS_ENGINE_COUNTERS 28
extern const char *const rs_fam_names[RINGSOCK_FAM_COUNT];
extern const char *const rs_dom_names[RINGSOCK_DOM_COUNT];
extern const char *const rs_pt_names[RINGSOCK_PT_COUNT];
extern const char *const rs_engine_names[RS_ENGINE_COUNTERS];

#endif

/* config.h - the RINGSOCK_* knob table and its parser.
 *
 * The parser works on an envp-style array, allocates nothing, and reports
 * every problem through a callback, so the preload library (raw stderr),
 * the launcher (refuse before exec) and the unit tests share it.
 */
#ifndef RS_CONFIG_H
#define RS_CONFIG_H

#include <stddef.h>

enum rs_knob_type { RS_KT_BOOL, RS_KT_INT, RS_KT_SIZE, RS_KT_ENUM, RS_KT_FLAGS, RS_KT_STRING };

enum rs_knob_id {
#define RS_KNOB(id, name, type, def, min, max, unit, choices, doc) RS_K_##id,
#include "knobs.def"
#undef RS_KNOB
	RS_K_COUNT
};

struct rs_knob_def {
	const char *name;     /* full variable name, RINGSOCK_... */
	enum rs_knob_type type;
	const char *def;      /* default, as a string the parser accepts */
	long long min, max;   /* inclusive range (INT, SIZE) */
	const char *unit;     /* "" when none */
	const char *choices;  /* comma-separated (ENUM, FLAGS) */
	const char *doc;      /* one line */
};

extern const struct rs_knob_def rs_knobs[RS_K_COUNT];

/* Values of the ENUM knobs: the index of the name in the knob's choices
 * (knobs.def), in that order. */
enum rs_log_level { RS_LOG_ERROR, RS_LOG_WARN, RS_LOG_INFO, RS_LOG_DEBUG };
enum rs_reclaim_mode { RS_RECLAIM_COALESCED, RS_RECLAIM_PER_OP };
enum rs_wait_mode { RS_WAIT_RING, RS_WAIT_EPOLL };
enum rs_blocking_mode { RS_BLOCKING_ENGINE, RS_BLOCKING_KERNEL };
enum rs_rr_mode { RS_RR_AUTO, RS_RR_KERNEL, RS_RR_ENGINE };
/* RINGSOCK_REQUEST_RESPONSE resolved: the engine's batching (engine, or
 * auto where rs_probe_costly_calls said 1), else the kernel's calls. */
static inline int rs_rr_engine(long mode, int costly)
{
	return mode == RS_RR_ENGINE || (mode == RS_RR_AUTO && costly > 0);
}
enum rs_zc_mode { RS_ZC_AUTO, RS_ZC_ALWAYS, RS_ZC_NEVER };
enum rs_setup_mode { RS_SETUP_AUTO, RS_SETUP_DEFER, RS_SETUP_COOP, RS_SETUP_PLAIN };

/* Bits of RINGSOCK_FEATURES_DISABLE: bit i is choice i ("none" is bit 0). */
enum rs_feature_bit {
	RS_FEAT_IO_URING = 1u << 1,
	RS_FEAT_MSHOT_RECV = 1u << 2,
	RS_FEAT_BUF_RING = 1u << 3,
	RS_FEAT_SINGLE_ISSUER = 1u << 4,
	RS_FEAT_DEFER_TASKRUN = 1u << 5,
	RS_FEAT_RECV_CAP = 1u << 6, /* a byte cap on a multishot receive (6.17+) */
	RS_FEAT_FIXED_FILES = 1u << 7, /* registered files for long-lived sockets (ringfile.c) */
	RS_FEAT_BUNDLE = 1u << 8, /* a receive into several buffers at once (6.10+) */
};

#define RS_STR_KNOB_MAX 512

/* Parsed values.  v[] holds BOOL/INT/SIZE values, the choice index for ENUM
 * and the bit set for FLAGS; s[] holds STRING values (empty otherwise). */
struct rs_config {
	long long v[RS_K_COUNT];
	char s[RS_K_COUNT][RS_STR_KNOB_MAX];
	unsigned char from_env[RS_K_COUNT]; /* 1 when set by the environment */
};

/* Receives one complete diagnostic line (no trailing newline). */
typedef void (*rs_diag_fn)(void *ctx, const char *msg);

/* Fill cfg with defaults, then apply the RINGSOCK_* entries of envp.
 * Every bad value keeps its default and produces one diagnostic naming
 * the variable, the value and what is accepted; every unknown RINGSOCK_*
 * name produces one diagnostic (with the closest known name).  Returns the
 * number of diagnostics. */
int rs_config_parse(struct rs_config *cfg, char *const *envp, rs_diag_fn diag, void *ctx);
/* The same; refusing says whether a problem refuses the program (1: the
 * launcher, which always does; -1: as RINGSOCK_STRICT says), which the
 * messages then say instead of "ignored" and "using the default". */
int rs_config_parse_ex(struct rs_config *cfg, char *const *envp, rs_diag_fn diag, void *ctx, int refusing);

/* Parse one value for knob id into *out (and str for STRING).  Returns 0,
 * or -1 with a reason in why[whylen]. */
int rs_knob_parse_value(int id, const char *val, long long *out, char *str, size_t strlen_,
			char *why, size_t whylen);

/* Index of knob called name (full name), or -1. */
int rs_knob_find(const char *name, size_t namelen);

/* Describe what knob id accepts ("an integer 16..32768 (entries)"). */
void rs_knob_describe(int id, char *buf, size_t len);

/* Print the value of knob id as the parser would accept it. */
void rs_knob_format(const struct rs_config *cfg, int id, char *buf, size_t len);

#endif

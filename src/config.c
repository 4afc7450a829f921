/* config.c - parse RINGSOCK_* knobs from the table in knobs.def. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct rs_knob_def rs_knobs[RS_K_COUNT] = {
#define RS_KNOB(id, name, type, def, min, max, unit, choices, doc) \
	[RS_K_##id] = { name, RS_KT_##type, def, min, max, unit, choices, doc },
#include "knobs.def"
#undef RS_KNOB
};

#define PREFIX "RINGSOCK_"
#define PREFIX_LEN (sizeof(PREFIX) - 1)

int rs_knob_find(const char *name, size_t namelen)
{
	for (int i = 0; i < RS_K_COUNT; i++)
		if (strlen(rs_knobs[i].name) == namelen && !memcmp(rs_knobs[i].name, name, namelen))
			return i;
	return -1;
}

/* Index of word [w, w+wlen) in a comma-separated list, or -1. */
static int choice_index(const char *list, const char *w, size_t wlen)
{
	int idx = 0;
	const char *p = list;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n == wlen && !strncasecmp(p, w, n))
			return idx;
		idx++;
		if (!e)
			break;
		p = e + 1;
	}
	return -1;
}

static int parse_bool(const char *v, long long *out)
{
	static const char *const yes[] = { "1", "yes", "true", "on" };
	static const char *const no[] = { "0", "no", "false", "off" };
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(v, yes[i])) { *out = 1; return 0; }
		if (!strcasecmp(v, no[i])) { *out = 0; return 0; }
	}
	return -1;
}

/* Decimal digits only, optional binary suffix (K, KiB, M, MiB, G, GiB) when
 * allow_suffix.  Rejects signs, spaces, hex, overflow and trailing junk. */
static int parse_number(const char *v, int allow_suffix, long long *out, const char **why)
{
	unsigned long long n = 0;
	const char *p = v;
	if (*p < '0' || *p > '9') {
		*why = "not a number";
		return -1;
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		if (n > (ULLONG_MAX - 9) / 10) {
			*why = "too large";
			return -1;
		}
		n = n * 10 + (unsigned)(*p - '0');
	}
	if (*p) {
		unsigned shift = 0;
		if (!allow_suffix) {
			*why = "trailing characters after the number";
			return -1;
		}
		switch (*p | 0x20) {
		case 'k': shift = 10; break;
		case 'm': shift = 20; break;
		case 'g': shift = 30; break;
		default:
			*why = "unknown unit suffix (use K, M or G)";
			return -1;
		}
		p++;
		if (!strcasecmp(p, "ib"))
			p += 2;
		else if (!strcasecmp(p, "b"))
			p += 1;
		if (*p) {
			*why = "trailing characters after the number";
			return -1;
		}
		if (n > (ULLONG_MAX >> shift)) {
			*why = "too large";
			return -1;
		}
		n <<= shift;
	}
	if (n > (unsigned long long)LLONG_MAX) {
		*why = "too large";
		return -1;
	}
	*out = (long long)n;
	return 0;
}

void rs_knob_describe(int id, char *buf, size_t len)
{
	const struct rs_knob_def *k = &rs_knobs[id];
	switch (k->type) {
	case RS_KT_BOOL:
		snprintf(buf, len, "0 or 1 (also yes/no, true/false, on/off)");
		break;
	case RS_KT_INT:
		snprintf(buf, len, "an integer %lld..%lld%s%s", k->min, k->max, *k->unit ? " " : "",
			 k->unit);
		break;
	case RS_KT_SIZE:
		snprintf(buf, len, "a size %lld..%lld bytes (K, M, G suffixes allowed)", k->min, k->max);
		break;
	case RS_KT_ENUM:
		snprintf(buf, len, "one of %s", k->choices);
		break;
	case RS_KT_FLAGS:
		snprintf(buf, len, "a comma-separated list of %s", k->choices);
		break;
	case RS_KT_STRING:
		snprintf(buf, len, "a non-empty string of at most %d bytes", RS_STR_KNOB_MAX - 1);
		break;
	}
}

int rs_knob_parse_value(int id, const char *val, long long *out, char *str, size_t strcap,
			char *why, size_t whylen)
{
	const struct rs_knob_def *k = &rs_knobs[id];
	const char *reason = NULL;
	long long n = 0;

	if (!*val) {
		reason = "empty";
		goto bad;
	}
	switch (k->type) {
	case RS_KT_BOOL:
		if (parse_bool(val, &n)) {
			reason = "not a boolean";
			goto bad;
		}
		break;
	case RS_KT_INT:
	case RS_KT_SIZE:
		if (parse_number(val, k->type == RS_KT_SIZE, &n, &reason))
			goto bad;
		if (n < k->min || n > k->max) {
			reason = "out of range";
			goto bad;
		}
		break;
	case RS_KT_ENUM:
		n = choice_index(k->choices, val, strlen(val));
		if (n < 0) {
			reason = "not one of the choices";
			goto bad;
		}
		break;
	case RS_KT_FLAGS: {
		const char *p = val;
		for (;;) {
			const char *e = strchr(p, ',');
			size_t wl = e ? (size_t)(e - p) : strlen(p);
			int idx = choice_index(k->choices, p, wl);
			if (idx < 0 || wl == 0) {
				reason = wl ? "unknown name in the list" : "empty item in the list";
				goto bad;
			}
			if (idx > 0) /* "none" (index 0) adds nothing */
				n |= 1ll << idx;
			if (!e)
				break;
			p = e + 1;
		}
		break;
	}
	case RS_KT_STRING:
		if (strlen(val) >= strcap) {
			reason = "too long";
			goto bad;
		}
		if (str)
			memcpy(str, val, strlen(val) + 1);
		break;
	}
	*out = n;
	return 0;
bad:
	if (why && whylen)
		snprintf(why, whylen, "%s", reason);
	return -1;
}

static size_t edit_distance(const char *a, size_t la, const char *b, size_t lb)
{
	size_t row[64];
	if (lb >= 64 || la >= 64)
		return (size_t)-1;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j];
			size_t best = prev + ((a[i - 1] | 0x20) != (b[j - 1] | 0x20));
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			prev = cur;
		}
	}
	return row[lb];
}

static void set_default(struct rs_config *cfg, int id)
{
	long long n = 0;
	/* The table's defaults are valid by construction (unit-tested). */
	if (rs_knob_parse_value(id, rs_knobs[id].def, &n, cfg->s[id], RS_STR_KNOB_MAX, NULL, 0) == 0)
		cfg->v[id] = n;
	cfg->from_env[id] = 0;
}

/* Bytes of a name or value as printable ASCII: anything else as \xNN, so a
 * message never carries raw bytes of another encoding to the terminal. */
static const char *printable(const char *s, size_t n, char *out, size_t outlen)
{
	size_t o = 0;
	for (size_t i = 0; i < n && o + 5 < outlen; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f)
			out[o++] = (char)c;
		else
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
	}
	out[o] = 0;
	return out;
}

/* Will a problem refuse the program?  refusing < 0: RINGSOCK_STRICT says. */
static int strict_in(char *const *envp, int refusing)
{
	if (refusing >= 0)
		return refusing;
	int id = rs_knob_find("RINGSOCK_STRICT", strlen("RINGSOCK_STRICT"));
	for (char *const *e = envp; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		long long n;
		char tmp[RS_STR_KNOB_MAX], why[128];
		if (eq && (size_t)(eq - *e) == strlen("RINGSOCK_STRICT") &&
		    !strncmp(*e, "RINGSOCK_STRICT", (size_t)(eq - *e)))
			return rs_knob_parse_value(id, eq + 1, &n, tmp, sizeof(tmp), why, sizeof(why)) == 0 && n;
	}
	return 0;
}

int rs_config_parse(struct rs_config *cfg, char *const *envp, rs_diag_fn diag, void *ctx)
{
	return rs_config_parse_ex(cfg, envp, diag, ctx, -1);
}

int rs_config_parse_ex(struct rs_config *cfg, char *const *envp, rs_diag_fn diag, void *ctx, int refusing)
{
	char msg[1024], why[128], accepted[256], name[256], value[256];
	int problems = 0;
	int refuse = strict_in(envp, refusing);

	memset(cfg, 0, sizeof(*cfg));
	for (int i = 0; i < RS_K_COUNT; i++)
		set_default(cfg, i);
	if (!envp)
		return 0;

	for (char *const *e = envp; *e; e++) {
		const char *ent = *e;
		if (strncmp(ent, PREFIX, PREFIX_LEN))
			continue;
		const char *eq = strchr(ent, '=');
		size_t nl = eq ? (size_t)(eq - ent) : strlen(ent);
		const char *val = eq ? eq + 1 : "";
		int id = rs_knob_find(ent, nl);
		if (id < 0) {
			size_t best = (size_t)-1;
			int bi = -1;
			for (int i = 0; i < RS_K_COUNT; i++) {
				size_t d = edit_distance(ent + PREFIX_LEN, nl - PREFIX_LEN,
							 rs_knobs[i].name + PREFIX_LEN,
							 strlen(rs_knobs[i].name) - PREFIX_LEN);
				if (d < best) {
					best = d;
					bi = i;
				}
			}
			printable(ent, nl, name, sizeof(name));
			const char *fate = refuse ? "" : " ignored";
			if (bi >= 0 && best <= 3)
				snprintf(msg, sizeof(msg), "unknown variable %s%s (did you mean %s?)", name, fate,
					 rs_knobs[bi].name);
			else
				snprintf(msg, sizeof(msg), "unknown variable %s%s (see 'ringsock knobs')", name,
					 fate);
			problems++;
			if (diag)
				diag(ctx, msg);
			continue;
		}
		long long n;
		char tmp[RS_STR_KNOB_MAX];
		if (rs_knob_parse_value(id, val, &n, tmp, sizeof(tmp), why, sizeof(why)) == 0) {
			cfg->v[id] = n;
			if (rs_knobs[id].type == RS_KT_STRING)
				memcpy(cfg->s[id], tmp, strlen(tmp) + 1);
			cfg->from_env[id] = 1;
			continue;
		}
		rs_knob_describe(id, accepted, sizeof(accepted));
		printable(val, strlen(val), value, 200);
		if (refuse)
			snprintf(msg, sizeof(msg), "%s='%s' is invalid (%s): expected %s", rs_knobs[id].name,
				 value, why, accepted);
		else
			snprintf(msg, sizeof(msg), "%s='%s' is invalid (%s): expected %s; using the default %s",
				 rs_knobs[id].name, value, why, accepted, rs_knobs[id].def);
		problems++;
		if (diag)
			diag(ctx, msg);
		set_default(cfg, id);
	}
	return problems;
}

void rs_knob_format(const struct rs_config *cfg, int id, char *buf, size_t len)
{
	const struct rs_knob_def *k = &rs_knobs[id];
	long long v = cfg->v[id];
	switch (k->type) {
	case RS_KT_BOOL:
	case RS_KT_INT:
	case RS_KT_SIZE:
		snprintf(buf, len, "%lld", v);
		break;
	case RS_KT_ENUM: {
		const char *p = k->choices;
		for (long long i = 0; i < v && p; i++) {
			p = strchr(p, ',');
			if (p)
				p++;
		}
		const char *e = p ? strchr(p, ',') : NULL;
		snprintf(buf, len, "%.*s", p ? (int)(e ? e - p : (long)strlen(p)) : 0, p ? p : "");
		break;
	}
	case RS_KT_FLAGS: {
		size_t off = 0;
		int idx = 0;
		buf[0] = 0;
		for (const char *p = k->choices; p && *p; idx++) {
			const char *e = strchr(p, ',');
			size_t wl = e ? (size_t)(e - p) : strlen(p);
			if (idx > 0 && (v & (1ll << idx)) && off + wl + 2 < len) {
				if (off)
					buf[off++] = ',';
				memcpy(buf + off, p, wl);
				off += wl;
				buf[off] = 0;
			}
			p = e ? e + 1 : NULL;
		}
		if (!off)
			snprintf(buf, len, "none");
		break;
	}
	case RS_KT_STRING:
		snprintf(buf, len, "%s", cfg->s[id]);
		break;
	}
}

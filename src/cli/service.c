/* service.c - `ringsock enable UNIT` and `ringsock disable UNIT`: a systemd
 * drop-in that starts a service under the library.
 *
 *   ringsock enable UNIT [--profile NAME] [--set KNOB=VALUE]... [--library PATH] [--dir DIR]
 *   ringsock disable UNIT [--dir DIR]
 *
 * The drop-in is DIR/UNIT.d/ringsock.conf (DIR: /etc/systemd/system, where
 * an administrator's drop-ins go): a [Service] section with LD_PRELOAD
 * and the knobs as Environment= lines.  The knobs are checked as the
 * launcher checks them before a program starts (main.c), and a bad one
 * writes nothing: a service must not be restarted into a refusal.  Only
 * the file's own knobs are checked and written, never this shell's
 * RINGSOCK_* variables: the service does not inherit them.
 *
 * systemd is not asked to reload (that restarts nothing, and an
 * administrator chooses when the service restarts); the command says
 * what to run. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "internal.h"

#define DROPIN_NAME "ringsock.conf"
#define DROPIN_MARK "# Written by `ringsock enable`"

/* UNIT as a service's name: "NAME" or "NAME.service", NAME of the
 * characters systemd allows (letters, digits, ":-_.\@"). */
static int unit_name(const char *arg, char *out, size_t len)
{
	size_t n = strlen(arg);
	const char *dot = strrchr(arg, '.');
	if (!n || arg[0] == '.' || n + sizeof(".service") > len || n > 255 - 8)
		goto bad;
	for (const char *c = arg; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
		      strchr(":-_.\\@", *c)))
			goto bad;
	static const char *const other[] = { ".socket", ".target", ".timer", ".mount", ".automount", ".path",
					     ".slice", ".scope", ".device", ".swap" };
	for (size_t i = 0; dot && i < sizeof(other) / sizeof(other[0]); i++)
		if (!strcmp(dot, other[i])) {
			fprintf(stderr, "ringsock: %s is not a service: only a service runs a program to preload\n", arg);
			return -1;
		}
	snprintf(out, len, "%s%s", arg, dot && !strcmp(dot, ".service") ? "" : ".service");
	return 0;
bad:
	fprintf(stderr, "ringsock: '%s' is not a unit name (letters, digits and :-_.\\@)\n", arg);
	return -1;
}

/* One Environment= line: quoted, with the C escapes systemd undoes in a
 * quoted word, and % doubled (a specifier otherwise: %p in STATS=/tmp/rs.%p
 * must stay %p).  Control characters are refused: a newline would add a
 * directive of its own. */
static int env_line(FILE *o, const char *kv)
{
	for (const char *c = kv; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			fprintf(stderr, "ringsock: a control character in '%s': not written\n", kv);
			return -1;
		}
	fputs("Environment=\"", o);
	for (const char *c = kv; *c; c++) {
		if (*c == '"' || *c == '\\')
			fputc('\\', o);
		else if (*c == '%')
			fputc('%', o);
		fputc(*c, o);
	}
	fputs("\"\n", o);
	return 0;
}

/* A knob setting, last one wins (as the launcher's setenv), in the order
 * first given. */
#define MAX_SETTINGS 63

static int add_setting(char **env, int *n, const char *kv)
{
	char name[256];
	if (rs_cli_knob_name(kv, name, sizeof(name)) < 0)
		return -1;
	const char *value = strchr(kv, '=') + 1;
	char *s;
	if (asprintf(&s, "%s=%s", name, value) < 0)
		return -1;
	size_t nl = strlen(name);
	for (int i = 0; i < *n; i++)
		if (!strncmp(env[i], name, nl) && env[i][nl] == '=') {
			free(env[i]);
			env[i] = s;
			return 0;
		}
	if (*n == MAX_SETTINGS) {
		fprintf(stderr, "ringsock: too many --set options\n");
		free(s);
		return -1;
	}
	env[(*n)++] = s;
	return 0;
}

static int write_dropin(const char *dir, const char *unit, const char *lib, char *const *env, int n)
{
	char ddir[PATH_MAX], path[PATH_MAX + 32], tmp[PATH_MAX + 48];
	snprintf(ddir, sizeof(ddir), "%s/%s.d", dir, unit);
	snprintf(path, sizeof(path), "%s/" DROPIN_NAME, ddir);
	snprintf(tmp, sizeof(tmp), "%s/.%s.%d", ddir, DROPIN_NAME, (int)getpid());
	if (mkdir(ddir, 0755) < 0 && errno != EEXIST) {
		fprintf(stderr, "ringsock: %s: %s\n", ddir, strerror(errno));
		return -1;
	}
	/* (written aside and renamed: systemd never reads half a file) */
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	FILE *o = fd < 0 ? NULL : fdopen(fd, "w");
	if (!o) {
		fprintf(stderr, "ringsock: %s: %s\n", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	fprintf(o,
		DROPIN_MARK " (ringsock %s): %s runs under libringsock.so.\n"
		"# `ringsock disable %s` removes it; after a change, run\n"
		"#   systemctl daemon-reload && systemctl restart %s\n"
		"# (LD_PRELOAD replaces the one the unit may set; see ringsock(1).)\n"
		"[Service]\n",
		RINGSOCK_VERSION_STRING, unit, unit, unit);
	char pre[PATH_MAX + 16];
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", lib);
	int bad = env_line(o, pre) < 0;
	for (int i = 0; i < n && !bad; i++)
		bad = env_line(o, env[i]) < 0;
	if (fclose(o) != 0 && !bad) {
		fprintf(stderr, "ringsock: %s: %s\n", tmp, strerror(errno));
		bad = 1;
	}
	if (bad || rename(tmp, path) < 0) {
		if (!bad)
			fprintf(stderr, "ringsock: %s: %s\n", path, strerror(errno));
		unlink(tmp);
		rmdir(ddir); /* (only if it is empty: made now) */
		return -1;
	}
	printf("wrote %s\nto apply it: systemctl daemon-reload && systemctl restart %s\n", path, unit);
	return 0;
}

static int disable(const char *dir, const char *unit)
{
	char ddir[PATH_MAX], path[PATH_MAX + 32], line[128] = "";
	snprintf(ddir, sizeof(ddir), "%s/%s.d", dir, unit);
	snprintf(path, sizeof(path), "%s/" DROPIN_NAME, ddir);
	FILE *f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "ringsock: %s is not enabled (%s: %s)\n", unit, path, strerror(errno));
		return 1;
	}
	int ours = fgets(line, sizeof(line), f) && !strncmp(line, DROPIN_MARK, strlen(DROPIN_MARK));
	fclose(f);
	if (!ours) {
		fprintf(stderr, "ringsock: %s was not written by ringsock enable: left alone\n", path);
		return 1;
	}
	if (unlink(path) < 0) {
		fprintf(stderr, "ringsock: %s: %s\n", path, strerror(errno));
		return 1;
	}
	rmdir(ddir); /* (the unit's other drop-ins keep it) */
	printf("removed %s\nto apply it: systemctl daemon-reload && systemctl restart %s\n", path, unit);
	return 0;
}

int rs_cli_service(int enable, int argc, char **argv)
{
	const char *cmd = enable ? "enable" : "disable", *dir = "/etc/systemd/system", *library = NULL, *uarg = NULL;
	char unit[300], lib[PATH_MAX];
	char *env[MAX_SETTINGS + 1];
	int n = 0, rc = 2;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int profile = enable && (!strcmp(a, "--profile") || !strcmp(a, "-p"));
		int set = enable && (!strcmp(a, "--set") || !strcmp(a, "-s"));
		int lib_opt = enable && (!strcmp(a, "--library") || !strcmp(a, "-l"));
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			printf(enable ? "Usage: ringsock enable UNIT [--profile NAME] [--set KNOB=VALUE]... [--library PATH] "
					"[--dir DIR]\n"
					"Write DIR/UNIT.d/" DROPIN_NAME " (DIR: /etc/systemd/system), a systemd drop-in\n"
					"that starts the service UNIT with libringsock.so preloaded and these knobs,\n"
					"checked as the launcher checks them.\n"
				      : "Usage: ringsock disable UNIT [--dir DIR]\n"
					"Remove the drop-in `ringsock enable UNIT` wrote.\n");
			rc = 0;
			goto out;
		}
		if (profile || set || lib_opt || !strcmp(a, "--dir")) {
			if (!v) {
				fprintf(stderr, "ringsock: %s needs a value\n", a);
				goto out;
			}
			i++;
			if (lib_opt) {
				library = v;
			} else if (profile) {
				/* (in the order given: a later --set overrides it, as
				 * for the launcher when --set follows) */
				const char *const *ps = rs_cli_profile(v);
				if (!ps)
					goto out;
				for (int j = 0; ps[j]; j++)
					if (add_setting(env, &n, ps[j]) < 0)
						goto out;
			} else if (set) {
				if (add_setting(env, &n, v) < 0)
					goto out;
			} else {
				dir = v;
			}
		} else if (a[0] != '-' && !uarg) {
			uarg = a;
		} else {
			fprintf(stderr, "ringsock: unknown argument '%s' to %s (see ringsock %s --help)\n", a, cmd, cmd);
			goto out;
		}
	}
	if (!uarg) {
		fprintf(stderr, "ringsock: %s needs a UNIT\n", cmd);
		goto out;
	}
	if (unit_name(uarg, unit, sizeof(unit)) < 0)
		goto out;
	if (!enable) {
		rc = disable(dir, unit);
		goto out;
	}
	env[n] = NULL;
	struct rs_config cfg;
	if (rs_cli_knobs_check(env, &cfg, "the drop-in is not written") < 0)
		goto out;
	if (library ? !realpath(library, lib) : rs_cli_find_library(lib, sizeof(lib)) < 0) {
		if (library)
			fprintf(stderr, "ringsock: library %s: %s\n", library, strerror(errno));
		goto out;
	}
	rc = write_dropin(dir, unit, lib, env, n) < 0 ? 1 : 0;
out:
	for (int i = 0; i < n; i++)
		free(env[i]);
	return rc;
}

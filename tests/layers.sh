#!/bin/sh
# layers.sh BUILD_DIR - no call (or data) circle among the engine's files.
#
# From the object files of src/: an edge a -> b when a.o uses a symbol b.o
# defines (nm).  Calls through an operations table (struct rs_kind_ops)
# are not edges: that is how a lower layer reaches the one above it.
# Prints every circle (each file with the files it reaches and that reach
# it back) and fails if there is one; with -v prints the edges too.
set -eu
verbose=0
[ "${1:-}" = -v ] && { verbose=1; shift; }
build=${1:?usage: layers.sh [-v] BUILD_DIR}
objs=$(find "$build/CMakeFiles/ringsock_engine.dir/src" "$build/CMakeFiles/ringsock_common.dir/src" \
	-name '*.c.o' 2>/dev/null | sort)
[ -n "$objs" ] || { echo "layers.sh: no object files of src/ under $build" >&2; exit 2; }
for o in $objs; do
	f=$(basename "$o" .c.o)
	nm "$o" | awk -v f="$f" '$1 == "U" { print "U", f, $2; next }
		NF == 3 && $2 ~ /^[TDBRVWGS]$/ { print "D", f, $3 }'
done | awk -v verbose="$verbose" '
$1 == "D" { def[$3] = $2; nodes[$2] = 1; next }
$1 == "U" { use[++nu] = $2 " " $3; nodes[$2] = 1 }
END {
	for (i = 1; i <= nu; i++) {
		split(use[i], p, " ")
		if ((p[2] in def) && def[p[2]] != p[1]) {
			e = p[1] SUBSEP def[p[2]]
			if (!(e in reach)) { reach[e] = 1; if (verbose) print p[1] " -> " def[p[2]] "  (" p[2] ")" }
		}
	}
	n = 0
	for (a in nodes) name[++n] = a
	for (k = 1; k <= n; k++) for (i = 1; i <= n; i++) {
		if (!((name[i] SUBSEP name[k]) in reach)) continue
		for (j = 1; j <= n; j++)
			if ((name[k] SUBSEP name[j]) in reach) reach[name[i] SUBSEP name[j]] = 1
	}
	bad = 0
	for (i = 1; i <= n; i++) {
		line = ""
		for (j = 1; j <= n; j++)
			if (i != j && ((name[i] SUBSEP name[j]) in reach) && ((name[j] SUBSEP name[i]) in reach))
				line = line " " name[j]
		if (line != "") { print "circle: " name[i] " <->" line; bad = 1 }
	}
	if (bad) exit 1
	print "layers: no circle among " n " files"
}'

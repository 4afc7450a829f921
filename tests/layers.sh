#!/bin/sh
# layers.sh [-v] BUILD_DIR - the engine's layers, from its object files.
#
# An edge a -> b when a.o uses a symbol b.o defines (nm).  Calls through an
# operations table (struct rs_kind_ops) or a hook are not edges: that is
# how a lower layer reaches the one above it.  Fails, printing each, on
#  - a call circle among src/'s files (each file with the files it reaches
#    and that reach it back);
#  - an edge up the layer list of src/README.md ("## Layers": numbered
#    items, each naming its files), or a file of src/ the list does not
#    place;
#  - a symbol of preload/ used by src/ (src/ is below preload/);
#  - a call from src/ to a symbol libringsock.so exports that src/ does
#    not define: the engine's own nanosleep, syscall, close... would run
#    the program's trampoline in preload/ with its side effects;
#  - a symbol of src/ used by preload/ that the engine's interface for it
#    (src/api.h, src/internal.h, src/sys.h) does not name: preload/
#    reaches the engine through those headers only.
# With -v prints the edges too.
set -eu
verbose=0
[ "${1:-}" = -v ] && { verbose=1; shift; }
build=${1:?usage: layers.sh [-v] BUILD_DIR}
src=$(dirname "$0")/../src
readme=$src/README.md
objs=$(find "$build/CMakeFiles/ringsock_engine.dir/src" "$build/CMakeFiles/ringsock_common.dir/src" \
	-name '*.c.o' 2>/dev/null | sort)
pobjs=$(find "$build/CMakeFiles/ringsock_preload.dir/preload" -name '*.o' 2>/dev/null | sort)
lib=$build/libringsock.so
[ -n "$objs" ] || { echo "layers.sh: no object files of src/ under $build" >&2; exit 2; }
[ -n "$pobjs" ] && [ -f "$lib" ] || { echo "layers.sh: no preload/ objects or $lib under $build" >&2; exit 2; }
[ -f "$readme" ] || { echo "layers.sh: no $readme" >&2; exit 2; }
{
	# L file layer: the list in src/README.md
	awk '/^## Layers/ { on = 1; next } /^## / { on = 0 } on && /^[0-9]+\. / { l = $1 + 0 }
		on && l { s = $0; while (match(s, /`[a-z_0-9]+\.c`/)) {
			print "L", substr(s, RSTART + 1, RLENGTH - 4), l; s = substr(s, RSTART + RLENGTH) } }' "$readme"
	for o in $objs; do
		f=$(basename "$o" .c.o)
		nm "$o" | awk -v f="$f" '$1 == "U" { print "U", f, $2; next }
			NF == 3 && $2 ~ /^[TDBRVWGS]$/ { print "D", f, $3 }'
	done
	for o in $pobjs; do
		nm "$o" | awk -v f="$(basename "$o" .o)" '$1 != "U" && NF == 3 && $2 ~ /^[TDBRVWGS]$/ { print "P", $3 }
			$1 == "U" { print "Q", f, $2 }'
	done
	# I name: an identifier the interface headers of preload/ mention
	cat "$src/api.h" "$src/internal.h" "$src/sys.h" | grep -o '[A-Za-z_][A-Za-z_0-9]*' | sort -u | sed 's/^/I /'
	nm -D --defined-only "$lib" | awk 'NF == 3 { sub(/@.*/, "", $3); print "X", $3 }'
} | awk -v verbose="$verbose" '
$1 == "L" { layer[$2] = $3; next }
$1 == "D" { def[$3] = $2; nodes[$2] = 1; next }
$1 == "U" { use[++nu] = $2 " " $3; nodes[$2] = 1; next }
$1 == "P" { pre[$2] = 1; next }
$1 == "Q" { puse[++nq] = $2 " " $3; next }
$1 == "I" { iface[$2] = 1; next }
$1 == "X" { xport[$2] = 1; next }
END {
	bad = 0
	for (i = 1; i <= nu; i++) {
		split(use[i], p, " ")
		if (p[2] in def) {
			if (def[p[2]] == p[1]) continue
			e = p[1] SUBSEP def[p[2]]
			if (!(e in reach)) {
				reach[e] = 1
				if (verbose) print p[1] " -> " def[p[2]] "  (" p[2] ")"
				if ((p[1] in layer) && (def[p[2]] in layer) && layer[def[p[2]]] < layer[p[1]]) {
					print "up the layers: " p[1] " (" layer[p[1]] ") -> " def[p[2]] " (" layer[def[p[2]]] ")  (" p[2] ")"
					bad = 1
				}
			}
		} else if (p[2] in pre) {
			print "src/ uses preload/: " p[1] " -> " p[2]; bad = 1
		} else if (p[2] in xport) {
			print "src/ calls the library'"'"'s own export: " p[1] " -> " p[2]; bad = 1
		}
	}
	for (i = 1; i <= nq; i++) {
		split(puse[i], p, " ")
		if ((p[2] in def) && !(p[2] in iface)) {
			print "preload/ uses src/ past its interface (api.h, internal.h, sys.h): " p[1] " -> " def[p[2]] "  (" p[2] ")"
			bad = 1
		}
	}
	n = 0
	for (a in nodes) {
		name[++n] = a
		if (!(a in layer)) { print "not in the layer list of src/README.md: " a ".c"; bad = 1 }
	}
	for (k = 1; k <= n; k++) for (i = 1; i <= n; i++) {
		if (!((name[i] SUBSEP name[k]) in reach)) continue
		for (j = 1; j <= n; j++)
			if ((name[k] SUBSEP name[j]) in reach) reach[name[i] SUBSEP name[j]] = 1
	}
	for (i = 1; i <= n; i++) {
		line = ""
		for (j = 1; j <= n; j++)
			if (i != j && ((name[i] SUBSEP name[j]) in reach) && ((name[j] SUBSEP name[i]) in reach))
				line = line " " name[j]
		if (line != "") { print "circle: " name[i] " <->" line; bad = 1 }
	}
	if (bad) exit 1
	print "layers: " n " files, no circle, no call up the list, none into preload/ or the exports, preload/ through its interface only"
}'

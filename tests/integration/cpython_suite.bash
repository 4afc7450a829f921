# cpython_suite.bash - sourced by the thirdparty_cpython_*.sh tests: run
# some of CPython's own test modules (Debian's libpython3.11-testsuite)
# plain, under the library with default knobs, and under it with
# RINGSOCK_ARM_AFTER=0 (every receive armed at once).  Every test's outcome
# (ok, skipped, FAIL, ERROR) must be the same each way.  A test whose
# outcome differs is run again both ways, once, alone: a difference that
# repeats fails.  Tests that need a resource (-u: network, ...) are not
# run, so nothing leaves the machine.
#
#   cpython_suite MIN_ACCELERATED MODULE... [-- EXTRA regrtest ARGS]
cpython_suite() {
	local min=$1
	shift
	local mods=() extra=()
	while [ $# -gt 0 ] && [ "$1" != "--" ]; do mods+=("$1"); shift; done
	[ "${1:-}" = "--" ] && { shift; extra=("$@"); }
	if ! "$PY" -c "import test.${mods[0]}" 2>/dev/null; then
		bad "CPython's test suite is not installed (apt-get install libpython3.11-testsuite)"
		return
	fi
	cd "$TMP" || return
	_cps_run() { # label, env...
		local label=$1
		shift
		timeout -k 5 500 env "$@" "$PY" -m test "${mods[@]}" "${extra[@]}" -v >"$TMP/$label.out" 2>&1
		echo "$label: $(tail -1 "$TMP/$label.out")"
		# "name (test.mod.Class.name) ... ok" -> "mod.Class.name ok"
		sed -n 's/^\([A-Za-z0-9_]*\) (test\.\([A-Za-z0-9_.]*\)) \.\.\. \([A-Za-z]*\).*/\2 \3/p' \
			"$TMP/$label.out" | sort >"$TMP/$label.res"
	}
	_cps_run plain
	_cps_run lib LD_PRELOAD="$RS_LIB" RINGSOCK_STATS="$TMP/lib.st"
	_cps_run arm0 LD_PRELOAD="$RS_LIB" RINGSOCK_ARM_AFTER=0 RINGSOCK_STATS="$TMP/arm0.st"
	local n
	n=$(wc -l <"$TMP/plain.res")
	check "the suite ran ($n test outcomes)" test "$n" -ge 100
	local mode knobs t still a b mod name
	for mode in lib arm0; do
		knobs=""
		[ $mode = arm0 ] && knobs="RINGSOCK_ARM_AFTER=0"
		echo "$mode: $(grep -c ' ok$' "$TMP/$mode.res") ok ($(grep -c ' ok$' "$TMP/plain.res") plain)"
		still=""
		for t in $(comm -3 "$TMP/plain.res" "$TMP/$mode.res" | awk '{print $1}' | sort -u); do
			# once more each way, alone (a timing-sensitive test may flip)
			mod=${t%.*.*}
			name=${t##*.}
			a=$(timeout 120 "$PY" -m test "$mod" -v -m "$name" 2>&1 | grep -c "(test.$t) ... ok")
			b=$(timeout 120 env LD_PRELOAD="$RS_LIB" $knobs "$PY" -m test "$mod" -v -m "$name" 2>&1 |
				grep -c "(test.$t) ... ok")
			echo "$mode differed: $t; again alone: plain ok=$a, library ok=$b"
			[ "$a" = "$b" ] || still="$still $t"
		done
		check "$mode: every test has the same outcome as plain${still:+ (not:$still)}" test -z "$still"
		check "$mode: the engine served sockets" test "$(stat_sum "$TMP/$mode.st" accelerated)" -ge "$min"
	done
}

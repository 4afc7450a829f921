#!/bin/bash
# run_diff.sh SCENARIO LIBRARY [PRELOAD_FIRST]
#
# Runs SCENARIO three times: plain, under LIBRARY, and under LIBRARY with
# RINGSOCK_DISABLE=1.  The transcripts (stdout) and exit statuses must be
# identical.  The run under the library must also show, in its
# RINGSOCK_STATS report, that the library was loaded and tracked sockets,
# so the comparison can never pass vacuously.  PRELOAD_FIRST (a sanitizer
# runtime) goes in front of LIBRARY in LD_PRELOAD.
set -u
scn=$1
lib=$2
first=${3:-}
name=$(basename "$scn")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A clean environment: no inherited preload or knobs.
clean=(env -u LD_PRELOAD)
for v in $(env | sed -n 's/^\(RINGSOCK_[A-Za-z0-9_]*\)=.*/\1/p'); do clean+=(-u "$v"); done

run() { # label, extra env...
	local label=$1
	shift
	# env applies the variables just before it runs the scenario, so the
	# preload reaches the scenario only (timeout and env may use another libc).
	(cd "$tmp" && timeout -k 5 120 "${clean[@]}" "$@" "$scn") >"$tmp/$label.out" 2>"$tmp/$label.err"
	echo $? >"$tmp/$label.rc"
}

preload="$lib"
[ -n "$first" ] && preload="$first:$lib"
run plain
run under LD_PRELOAD="$preload" RINGSOCK_STATS="$tmp/stats"
run disabled LD_PRELOAD="$preload" RINGSOCK_DISABLE=1

fail=0
if [ "$(cat "$tmp/plain.rc")" = 99 ]; then
	echo "$name: scenario setup failed on the kernel path"
	cat "$tmp/plain.err"
	exit 1
fi
for mode in under disabled; do
	if ! cmp -s "$tmp/plain.out" "$tmp/$mode.out" || ! cmp -s "$tmp/plain.rc" "$tmp/$mode.rc"; then
		echo "$name: transcript differs: plain vs $mode"
		echo "exit status: plain $(cat "$tmp/plain.rc"), $mode $(cat "$tmp/$mode.rc")"
		diff -u "$tmp/plain.out" "$tmp/$mode.out" | head -80
		echo "--- stderr ($mode):"
		head -40 "$tmp/$mode.err"
		fail=1
	fi
done
if grep -q "ringsock.*\(warning\|error\)" "$tmp/under.err"; then
	echo "$name: the library complained:"
	grep "ringsock" "$tmp/under.err" | head -20
	fail=1
fi
if ! grep -q "tracked=[1-9]" "$tmp/stats" 2>/dev/null; then
	echo "$name: no RINGSOCK_STATS report with tracked sockets: was the library loaded?"
	cat "$tmp/stats" 2>/dev/null | head
	fail=1
fi
if [ $fail = 0 ]; then
	echo "$name: identical ($(wc -l <"$tmp/plain.out") lines, exit $(cat "$tmp/plain.rc")) plain, under ringsock and with RINGSOCK_DISABLE=1"
	sed -n 's/.*: sockets /  sockets /p' "$tmp/stats" | head -1
fi
exit $fail

#!/bin/bash
# run_diff.sh SCENARIO LIBRARY [PRELOAD_FIRST [SOURCE]]
#
# Runs SCENARIO six times: plain, under LIBRARY, under LIBRARY with a new
# socket's multishot receive armed at once (RINGSOCK_ARM_AFTER=0) and after
# its first read (=1, with epoll_wait sleeping in epoll_pwait:
# RINGSOCK_WAIT=epoll; the default reads a few times through the kernel
# first, so short scenarios would otherwise rarely reach the engine's
# receive path or the switch to it), under LIBRARY with the engine's
# io_uring treated as missing (RINGSOCK_FEATURES_DISABLE=io_uring, the
# fallback), under LIBRARY with RINGSOCK_DISABLE=1, and once more with
# the knobs a scenario names in a RUN_ALSO= line of its source.  The
# transcripts (stdout) and exit statuses must be identical.  The run under
# the library must also show, in its RINGSOCK_STATS report, that the
# library was loaded and tracked sockets, so the comparison can never pass
# vacuously; when SOURCE says ENGINE_MIN_ACCELERATED=N, at least N sockets
# must have been served by the engine in the run that arms at once (with
# the default knobs a connection that ends within its first reads never
# enters the engine).  PRELOAD_FIRST (a sanitizer
# runtime) goes in front of LIBRARY in LD_PRELOAD.
set -u
scn=$1
lib=$2
first=${3:-}
src=${4:-}
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
run armnow LD_PRELOAD="$preload" RINGSOCK_ARM_AFTER=0 RINGSOCK_STATS="$tmp/stats.armnow"
# A scenario about what only the default RINGSOCK_WAIT=ring keeps says
# NOT_WAIT_EPOLL=why in its source: its arm1 run keeps the default wait.
arm1_wait=epoll
[ -n "$src" ] && grep -q "NOT_WAIT_EPOLL=" "$src" && arm1_wait=ring
run arm1 LD_PRELOAD="$preload" RINGSOCK_ARM_AFTER=1 RINGSOCK_WAIT=$arm1_wait
run fallback LD_PRELOAD="$preload" RINGSOCK_FEATURES_DISABLE=io_uring
run disabled LD_PRELOAD="$preload" RINGSOCK_DISABLE=1
# A scenario may ask for one more run with knobs of its own:
# "RUN_ALSO=VAR=value VAR=value" in its source.
also=""
[ -n "$src" ] && also=$(sed -n 's/.*RUN_ALSO=\([^*]*\).*/\1/p' "$src" | head -1 | sed 's/ *$//')
modes="under armnow arm1 fallback disabled"
if [ -n "$also" ]; then
	# shellcheck disable=SC2086
	run also LD_PRELOAD="$preload" $also
	modes="$modes also"
fi

fail=0
if [ "$(cat "$tmp/plain.rc")" = 99 ]; then
	echo "$name: scenario setup failed on the kernel path"
	cat "$tmp/plain.err"
	exit 1
fi
for mode in $modes; do
	if ! cmp -s "$tmp/plain.out" "$tmp/$mode.out" || ! cmp -s "$tmp/plain.rc" "$tmp/$mode.rc"; then
		echo "$name: transcript differs: plain vs $mode"
		echo "exit status: plain $(cat "$tmp/plain.rc"), $mode $(cat "$tmp/$mode.rc")"
		diff -u "$tmp/plain.out" "$tmp/$mode.out" | head -80
		echo "--- stderr ($mode):"
		head -40 "$tmp/$mode.err"
		fail=1
	fi
done
for mode in under armnow arm1 ${also:+also}; do
	if grep -q "ringsock.*\(warning\|error\)" "$tmp/$mode.err"; then
		echo "$name: the library complained ($mode):"
		grep "ringsock" "$tmp/$mode.err" | head -20
		fail=1
	fi
done
if ! grep -q "tracked=[1-9]" "$tmp/stats" 2>/dev/null; then
	echo "$name: no RINGSOCK_STATS report with tracked sockets: was the library loaded?"
	cat "$tmp/stats" 2>/dev/null | head
	fail=1
fi
# What the runs under the library must show they did, so the comparison
# can never pass with the engine serving nothing: every scenario names
# either ENGINE_MIN_ACCELERATED=N (sockets served in the run that arms at
# once), or ENGINE_PASSTHROUGH=REASON (a scenario about sockets the engine
# must hand to the kernel: at least one counted with that reason, in the
# default run or the one that arms at once).
want=""
pt=""
if [ -n "$src" ]; then
	want=$(sed -n 's/.*ENGINE_MIN_ACCELERATED=\([0-9]*\).*/\1/p' "$src" | head -1)
	pt=$(sed -n 's/.*ENGINE_PASSTHROUGH=\([a-z_]*\).*/\1/p' "$src" | head -1)
	if [ -z "$want" ] && [ -z "$pt" ]; then
		echo "$name: the source names neither ENGINE_MIN_ACCELERATED=N nor ENGINE_PASSTHROUGH=REASON"
		fail=1
	fi
fi
if [ -n "$pt" ]; then
	got=$(cat "$tmp/stats" "$tmp/stats.armnow" 2>/dev/null | grep -o "[ ]$pt=[0-9]*" | awk -F= '{s+=$2} END {print s+0}')
	if [ "$got" -lt 1 ]; then
		echo "$name: no socket passed through as $pt"
		grep ringsock "$tmp/stats" "$tmp/stats.armnow" | head -20
		fail=1
	fi
fi
if [ -n "$want" ] && [ "$want" -gt 0 ]; then
	got=$(sed -n 's/.*accelerated=\([0-9]*\).*/\1/p' "$tmp/stats.armnow" 2>/dev/null | awk '{s+=$1} END {print s+0}')
	if [ "$got" -lt "$want" ]; then
		echo "$name: only $got sockets served by the engine (RINGSOCK_ARM_AFTER=0), expected at least $want"
		grep ringsock "$tmp/stats.armnow" | head -20
		fail=1
	fi
fi
if [ $fail = 0 ]; then
	echo "$name: identical ($(wc -l <"$tmp/plain.out") lines, exit $(cat "$tmp/plain.rc")) plain, under ringsock (receives armed after 4 reads, at once, after 1 with WAIT=$arm1_wait), with io_uring missing and with RINGSOCK_DISABLE=1${also:+, and with $also}"
	sed -n 's/.*: sockets /  sockets /p; s/.*: engine /  engine /p' "$tmp/stats" | head -2
fi
exit $fail

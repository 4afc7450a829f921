# Differential fuzzing of socket call sequences (tests/fuzz/difffuzz.c):
# each seed runs plain twice (the transcript must be deterministic on the
# kernel path), under the library with default knobs and with
# RINGSOCK_ARM_AFTER=0; transcripts and exit codes must be identical.
#
#   bash difffuzz.sh                      CI: every seed of tests/fuzz/corpus.txt (known
#                                         differences reported), then RS_FUZZ_SEEDS (0)
#                                         fresh seeds from RS_FUZZ_BASE
#   RS_FUZZ_STRICT=1 bash difffuzz.sh     the same, but a known difference fails too and
#                                         RS_FUZZ_SEEDS defaults to 40 (within
#                                         RS_FUZZ_TIME, 75 s, unless RS_FUZZ_SEEDS is set)
#   bash difffuzz.sh run SEED [OPTS]      one seed, every mode, the diff when they differ
#   bash difffuzz.sh minimize SEED [OPTS] the fewest steps that keep the first difference
#   bash difffuzz.sh soak SECONDS [FIRST [OPTS]]  fresh seeds FIRST, FIRST+1, ... for a while
#                                         (differences that are only ep_rearms' extra
#                                         edges are counted apart)
#
# OPTS are difffuzz options (-n STEPS, -k KEEP, -u, -K).  RS_FUZZ_LIB
# replaces the library (e.g. an older build).  RS_FUZZ_MODES chooses the
# library's modes (default "lib arm0"; "zc" sends every batch of queued
# bytes zero-copy, through the frag pool).  Outside CTest, RS_LIB/RS_BUILD/RS_SRC
# default to this checkout's build/.
here=$(cd "$(dirname "$0")" && pwd)
: "${RS_SRC:=$(cd "$here/../.." && pwd)}"
: "${RS_BUILD:=$RS_SRC/build}"
: "${RS_LIB:=$RS_BUILD/libringsock.so}"
. "$here/lib.sh"
LIB=${RS_FUZZ_LIB:-$RS_LIB}
FUZZ="$RS_BUILD/tests/difffuzz"
SRCC="$RS_SRC/tests/fuzz/difffuzz.c"
CORPUS="$RS_SRC/tests/fuzz/corpus.txt"
MODES=${RS_FUZZ_MODES:-lib arm0}
ZC_KNOBS="RINGSOCK_ZEROCOPY=always RINGSOCK_ZEROCOPY_MIN=1 RINGSOCK_LINEAR_FIRST=0 RINGSOCK_DIRECT_THRESHOLD=0"
RUN_TIMEOUT=${RS_FUZZ_TIMEOUT:-6} # a run takes well under 1 s; a sync gives up after 2 s

[ -f "$LIB" ] || { echo "skip: no library at $LIB"; exit 77; }
command -v cc >/dev/null 2>&1 || { echo "skip: no cc"; exit 77; }

# Build the fuzzer next to the other test programs (CMake is not told
# about it), again whenever its source is newer.
if [ ! -x "$FUZZ" ] || [ "$SRCC" -nt "$FUZZ" ]; then
	mkdir -p "$(dirname "$FUZZ")"
	cc -O2 -Wall -Wextra -o "$FUZZ.tmp.$$" "$SRCC" || { echo "FAIL: difffuzz.c does not build"; exit 1; }
	mv -f "$FUZZ.tmp.$$" "$FUZZ"
fi

# run_mode OUTPREFIX MODE SEED OPTS...: one run, transcript in PREFIX.out,
# exit status in PREFIX.rc, stderr in PREFIX.err
run_mode() {
	local out=$1 mode=$2
	shift 2
	local envs=()
	case $mode in
	plain | plain2) ;;
	lib) envs=(LD_PRELOAD="$LIB") ;;
	arm0) envs=(LD_PRELOAD="$LIB" RINGSOCK_ARM_AFTER=0) ;;
	zc) envs=(LD_PRELOAD="$LIB" $ZC_KNOBS) ;;
	esac
	(cd "$TMP" && timeout -k 2 "$RUN_TIMEOUT" env "${envs[@]}" "$FUZZ" "$@") >"$out.out" 2>"$out.err"
	echo $? >"$out.rc"
}

mode_env() {
	case $1 in
	lib) echo "LD_PRELOAD=$LIB " ;;
	arm0) echo "LD_PRELOAD=$LIB RINGSOCK_ARM_AFTER=0 " ;;
	zc) echo "LD_PRELOAD=$LIB $ZC_KNOBS " ;;
	esac
}

# first_diff A B: the first differing line of each side ("> (no more
# lines)" when B stopped early)
first_diff() {
	diff "$1" "$2" | awk '/^</ && !a { a = $0 } /^>/ && !b { b = $0 } END { print a; print (b ? b : "> (no more lines)") }'
}

# check_seed SEED OPTS...: every mode; prints a report and returns 1 on a
# difference.  Leaves the transcripts in $TMP/cur.*
check_seed() {
	local seed=$1
	shift
	local m fail=0
	for m in plain plain2 $MODES; do
		run_mode "$TMP/cur.$m" $m "$@" "$seed"
	done
	local prc
	prc=$(cat "$TMP/cur.plain.rc")
	for m in plain2 $MODES; do
		if cmp -s "$TMP/cur.plain.out" "$TMP/cur.$m.out" && [ "$prc" = "$(cat "$TMP/cur.$m.rc")" ]; then
			continue
		fi
		fail=1
		if [ $m = plain2 ]; then
			echo "NONDETERMINISTIC (a fuzzer bug): seed $seed $* differs between two plain runs (exit $prc, $(cat "$TMP/cur.$m.rc"))"
		else
			echo "DIFFERENCE: seed $seed $* plain vs $m ($(mode_env $m | sed 's/^LD_PRELOAD=[^ ]* *//')): exit $prc vs $(cat "$TMP/cur.$m.rc")"
		fi
		echo "  first difference (< plain, > $m):"
		first_diff "$TMP/cur.plain.out" "$TMP/cur.$m.out" | sed 's/^/    /'
		if [ "$(wc -l <"$TMP/cur.plain.out")" -gt "$(wc -l <"$TMP/cur.$m.out")" ] && cmp -s <(head -n "$(wc -l <"$TMP/cur.$m.out")" "$TMP/cur.plain.out") "$TMP/cur.$m.out"; then
			echo "    ($m stopped early: its transcript is a prefix of plain's)"
		fi
		grep -i "ringsock" "$TMP/cur.$m.err" | head -5 | sed 's/^/    stderr: /'
		echo "  reproduce: bash tests/integration/difffuzz.sh run $seed $*"
		echo "         or: $(mode_env $m)$FUZZ $* $seed  (and without LD_PRELOAD for plain)"
	done
	[ $fail = 0 ]
}

# extra_edges PLAIN LIB: do the transcripts differ only in epoll waits
# that report more under the library (a registration the kernel did not
# report, or more events for one it did), never less?
extra_edges() {
	python3 - "$1" "$2" <<'PY'
import re, sys
a = open(sys.argv[1]).read().splitlines()
b = open(sys.argv[2]).read().splitlines()
w = re.compile(r'^(\d+ epoll_p?wait\(\d+\)) = \d+:(.*)$')
def regs(m):
    return {t[0]: set(t[1].split('|')) for t in (x.split(' ') for x in re.findall(r'\S+ \S+', m.group(2).strip()))}
if len(a) != len(b):
    sys.exit(1)
for x, y in zip(a, b):
    if x == y:
        continue
    mx, my = w.match(x), w.match(y)
    if not mx or not my or mx.group(1) != my.group(1):
        sys.exit(1)
    rx, ry = regs(mx), regs(my)
    if any(k not in ry or not v <= ry[k] for k, v in rx.items()):
        sys.exit(1)
PY
}

# rearm_explained SEED OPTS...: after check_seed, is every library mode's
# difference extra epoll edges of registrations the library renewed with
# the kernel (the ep_rearms counter; ringsock(7), Limits of this release)?
rearm_explained() {
	local seed=$1 m
	shift
	cmp -s "$TMP/cur.plain.out" "$TMP/cur.plain2.out" || return 1 # (the fuzzer's own)
	for m in $MODES; do
		cmp -s "$TMP/cur.plain.out" "$TMP/cur.$m.out" && continue
		extra_edges "$TMP/cur.plain.out" "$TMP/cur.$m.out" || return 1
		(cd "$TMP" && timeout -k 2 "$RUN_TIMEOUT" env $(mode_env $m) RINGSOCK_STATS=1 "$FUZZ" "$@" "$seed") >/dev/null 2>"$TMP/rearm.err"
		grep -q ' ep_rearms=[1-9]' "$TMP/rearm.err" || return 1
	done
}

# The step number of the first differing line between plain and MODE.
first_step() {
	diff "$1" "$2" | awk '/^[<>] [0-9][0-9][0-9]/ { print $2 + 0; exit }'
}
# The kinds of the first differing lines of two transcripts: the word
# after the step number on each side ("END" when a side has no more
# lines), e.g. "write/write" or "recv/SYNC".
diff_kind() {
	diff "$1" "$2" | awk '
		/^< / && !a { a = $3; sub(/\(.*/, "", a) }
		/^> / && !b { b = $3; sub(/\(.*/, "", b) }
		END { print (a ? a : "END") "/" (b ? b : "END") }'
}

# differs MODE KIND SEED OPTS...: is there a difference whose first lines
# are of KIND?
differs() {
	local mode=$1 kind=$2 seed=$3
	shift 3
	run_mode "$TMP/min.plain" plain "$@" "$seed"
	run_mode "$TMP/min.lib" "$mode" "$@" "$seed"
	if cmp -s "$TMP/min.plain.out" "$TMP/min.lib.out" && cmp -s "$TMP/min.plain.rc" "$TMP/min.lib.rc"; then
		return 1
	fi
	[ "$(diff_kind "$TMP/min.plain.out" "$TMP/min.lib.out")" = "$kind" ]
}

minimize() {
	local seed=$1
	shift
	local opts=("$@") mode=""
	for m in arm0 lib; do
		run_mode "$TMP/cur.plain" plain "${opts[@]}" "$seed"
		run_mode "$TMP/cur.$m" $m "${opts[@]}" "$seed"
		if ! cmp -s "$TMP/cur.plain.out" "$TMP/cur.$m.out" || ! cmp -s "$TMP/cur.plain.rc" "$TMP/cur.$m.rc"; then
			mode=$m
			break
		fi
	done
	[ -n "$mode" ] || { echo "seed $seed ${opts[*]}: no difference"; return 1; }
	local step kind
	step=$(first_step "$TMP/cur.plain.out" "$TMP/cur.$mode.out")
	kind=$(diff_kind "$TMP/cur.plain.out" "$TMP/cur.$mode.out")
	[ -n "$step" ] || step=$(sed -n 's/^difffuzz seed [0-9]* steps \([0-9]*\).*/\1/p' "$TMP/cur.plain.out")
	echo "seed $seed: first difference in mode $mode at step $step ($kind)"
	# other options than -n/-k are kept
	local rest=() i=0
	while [ $i -lt ${#opts[@]} ]; do
		case ${opts[$i]} in
		-n | -k) i=$((i + 2)) ;;
		*) rest+=("${opts[$i]}"); i=$((i + 1)) ;;
		esac
	done
	local keep=()
	for ((i = 1; i <= step; i++)); do keep+=("$i"); done
	local n=$step
	# (what differs first can depend on timing under the library: try again)
	differs "$mode" "$kind" "$seed" "${rest[@]}" -n "$n" -k "$(IFS=,; echo "${keep[*]}")" ||
		differs "$mode" "$kind" "$seed" "${rest[@]}" -n "$n" -k "$(IFS=,; echo "${keep[*]}")" ||
		differs "$mode" "$kind" "$seed" "${rest[@]}" -n "$n" -k "$(IFS=,; echo "${keep[*]}")" ||
		{ echo "does not reproduce with -n $n; try it by hand"; return 1; }
	local chunk=$(( (${#keep[@]} + 1) / 2 ))
	while [ "$chunk" -ge 1 ]; do
		i=0
		while [ $i -lt ${#keep[@]} ]; do
			local cand=("${keep[@]:0:$i}" "${keep[@]:$((i + chunk))}")
			if [ ${#cand[@]} -gt 0 ] && differs "$mode" "$kind" "$seed" "${rest[@]}" -n "$n" -k "$(IFS=,; echo "${cand[*]}")"; then
				keep=("${cand[@]}")
			else
				i=$((i + chunk))
			fi
		done
		chunk=$((chunk / 2))
	done
	local k
	k=$(IFS=,; echo "${keep[*]}")
	echo "minimal: $seed ${rest[*]} -n $n -k $k (${#keep[@]} steps)"
	differs "$mode" "$kind" "$seed" "${rest[@]}" -n "$n" -k "$k"
	echo "--- plain:"
	cat "$TMP/min.plain.out"
	echo "--- $mode (exit $(cat "$TMP/min.lib.rc")):"
	cat "$TMP/min.lib.out"
	echo "--- diff:"
	diff "$TMP/min.plain.out" "$TMP/min.lib.out"
}

case ${1:-ci} in
run)
	shift
	seed=$1
	shift
	if check_seed "$seed" "$@"; then
		echo "seed $seed $*: identical ($(wc -l <"$TMP/cur.plain.out") lines, exit $(cat "$TMP/cur.plain.rc"))"
		exit 0
	fi
	for m in lib arm0; do
		cmp -s "$TMP/cur.plain.out" "$TMP/cur.$m.out" && continue
		echo "--- diff plain $m:"
		diff "$TMP/cur.plain.out" "$TMP/cur.$m.out" | head -40
	done
	exit 1
	;;
minimize)
	shift
	minimize "$@"
	exit $?
	;;
soak)
	secs=$2
	seed=${3:-1000000}
	shift 3 2>/dev/null || shift $#
	end=$((SECONDS + secs))
	n=0
	nd=0
	nr=0
	while [ $SECONDS -lt $end ]; do
		if ! check_seed "$seed" "$@"; then
			if rearm_explained "$seed" "$@"; then
				nr=$((nr + 1))
				echo "  (seed $seed: extra epoll edges only, counted by ep_rearms)"
			else
				nd=$((nd + 1))
			fi
		fi
		n=$((n + 1))
		seed=$((seed + 1))
	done
	echo "soak: $n seeds ($((seed - n)) .. $((seed - 1))), $nd with a difference, $nr more with extra epoll edges counted by ep_rearms only"
	exit 0
	;;
ci) ;;
*)
	echo "usage: bash difffuzz.sh [run SEED [OPTS] | minimize SEED [OPTS] | soak SECONDS [FIRST [OPTS]]]"
	exit 2
	;;
esac

# ---- CI: the corpus, then (when asked) fresh seeds from a fixed base
# A corpus line is "SEED [OPTS] # why"; "known SEED [OPTS] # bug" marks a
# difference found and not fixed yet: it runs and is reported (and the
# summary says when it passes again), but does not fail the test.
# "rearm SEED [OPTS] # why" marks the one difference the library keeps
# (ringsock(7), Limits of this release): it passes only when each mode's
# transcript is plain's or differs in extra epoll edges alone, with the
# ep_rearms counter showing the renewal that made them.  Every other
# corpus seed must give identical transcripts.
t0=$SECONDS
known_open=0
if [ -f "$CORPUS" ]; then
	while IFS= read -r line; do
		why=$(echo "$line" | sed -n 's/.*# *//p')
		line=${line%%#*}
		# shellcheck disable=SC2086
		set -- $line
		[ $# -gt 0 ] || continue
		known=0
		case $1 in
		known) known=1 && shift ;;
		rearm) known=2 && shift ;;
		esac
		seed=$1
		shift
		if [ $known = 2 ]; then
			check_seed "$seed" "$@" >"$TMP/seed.log"
			if rearm_explained "$seed" "$@"; then
				ok "corpus seed $seed $*: plain's, or extra edges counted by ep_rearms"
			else
				cat "$TMP/seed.log"
				bad "corpus seed $seed $*: a difference other than ep_rearms' extra edges ($why)"
			fi
		elif check_seed "$seed" "$@" >"$TMP/seed.log"; then
			if [ $known = 1 ]; then
				echo "NOTE: known seed $seed $* passes now: take 'known' off its line ($why)"
			fi
			ok "corpus seed $seed $*"
		elif [ $known = 1 ] && [ "${RS_FUZZ_STRICT:-0}" != 1 ]; then
			known_open=$((known_open + 1))
			echo "known difference, not fixed yet: seed $seed $* ($why)"
			grep -m2 '^    [<>]' "$TMP/seed.log"
		else
			cat "$TMP/seed.log"
			bad "corpus seed $seed $* ($why)"
		fi
	done <"$CORPUS"
fi
echo "corpus: $known_open known differences still open (see tests/fuzz/corpus.txt)"
# Fresh seeds explore; they run when RS_FUZZ_SEEDS asks for some (with
# today's library most fresh seeds still find one of the known
# differences, so CI runs the corpus only).
base=${RS_FUZZ_BASE:-20261201}
count=${RS_FUZZ_SEEDS:-0}
[ "${RS_FUZZ_STRICT:-0}" = 1 ] && count=${RS_FUZZ_SEEDS:-40}
budget=${RS_FUZZ_TIME:-75}
ran=0
fresh_fail=0
for ((i = 0; i < count; i++)); do
	if [ $((SECONDS - t0)) -ge "$budget" ] && [ -z "${RS_FUZZ_SEEDS:-}" ]; then
		echo "note: time budget of ${budget} s reached after $ran fresh seeds"
		break
	fi
	seed=$((base * 1000 + i))
	if ! check_seed "$seed"; then
		fresh_fail=$((fresh_fail + 1))
	fi
	ran=$((ran + 1))
done
if [ "$ran" -gt 0 ]; then
	check "fresh seeds $((base * 1000)) .. $((base * 1000 + ran - 1)): $ran run, $fresh_fail with a difference" test $fresh_fail = 0
fi
echo "difffuzz: $((SECONDS - t0)) s"
finish

# Third-party suite: libuv's own tests (`uv_run_tests`, built from Debian's
# libuv1 source package): every test named tcp_* or udp_* and every test
# whose name contains "close" or "socket" (127 in libuv 1.44.2, 116 run
# once the ones below are left out: TCP and UDP handles over IPv4 and IPv6,
# shutdown/close/reset paths, poll/pipe/fork/spawn/signal/fs-event closes;
# 2 are skipped by libuv on Linux, so 114 are compared), each run
# alone (`uv_run_tests NAME`: libuv runs it, and its helper servers, in
# child processes with its own 5 s timeout), in three modes:
#   plain             no library
#   lib               LD_PRELOAD=$RS_LIB, default knobs
#   arm0              LD_PRELOAD=$RS_LIB, RINGSOCK_ARM_AFTER=0 (receives armed at once)
# Every test that passes plain must pass in lib and arm0.  Tests that fail
# or are skipped plain are left out of the comparison and listed; a plain
# failure is run again once, and a test that passes then is listed as flaky
# plain (not compared).  A failure under the library is run again once only
# to say whether it is deterministic: it counts as a failure either way.
# The counters (RINGSOCK_STATS) must show the engine served sockets.
#
# Left out: tests whose sources (the test's body, its helpers' bodies, or
# code outside any test in their files) hold an address literal other than
# loopback (127.x, ::1), 0.0.0.0 or :: -- this machine may contact no other
# host.  The list is computed from the sources at each run and printed; for
# libuv 1.44.2 it is:
#   tcp_bind6_error_addrnotavail   4:4:4:4:4:4:4:4 (binds to it, expects EADDRNOTAVAIL)
#   tcp_bind_error_addrnotavail_2  4.4.4.4 (the same over IPv4)
#   tcp_close_while_connecting     1.2.3.4 (connects to it)
#   tcp_connect_timeout            8.8.8.8 (connects to it)
#   udp_connect                    8.8.8.8 (connect on a connected socket)
#   udp_connect6                   2001:4860:4860::8888 (the same over IPv6)
#   udp_multicast_interface        239.255.0.1 (multicast send)
#   udp_multicast_join             239.255.0.1 (multicast group)
#   udp_multicast_join6            ff02::1 (multicast group)
#   udp_multicast_ttl              239.255.0.1 (multicast send)
#   udp_send_hang_loop             192.0.2.3 (sends to it)
# Only literals are looked for: no selected test resolves a host name.
#
# The source comes from `apt-get source libuv1` (thirdparty.bash: adds a
# deb-src entry when apt has none) and is built once with cmake into
# $RS_BUILD/thirdparty/libuv, kept between runs.  Exit 77 only when the
# source or the tools to build it cannot be obtained.  ~30 s to fetch and
# build, ~40 s to run (2 cores).  The tests use fixed ports (9123-9125) and
# /tmp/uv-test-sock*, so the runs are one after the other.
#
# Environment: RS_LIBUV_TESTS="tcp_ping_pong udp_options ..." runs only
# these tests (still minus the left-out ones).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/thirdparty.bash"
T0=$SECONDS
need timeout
need flock

# ---- obtain and build libuv's uv_run_tests ---------------------------

CACHE=$RS_BUILD/thirdparty/libuv
RUNNER=$CACHE/build/uv_run_tests
mkdir -p "$CACHE"

obtain_and_build() {
	local t=$SECONDS
	thirdparty_fetch libuv1 "$CACHE/src" build-essential dpkg-dev cmake
	echo "libuv: source $(ls "$CACHE"/src/*.dsc 2>/dev/null | sed 's|.*/||') in $SRCDIR ($((SECONDS - t)) s)"
	t=$SECONDS
	rm -rf "$CACHE/build"
	if ! { cmake -S "$SRCDIR" -B "$CACHE/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON &&
		cmake --build "$CACHE/build" --target uv_run_tests -j2; } >"$CACHE/build.log" 2>&1 || [ ! -x "$RUNNER" ]; then
		tail -20 "$CACHE/build.log"
		bad "libuv uv_run_tests did not build (log: $CACHE/build.log)"
		finish
		exit 1
	fi
	echo "$SRCDIR" >"$CACHE/build/.built"
	echo "libuv: uv_run_tests built in $((SECONDS - t)) s"
}

exec 9>"$CACHE/.lock"
flock 9
if [ -x "$RUNNER" ] && [ -s "$CACHE/build/.built" ] && [ -d "$(cat "$CACHE/build/.built")/test" ]; then
	SRCDIR=$(cat "$CACHE/build/.built")
	echo "libuv: using the cached build $RUNNER"
else
	obtain_and_build
fi
flock -u 9
TESTSRC=$SRCDIR/test
export UV_RUN_AS_ROOT=1 # libuv's runner refuses root without it

# ---- the tests --------------------------------------------------------

# Names from test-list.h (TEST_ENTRY / TEST_ENTRY_CUSTOM; TEST_HELPER lines
# are helpers), kept when the runner knows them (some are Windows-only).
sed -n 's/^[[:space:]]*TEST_ENTRY\(_CUSTOM\)\{0,1\}[[:space:]]*([[:space:]]*\([A-Za-z0-9_]*\).*/\2/p' \
	"$TESTSRC/test-list.h" | sort -u >"$TMP/listed"
"$RUNNER" --list 2>/dev/null | awk '{print $1}' | sort -u >"$TMP/known"
[ -s "$TMP/listed" ] && [ -s "$TMP/known" ] || { bad "no test names from test-list.h or uv_run_tests --list"; finish; exit 1; }
comm -12 "$TMP/listed" "$TMP/known" | grep -E '^(tcp_|udp_)|close|socket' >"$TMP/selected" || true
if [ -n "${RS_LIBUV_TESTS:-}" ]; then
	# shellcheck disable=SC2086
	printf '%s\n' $RS_LIBUV_TESTS | sort -u | comm -12 - "$TMP/selected" >"$TMP/sel" && mv "$TMP/sel" "$TMP/selected"
fi
# TEST_HELPER (test, helper) lines: a test's helper processes.
sed -n 's/^[[:space:]]*TEST_HELPER[[:space:]]*([[:space:]]*\([A-Za-z0-9_]*\)[[:space:]]*,[[:space:]]*\([A-Za-z0-9_]*\).*/\1 \2/p' \
	"$TESTSRC/test-list.h" >"$TMP/helpers"

# Address literals in the test sources: "file owner line literal" for each
# one that is not loopback, 0.0.0.0 or ::, owner the TEST_IMPL/HELPER_IMPL
# whose body holds it, or * for code outside any (shared by the file).
awk '
FNR == 1 { owner = "*" }
match($0, /^(TEST|HELPER)_IMPL\(([A-Za-z0-9_]+)\)/) {
	owner = $0; sub(/^[A-Z]+_IMPL\(/, "", owner); sub(/\).*/, "", owner)
}
{
	s = $0
	while (match(s, /"[0-9a-fA-F.]*:[0-9a-fA-F.]*:[0-9a-fA-F:.]*(%[A-Za-z0-9]+)?"|"[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+"/)) {
		lit = substr(s, RSTART + 1, RLENGTH - 2); s = substr(s, RSTART + RLENGTH)
		a = lit; sub(/%.*/, "", a)
		if (a ~ /^127\./ || a == "0.0.0.0" || a ~ /^::[01]?$/ || a ~ /^(0+:){7}0*1$/ || a ~ /^::ffff:127\./) continue
		f = FILENAME; sub(/.*\//, "", f)
		print f, owner, FNR, lit
	}
}
/^}/ { owner = "*" }' "$TESTSRC"/*.c >"$TMP/literals"
impl_files() { # name: the files that hold TEST_IMPL(name) or HELPER_IMPL(name)
	grep -lE "^(TEST|HELPER)_IMPL\\($1\\)" "$TESTSRC"/*.c 2>/dev/null | sed 's|.*/||'
}
: >"$TMP/excluded"
for t in $(cat "$TMP/selected"); do
	owners="$t $(awk -v t="$t" '$1 == t {print $2}' "$TMP/helpers")"
	why=""
	for o in $owners; do
		for f in $(impl_files "$o"); do
			why="$why$(awk -v f="$f" -v o="$o" '$1 == f && ($2 == o || $2 == "*") {printf " %s (%s:%s)", $4, $1, $3}' "$TMP/literals")"
		done
	done
	[ -n "$why" ] && echo "$t$why" >>"$TMP/excluded"
done
awk '{print $1}' "$TMP/excluded" | sort -u | comm -23 "$TMP/selected" - >"$TMP/tests"
NTESTS=$(wc -l <"$TMP/tests")
echo "libuv: $(wc -l <"$TMP/selected") tests selected, $(wc -l <"$TMP/excluded") left out (address literals off loopback):"
sed 's/^/    /' "$TMP/excluded"
[ "$NTESTS" -gt 0 ] || { bad "no test to run"; finish; exit 1; }

# ---- run --------------------------------------------------------------

MODES="plain lib arm0"
TEST_TIMEOUT=60 # s, around one `uv_run_tests NAME` (libuv's own limit is 5 s, 20 s for a few)
RUN_BUDGET=420  # s, all the runs (ctest gives the script 600 s); tests left then are not run
RUN_DEADLINE=$((SECONDS + RUN_BUDGET))

# run_one MODE TEST OUT: runs the test, prints OK, SKIP, FAIL or HUNG.
run_one() {
	local mode=$1 t=$2 out=$3 rc
	local -a envs=(env -u LD_PRELOAD)
	case $mode in
	lib) envs+=("LD_PRELOAD=$RS_LIB" "RINGSOCK_STATS=$TMP/lib/stats/$t.%p") ;;
	arm0) envs+=("LD_PRELOAD=$RS_LIB" "RINGSOCK_STATS=$TMP/arm0/stats/$t.%p" RINGSOCK_ARM_AFTER=0) ;;
	esac
	# stderr with stdout: a crash message lands next to the result
	(cd "$TMP/$mode/cwd" && "${envs[@]}" timeout -k 5 $TEST_TIMEOUT "$RUNNER" "$t") >"$out" 2>&1 </dev/null
	rc=$?
	if grep -qE "^ok [0-9]+ - $t # SKIP" "$out"; then echo SKIP
	elif [ $rc = 0 ] && grep -qE "^ok [0-9]+ - $t\$" "$out"; then echo OK
	elif [ $rc = 124 ] || [ $rc = 137 ]; then echo HUNG
	else echo FAIL
	fi
}

for m in $MODES; do
	mkdir -p "$TMP/$m/stats" "$TMP/$m/cwd"
	ln -s "$TESTSRC" "$TMP/$m/cwd/test" # test/fixtures/..., relative to the source tree
done
# One line per test: "test plain lib arm0 plain_retry lib_retry arm0_retry"
# (- when not run again).  Each test runs in the three modes one after the
# other, so the modes see the same load.
: >"$TMP/results"
t0=$SECONDS
for t in $(cat "$TMP/tests"); do
	if [ $SECONDS -ge $RUN_DEADLINE ]; then
		echo "$t NOTRUN NOTRUN NOTRUN - - -" >>"$TMP/results"
		continue
	fi
	p=$(run_one plain "$t" "$TMP/plain/$t.out")
	pr=-
	[ "$p" = OK ] || [ "$p" = SKIP ] || pr=$(run_one plain "$t" "$TMP/plain/$t.retry.out")
	l=$(run_one lib "$t" "$TMP/lib/$t.out")
	a=$(run_one arm0 "$t" "$TMP/arm0/$t.out")
	lr=- ar=-
	if [ "$p" = OK ] || [ "$pr" = OK ]; then
		[ "$l" = OK ] || lr=$(run_one lib "$t" "$TMP/lib/$t.retry.out")
		[ "$a" = OK ] || ar=$(run_one arm0 "$t" "$TMP/arm0/$t.retry.out")
	fi
	echo "$t $p $l $a $pr $lr $ar" >>"$TMP/results"
done
echo "libuv: ran $NTESTS tests in 3 modes in $((SECONDS - t0)) s"

# ---- compare ----------------------------------------------------------

# What the runner printed for one test (for the summary).
show() { grep -v '^#* *$' "$1" | head -15 | cut -c1-220 | sed 's/^/        | /'; }

echo
echo "==== libuv uv_run_tests: results per mode ===="
for m in $MODES; do
	col=$(( $(echo "$MODES" | tr ' ' '\n' | grep -nx "$m" | cut -d: -f1) + 1 ))
	printf '  %-6s %s\n' "$m" "$(awk -v c=$col '{n[$c]++} END {printf "OK=%d FAIL=%d HUNG=%d SKIP=%d NOTRUN=%d", n["OK"], n["FAIL"], n["HUNG"], n["SKIP"], n["NOTRUN"]}' "$TMP/results")"
done

echo
echo "Not compared (not passing plain):"
for t in $(awk '$2 == "SKIP" {print $1}' "$TMP/results"); do
	echo "  skipped plain: $t: $(grep -m1 -E "^ok [0-9]+ - $t # SKIP" "$TMP/plain/$t.out" | sed 's/.*# SKIP *//')"
done
awk '$2 != "OK" && $2 != "SKIP" && $2 != "NOTRUN" && $5 != "OK" {print "  fails plain (twice): " $1 " [" $2 "/" $5 "; lib " $3 ", arm0 " $4 "]"}' "$TMP/results"
awk '$2 != "OK" && $5 == "OK" {print "  flaky plain (failed, then passed; not compared): " $1 " [" $2 "/OK; lib " $3 ", arm0 " $4 "]"}' "$TMP/results"

n=$(awk '$2 == "NOTRUN"' "$TMP/results" | wc -l)
check "the runs finished within the ${RUN_BUDGET} s budget (tests not run: $n)" test "$n" = 0

compared=0
diffs=0
while read -r t p l a _ lr ar; do
	[ "$p" = OK ] || continue
	compared=$((compared + 1))
	for m in lib arm0; do
		if [ $m = lib ]; then r=$l rr=$lr; else r=$a rr=$ar; fi
		[ "$r" = OK ] && continue
		diffs=$((diffs + 1))
		case $rr in
		OK) how="intermittent: passed when run again" ;;
		*) how="deterministic: $rr when run again" ;;
		esac
		[ "$r" = HUNG ] && how="hung past the $TEST_TIMEOUT s timeout; $how"
		grep -q '^# timeout' "$TMP/$m/$t.out" && how="libuv's own per-test timeout; $how"
		bad "$t passes plain, $r under the library ($m; $how)"
		show "$TMP/$m/$t.out"
	done
done <"$TMP/results"

# ---- the engine must have served sockets ------------------------------

echo
echo "==== ringsock counters (summed over every process of every test) ===="
for m in lib arm0; do
	total=0 nt=0
	for t in $(cat "$TMP/tests"); do
		a=$(cat "$TMP/$m/stats/$t".* 2>/dev/null | grep -o ' accelerated=[0-9]*' | awk -F= '{s += $2} END {print s + 0}')
		total=$((total + a))
		[ "$a" -gt 0 ] && nt=$((nt + 1))
	done
	nosys=$(cat "$TMP/$m/stats"/* 2>/dev/null | grep -o ' calls_nosys=[0-9]*' | awk -F= '{s += $2} END {print s + 0}')
	echo "  $m: $(find "$TMP/$m/stats" -type f | wc -l) stats files ($(find "$TMP/$m/stats" -type f -empty | wc -l) empty: helpers the runner killed), $nt tests with sockets on the engine, calls answered without a system call: $nosys"
	check "$m: the engine served sockets (accelerated=$total)" test "$total" -gt 0
	w=$(cat "$TMP/$m"/*.out | grep 'ringsock\[[0-9]*\]' | sed 's/^.*\(ringsock\[\)[0-9]*\]/\1PID]/' | sort | uniq -c)
	if [ -n "$w" ]; then
		echo "    library messages (count, text):"
		echo "$w" | sed 's/^/      /'
	fi
done

echo
echo "==== summary ===="
echo "  $NTESTS tests run ($(wc -l <"$TMP/excluded") left out: off-loopback addresses), $compared pass plain and are compared in lib and arm0"
check "every test that passes plain passes under the library ($((compared * 2)) comparisons, $diffs differences)" test "$diffs" = 0
echo "total time: $((SECONDS - T0)) s"
finish

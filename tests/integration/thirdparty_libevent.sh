# Third-party suite: libevent's own regression tests (`regress`, built from
# Debian's libevent source package, every test group: main, bufferevent,
# http, listener, rpc, dns, evbuffer, util, thread, ...; all on loopback,
# DNS against regress's own in-process server), run:
#   plain             no library
#   lib               LD_PRELOAD=$RS_LIB, default knobs
#   arm0              LD_PRELOAD=$RS_LIB, RINGSOCK_ARM_AFTER=0 (receives armed at once)
# and, as libevent's own `make verify` does, on its poll and select
# backends too (plain_poll/lib_poll, plain_select/lib_select: default
# knobs; ringsock serves poll and select itself).  Every test that passes
# plain must pass under the library on the same backend; tests that fail
# or are skipped plain are left out of the comparison and listed.  The
# counters (RINGSOCK_STATS) must show the engine really served sockets.
#
# The source comes from `apt-get source libevent` (when apt has no deb-src
# entry, one mirroring the system's Debian `deb` entries is added in a file
# of its own, /etc/apt/sources.list.d/ringsock-tests-deb-src.{sources,list}:
# thirdparty.bash, shared with thirdparty_libuv.sh) and is built once with
# cmake into $RS_BUILD/thirdparty/libevent, kept between runs.  Exit 77
# only when the source or the tools to build it cannot be obtained.  ~30 s
# to fetch and build, ~95 s to run.
#
# Environment: RS_LIBEVENT_GROUPS="main http ..." runs only these groups;
# RS_LIBEVENT_BACKENDS=0 runs the three epoll modes only;
# RS_LIBEVENT_SERIAL=1 runs the modes one after the other instead of side
# by side (~90 s each).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/thirdparty.bash"
T0=$SECONDS
need timeout
need flock

# ---- expected results -------------------------------------------------

# Tests that fail now and then WITHOUT the library: not compared (their
# results are still printed).
#  - dns/getaddrinfo_cancel_stress: 1000 lookups against an in-process DNS
#    server, each with a 10 ms cancel timer; asserts that not all 1000 were
#    answered before their timer: a race against the clock.  Measured on
#    2 cores, alone: failed 6 of 26 runs plain, 10 of 26 under the library.
#  - util/monotonic_prc: asserts that the precise monotonic clock advanced
#    in steps under 25 us between busy reads: fails plain when the machine
#    is loaded (seen plain and with the plain select backend in one CI-like
#    run with the whole suite beside it).
#  - bufferevent/bufferevent_timeout_pair, bufferevent_timeout_filter_pair:
#    assert that a 50 ms read/write timeout fired within +-50 ms and that
#    the callback ran exactly twice: they fail plain when the machine is
#    loaded (seen plain beside the whole suite and two CPU burners; once
#    under the library's poll mode in the same run: "62 vs 50",
#    regress_bufferevent.c:1057).
FLAKY_PLAIN="dns/getaddrinfo_cancel_stress util/monotonic_prc"
FLAKY_PLAIN="$FLAKY_PLAIN bufferevent/bufferevent_timeout_pair bufferevent/bufferevent_timeout_filter_pair"

# Tests that fail under the library because of a known engine bug, one per
# line: "test  modes  bug", modes a comma list of lib,arm0,lib_poll,lib_select,
# e.g. "http/foo  lib,arm0  urgent data (MSG_OOB) not delivered".  They are
# reported, not counted as differences.  Remove an entry once its bug is
# fixed (the summary says when a listed test passes again).  Empty: no
# test fails because of one of the known bugs.
KNOWN_ENGINE_BUGS="
"

# ---- obtain and build libevent's regress ------------------------------

CACHE=$RS_BUILD/thirdparty/libevent
REGRESS=$CACHE/build/bin/regress
mkdir -p "$CACHE"
obtain_and_build() {
	local t=$SECONDS
	# dpkg-dev unpacks the source package; python3 generates regress's RPC
	# stubs (cmake builds no regress without it); zlib1g-dev adds the
	# bufferevent_zlib tests.
	thirdparty_fetch libevent "$CACHE/src" build-essential dpkg-dev cmake python3 zlib1g-dev
	echo "libevent: source $(ls "$CACHE"/src/*.dsc 2>/dev/null | sed 's|.*/||') in $SRCDIR ($((SECONDS - t)) s)"
	t=$SECONDS
	rm -rf "$CACHE/build"
	# Static libevent (one build instead of shared+static), no OpenSSL, no
	# samples or benchmarks: only the regress program is built.
	if ! { cmake -S "$SRCDIR" -B "$CACHE/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DEVENT__LIBRARY_TYPE=STATIC -DEVENT__DISABLE_OPENSSL=ON \
		-DEVENT__DISABLE_BENCHMARK=ON -DEVENT__DISABLE_SAMPLES=ON \
		-DPYTHON_EXECUTABLE="$(command -v /usr/bin/python3 || command -v python3)" &&
		cmake --build "$CACHE/build" --target regress -j2; } >"$CACHE/build.log" 2>&1 || [ ! -x "$REGRESS" ]; then
		tail -20 "$CACHE/build.log"
		bad "libevent regress did not build (log: $CACHE/build.log)"
		finish
		exit 1
	fi
	touch "$CACHE/build/.built"
	echo "libevent: regress built in $((SECONDS - t)) s"
}

exec 9>"$CACHE/.lock"
flock 9
if [ -x "$REGRESS" ] && [ -f "$CACHE/build/.built" ]; then
	echo "libevent: using the cached build $REGRESS"
else
	obtain_and_build
fi
flock -u 9

# ---- run the suite ------------------------------------------------------

"$REGRESS" --list-tests 2>/dev/null | sed -n 's/^    \([A-Za-z0-9_]*\/[A-Za-z0-9_]*\).*/\1/p' >"$TMP/all-tests"
[ -s "$TMP/all-tests" ] || { bad "regress --list-tests listed nothing"; finish; exit 1; }
LE_GROUPS=${RS_LIBEVENT_GROUPS:-$(sed 's|/.*||' "$TMP/all-tests" | awk '!seen[$0]++')}
for g in $LE_GROUPS; do grep "^$g/" "$TMP/all-tests"; done >"$TMP/tests" || true
mv "$TMP/tests" "$TMP/all-tests"
[ -s "$TMP/all-tests" ] || { bad "no regress test in groups: $LE_GROUPS"; finish; exit 1; }
# Each mode: "name baseline environment...".  The three required runs use
# libevent's default backend (epoll).  libevent's own `make verify` also
# runs the suite on its poll and select backends; ringsock serves poll and
# select itself, so those run too (plain and under the library, default
# knobs), each compared with the plain run of the same backend.
MODE_SPECS="plain          -
lib            plain        LD_PRELOAD=@LIB RINGSOCK_STATS=@STATS
arm0           plain        LD_PRELOAD=@LIB RINGSOCK_STATS=@STATS RINGSOCK_ARM_AFTER=0
plain_poll     -            EVENT_NOEPOLL=1
lib_poll       plain_poll   EVENT_NOEPOLL=1 LD_PRELOAD=@LIB RINGSOCK_STATS=@STATS
plain_select   -            EVENT_NOEPOLL=1 EVENT_NOPOLL=1
lib_select     plain_select EVENT_NOEPOLL=1 EVENT_NOPOLL=1 LD_PRELOAD=@LIB RINGSOCK_STATS=@STATS"
[ "${RS_LIBEVENT_BACKENDS:-1}" = 0 ] && MODE_SPECS=$(echo "$MODE_SPECS" | head -3)
MODES=$(echo "$MODE_SPECS" | awk '{print $1}')
LIB_MODES=$(echo "$MODE_SPECS" | awk '$2 != "-" {print $1}')
base_of() { echo "$MODE_SPECS" | awk -v m="$1" '$1 == m {print $2}'; }
env_of() { echo "$MODE_SPECS" | awk -v m="$1" '$1 == m {for (i = 3; i <= NF; i++) print $i}'; }
GROUP_TIMEOUT=240 # s, one group in one mode (http, the longest, takes ~80 s)
TEST_TIMEOUT=30   # s, per test (regress's own alarm; a forked test that hits it is "[Lost connection!]")
RUN_BUDGET=420    # s, all the runs (ctest gives the script 600 s); groups left then are not run

run_mode() { # mode: runs every group, one regress per group
	local mode=$1 g rc e
	local out=$TMP/$mode
	mkdir -p "$out/stats" "$out/cwd"
	for g in $LE_GROUPS; do
		local left=$((RUN_DEADLINE - SECONDS))
		if [ $left -lt 10 ]; then
			echo "$g budget" >>"$out/rc"
			continue
		fi
		[ $left -gt $GROUP_TIMEOUT ] && left=$GROUP_TIMEOUT
		local -a envs=(env -u LD_PRELOAD)
		for e in $(env_of "$mode"); do
			e=${e//@LIB/$RS_LIB}
			envs+=("${e//@STATS/$out/stats/$g.%p}")
		done
		# stderr with stdout: a crash message lands next to its test
		(cd "$out/cwd" && "${envs[@]}" timeout -k 5 $left "$REGRESS" --timeout $TEST_TIMEOUT "$g/..") \
			>"$out/$g.out" 2>&1 </dev/null
		rc=$?
		echo "$g $rc" >>"$out/rc"
	done
}

# Results of one mode: "test RESULT" lines, RESULT one of OK FAIL SKIP
# DISABLED HUNG (started, never finished: the group run was cut by its
# timeout or regress itself died), NOTRUN (never started).  Retries regress
# made (its TT_RETRIABLE tests) are listed in $TMP/$mode.retries.
parse_mode() {
	local mode=$1
	cat "$TMP/$mode"/*.out >"$TMP/$mode.all"
	awk -v retries="$TMP/$mode.retries" '
	FNR == NR { known[$1] = 1; order[++n] = $1; next }
	function flush() { if (cur != "") res[cur] = (r == "" ? "HUNG" : r); cur = ""; r = "" }
	/^[A-Za-z0-9_]+\/[A-Za-z0-9_]+: / {
		name = $1; sub(/:$/, "", name)
		if (name in known) {
			flush(); cur = name
			rest = $0; sub(/^[^ ]+: /, "", rest)
			if (rest ~ /(^|[] ])OK$/) r = "OK"
			else if (rest ~ /SKIPPED$/) r = "SKIP"
			else if (rest ~ /DISABLED$/) r = "DISABLED"
			next
		}
	}
	/^  \[RETRYING / { print $0 > retries }
	cur != "" && r == "" && /^OK$/ { r = "OK"; next }
	cur != "" && r == "" && /^SKIPPED$/ { r = "SKIP"; next }
	cur != "" && /^  \[[A-Za-z0-9_]+ FAILED\]$/ { r = "FAIL"; next }
	END {
		flush()
		for (i = 1; i <= n; i++) print order[i], (order[i] in res ? res[order[i]] : "NOTRUN")
	}' "$TMP/all-tests" "$TMP/$mode.all" >"$TMP/$mode.res"
	touch "$TMP/$mode.retries"
}

# What regress printed for one test in one mode (for the summary).
test_output() { # mode test
	awk -v t="$2" '
	/^[A-Za-z0-9_]+\/[A-Za-z0-9_]+: / { p = ($1 == t ":") }
	p' "$TMP/$1.all" | grep -v '^    OK \|^  	 OK ' | head -12 | cut -c1-220 | sed 's/^/        | /'
}

echo "libevent: groups: $(echo $LE_GROUPS)"
echo "libevent: modes: $(echo $MODES)"
RUN_DEADLINE=$((SECONDS + 100000)) # serial: by hand, no overall budget
if [ "${RS_LIBEVENT_SERIAL:-0}" = 1 ]; then
	for m in $MODES; do t=$SECONDS; run_mode "$m"; echo "run $m: $((SECONDS - t)) s"; done
else
	# The modes run side by side: the tests mostly wait on timers (a whole
	# run takes ~2 s of CPU), so this costs the time of the longest mode.
	t=$SECONDS
	RUN_DEADLINE=$((SECONDS + RUN_BUDGET))
	pids=""
	for m in $MODES; do run_mode "$m" & pids="$pids $!"; done
	# shellcheck disable=SC2086
	wait $pids
	echo "runs (side by side): $((SECONDS - t)) s"
fi

for m in $MODES; do parse_mode "$m"; done

# ---- compare ----------------------------------------------------------

res_of() { awk -v t="$2" '$1 == t { print $2 }' "$TMP/$1.res"; }
is_flaky() { case " $FLAKY_PLAIN " in *" $1 "*) return 0 ;; esac; return 1; }
known_bug() { # test mode -> prints the bug, succeeds when listed for that mode
	echo "$KNOWN_ENGINE_BUGS" | awk -v t="$1" -v m="$2" '
	$1 == t && ("," $2 ",") ~ ("," m ",") { $1 = ""; $2 = ""; sub(/^ +/, ""); print; found = 1 }
	END { exit !found }'
}

echo
echo "==== libevent regress: results per mode ===="
for m in $MODES; do
	printf '  %-12s %s; retries by regress: %s\n' "$m" \
		"$(awk '{c[$2]++} END {printf "OK=%d FAIL=%d HUNG=%d NOTRUN=%d SKIP=%d DISABLED=%d", c["OK"], c["FAIL"], c["HUNG"], c["NOTRUN"], c["SKIP"], c["DISABLED"]}' "$TMP/$m.res")" \
		"$(wc -l <"$TMP/$m.retries")"
	sed 's/^ */               /' "$TMP/$m.retries"
	awk '$2 == "budget" { print "               group " $1 ": not run, the '$RUN_BUDGET' s budget for the runs was spent"; next }
	     $2 != 0 && $2 != 1 { print "               group " $1 ": regress exit status " $2 ($2 == 124 || $2 == 137 ? " (cut by its timeout)" : "") }' "$TMP/$m/rc"
done

echo
echo "Not compared (not passing plain; DISABLED = off by default in regress):"
for b in $(echo "$MODE_SPECS" | awk '$2 == "-" {print $1}'); do
	awk '$2 != "OK" { print $2, $1 }' "$TMP/$b.res" | sort | awk -v b="$b" '
	$1 != k { if (k != "") print ""; k = $1; printf "  %s %s:", b, k; w = 20 }
	{ if (w + length($2) > 110) { printf "\n   "; w = 3 } printf " %s", $2; w += length($2) + 1 }
	END { if (k != "") print "" }'
done
for t in $FLAKY_PLAIN; do
	grep -qx "$t" "$TMP/all-tests" || continue
	echo "  flaky plain, results only: $t$(for m in $MODES; do printf ' %s=%s' "$m" "$(res_of "$m" "$t")"; done)"
done

# A plain run that hung or did not finish leaves tests out of the comparison.
for b in $(echo "$MODE_SPECS" | awk '$2 == "-" {print $1}'); do
	n=$(awk '$2 == "HUNG" || $2 == "NOTRUN"' "$TMP/$b.res" | wc -l)
	check "$b: the run finished (tests hung or not run: $n)" test "$n" = 0
done

compared=0
diffs=0
known_hits=""
known_fixed=""
for m in $LIB_MODES; do
	b=$(base_of "$m")
	n=0
	for t in $(awk '$2 == "OK" { print $1 }' "$TMP/$b.res"); do
		is_flaky "$t" && continue
		n=$((n + 1))
		r=$(res_of "$m" "$t")
		if [ "$r" = OK ]; then
			known_bug "$t" "$m" >/dev/null && known_fixed="$known_fixed $t($m)"
			continue
		fi
		if bug=$(known_bug "$t" "$m"); then
			known_hits="$known_hits
  $t [$m: $r] known engine bug: $bug"
			continue
		fi
		diffs=$((diffs + 1))
		why=""
		[ "$r" = HUNG ] && why=": no result, it hung (its group was cut by its timeout) or regress died"
		[ "$r" = NOTRUN ] && why=": never started, an earlier test hung or regress died"
		test_output "$m" "$t" | grep -q 'Lost connection' &&
			why=": the test process died (crash, abort or the $TEST_TIMEOUT s per-test alarm)"
		bad "$t passes $b, $r under the library ($m)$why"
		test_output "$m" "$t"
	done
	compared=$((compared + n))
	eval "compared_$m=$n"
	# A flaky test that hangs under the library still counts.
	for t in $FLAKY_PLAIN; do
		[ "$(res_of "$m" "$t")" = HUNG ] && [ "$(res_of "$b" "$t")" != HUNG ] && {
			diffs=$((diffs + 1)); bad "$t (flaky plain) HUNG under the library ($m)"; test_output "$m" "$t"; }
	done
done
[ -n "$known_hits" ] && echo "Known engine bugs hit (not counted):$known_hits"
[ -n "$known_fixed" ] && echo "NOTE: listed in KNOWN_ENGINE_BUGS but passing now, remove the entry:$known_fixed"

# ---- the engine must have served sockets ------------------------------

sum_stat() { # mode group key
	cat "$TMP/$1/stats/$2".* 2>/dev/null | grep -o " $3=[0-9]*" | awk -F= '{s += $2} END {print s + 0}'
}
echo
echo "==== ringsock counters (summed over the processes of each group) ===="
for m in $LIB_MODES; do
	total=0
	line=""
	for g in $LE_GROUPS; do
		a=$(sum_stat "$m" "$g" accelerated)
		total=$((total + a))
		[ "$a" -gt 0 ] && line="$line $g=$a/$(sum_stat "$m" "$g" calls_nosys)"
	done
	echo "  $m: $(find "$TMP/$m/stats" -type f | wc -l) processes reported; per group, sockets accelerated/calls answered without a system call:$line"
	check "$m: the engine served sockets (accelerated=$total)" test "$total" -gt 0
	# Per group only where receives are armed at once: with the default
	# knobs a connection that ends within its first reads and one send
	# never enters the engine (RINGSOCK_ARM_AFTER), and bufferevent's
	# tests make mostly such connections.
	[ "$m" = arm0 ] && for g in http bufferevent; do
		case " $(echo $LE_GROUPS) " in *" $g "*)
			a=$(sum_stat "$m" "$g" accelerated)
			check "$m: the engine served $g's TCP connections (accelerated=$a)" test "$a" -gt 0 ;;
		esac
	done
	# Messages the library printed (warnings at exit, errors).
	w=$(grep -h 'ringsock\[[0-9]*\]' "$TMP/$m"/*.out | sed 's/^.*\(ringsock\[\)[0-9]*\]/\1PID]/' | sort | uniq -c)
	if [ -n "$w" ]; then
		echo "    library messages (count, text), in groups: $(grep -l 'ringsock\[[0-9]*\]' "$TMP/$m"/*.out | sed 's|.*/||; s|\.out$||' | tr '\n' ' ')"
		echo "$w" | sed 's/^/      /'
	fi
done

echo
echo "==== summary ===="
for m in $MODES; do
	b=$(base_of "$m")
	printf '  %-12s %3d of %d tests passed' "$m" "$(awk '$2 == "OK"' "$TMP/$m.res" | wc -l)" "$(wc -l <"$TMP/all-tests")"
	[ "$b" != - ] && eval "printf ', %d compared with %s' \$compared_$m $b"
	echo
done
echo "  flaky plain, not compared: $FLAKY_PLAIN; known engine bugs listed: $(echo "$KNOWN_ENGINE_BUGS" | grep -c '[a-z]')"
check "every test that passes plain passes under the library ($compared comparisons, $diffs differences)" test "$diffs" = 0
echo "total time: $((SECONDS - T0)) s"
finish

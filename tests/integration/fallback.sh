# Each io_uring feature treated as missing (RINGSOCK_FEATURES_DISABLE) or
# each setup mode (RINGSOCK_SETUP): the engine scenarios give the same
# transcript as without the library.  A feature the engine needs sends
# every socket to the kernel path, and the report says why (no_io_uring),
# as does io_uring refused by a seccomp filter;
# one it can do without leaves the engine serving sockets.
. "$(dirname "$0")/lib.sh"
scenarios="engine_recv engine_epoll engine_pingpong tcp_basic"
for scn in $scenarios; do
	test -x "$RS_SCN_DIR/scn_$scn" || { bad "scenario $scn not built"; continue; }
	(cd "$TMP" && timeout 120 "$RS_SCN_DIR/scn_$scn" >"$TMP/$scn.plain" 2>/dev/null)
	echo $? >"$TMP/$scn.plain.rc"
done
run_mode() { # label, expect (off|on), env...
	local label=$1 expect=$2
	shift 2
	for scn in $scenarios; do
		rm -f "$TMP/stats"
		# shellcheck disable=SC2086
		(cd "$TMP" && env "$@" RINGSOCK_STATS="$TMP/stats" LD_PRELOAD="$RS_LIB" \
			${WRAP:-} timeout 120 "$RS_SCN_DIR/scn_$scn" >"$TMP/$scn.out" 2>"$TMP/$scn.err")
		rc=$?
		if cmp -s "$TMP/$scn.plain" "$TMP/$scn.out" && [ "$rc" = "$(cat "$TMP/$scn.plain.rc")" ]; then
			ok "$label: $scn identical to the kernel path"
		else
			bad "$label: $scn differs (exit $rc)"
			diff -u "$TMP/$scn.plain" "$TMP/$scn.out" | head -20
		fi
		acc=$(stat_sum "$TMP/stats" accelerated)
		if [ "$expect" = off ]; then
			check "$label: $scn: no socket on the engine" test "$acc" = 0
			check "$label: $scn: sockets counted as no_io_uring" test "$(stat_sum "$TMP/stats" no_io_uring)" -ge 1
		else
			check "$label: $scn: the engine still serves sockets" test "$acc" -ge 1
		fi
	done
}
# Needed by the engine: without one, everything is passed through.
for f in io_uring multishot_recv buf_ring single_issuer defer_taskrun; do
	run_mode "FEATURES_DISABLE=$f" off RINGSOCK_FEATURES_DISABLE=$f
done
for m in coop plain; do
	run_mode "SETUP=$m" off RINGSOCK_SETUP=$m
done
# io_uring really refused (a seccomp filter, as container runtimes have):
# the same, counted as no_io_uring too.
WRAP="$RS_NO_URING" run_mode "seccomp blocks io_uring_setup" off RINGSOCK_LOG=warn
# Optional for the engine: without the receive's byte cap it keeps serving.
run_mode "FEATURES_DISABLE=recv_cap" on RINGSOCK_FEATURES_DISABLE=recv_cap
# Nor without registered files (sockets named by their descriptors).
run_mode "FEATURES_DISABLE=fixed_files" on RINGSOCK_FEATURES_DISABLE=fixed_files
# Features the engine does not use are not knob values.
RINGSOCK_FEATURES_DISABLE=send_zc "$RS_CLI" check --knobs >"$TMP/k" 2>&1; rc=$?
check "FEATURES_DISABLE=send_zc is refused with a message naming it" grep -q "FEATURES_DISABLE='send_zc' is invalid" "$TMP/k"
check "FEATURES_DISABLE=send_zc: the launcher refuses to start" test $rc != 0
finish

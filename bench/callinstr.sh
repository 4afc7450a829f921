#!/bin/bash
# callinstr.sh [ROUNDS]: the library's own instructions per call, counted by
# callgrind (valgrind) inside bench/callcost.c's timed batches, plain and
# under ringsock.  Unlike callcost.sh's nanoseconds, a count does not move
# with the host's load or its modes: the same build gives the same numbers
# run after run, so a change's effect on a path shows even where the time
# is noise.  Counted: user-space instructions only (a system call counts as
# its C library wrapper, the kernel's work not at all), so the plain column
# is the floor a call costs in user space, not the kernel path's cost.
# RINGSOCK_BUILD selects the build (default build/).  Needs valgrind.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
B=${RINGSOCK_BUILD:-$root/build}
rounds=${1:-20}
prog=$B/bench/rs-callcost
[ -x "$prog" ] || { echo "callinstr.sh: build first (cmake --build build): no $prog" >&2; exit 2; }
command -v valgrind >/dev/null && command -v callgrind_annotate >/dev/null ||
	{ echo "callinstr.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
batch=$(sed -n 's/^#define BATCH \([0-9]*\).*/\1/p' "$root/bench/callcost.c")
calls=$((rounds * batch))
measures="recv_queued send_queued epoll_ready select_ready poll_ready epoll_kernel recv_kernel send_kernel"
for m in kernel ringsock; do
	pre=()
	[ $m = ringsock ] && pre=(env "LD_PRELOAD=$B/libringsock.so")
	# (the program runs under env: callgrind follows it, and counts only
	# inside the batch functions)
	valgrind --tool=callgrind --trace-children=yes --toggle-collect='batch_*' \
		--callgrind-out-file="$tmp/$m.%p" "${pre[@]}" "$prog" "$rounds" >"$tmp/$m.out" 2>"$tmp/$m.err" ||
		{ echo "callinstr.sh: $m run failed:" >&2; tail -5 "$tmp/$m.err" >&2; exit 1; }
	out=$(ls -S "$tmp/$m".[0-9]* | head -1)
	callgrind_annotate --inclusive=yes "$out" >"$tmp/$m.txt" 2>/dev/null
done
printf '%-14s %12s %12s   (instructions per call, %d calls each)\n' call plain ringsock "$calls"
for k in $measures; do
	a=$(grep -E "[:]batch_${k} " "$tmp/kernel.txt" | head -1 | awk '{gsub(",", "", $1); print $1}')
	b=$(grep -E "[:]batch_${k} " "$tmp/ringsock.txt" | head -1 | awk '{gsub(",", "", $1); print $1}')
	awk -v k="$k" -v a="${a:-0}" -v b="${b:-0}" -v n="$calls" \
		'BEGIN { printf "%-14s %12.0f %12.0f\n", k, a / n, b / n }'
done

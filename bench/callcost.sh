#!/bin/bash
# callcost.sh [REPS] [ROUNDS]: the library's own cost per call (bench/callcost.c),
# plain and under ringsock, alternating, REPS runs each (default 5); prints each
# run and the medians.  RINGSOCK_BUILD selects the build (default build/).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
B=${RINGSOCK_BUILD:-$root/build}
reps=${1:-5}
rounds=${2:-200}
prog=$B/bench/rs-callcost
[ -x "$prog" ] || { echo "callcost.sh: build first (cmake --build build): no $prog" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$reps"); do
	if [ $((i % 2)) = 1 ]; then order="kernel ringsock"; else order="ringsock kernel"; fi
	for m in $order; do
		if [ $m = kernel ]; then out=$("$prog" "$rounds"); else out=$(LD_PRELOAD=$B/libringsock.so "$prog" "$rounds"); fi
		echo "$m: $out"
		echo "$out" >>"$tmp/$m"
	done
done
med() { tr ' ' '\n' <"$tmp/$1" | grep "^$2=" | cut -d= -f2 | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
echo
printf '%-14s %12s %12s %8s\n' call "kernel ns" "ringsock ns" ratio
for k in recv_queued_ns send_queued_ns epoll_ready_ns select_ready_ns poll_ready_ns epoll_kernel_ns recv_kernel_ns send_kernel_ns; do
	a=$(med kernel $k)
	b=$(med ringsock $k)
	awk -v k="${k%_ns}" -v a="$a" -v b="$b" 'BEGIN { printf "%-14s %12.1f %12.1f %8.3f\n", k, a, b, b / a }'
done

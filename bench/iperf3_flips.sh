#!/bin/bash
# iperf3_flips.sh BUILD N [IPERF3 ARGS]: iperf3 with both ends under ringsock
# from BUILD, N runs of 3 s; prints each run's Gbit/s and the server's direct and
# calls_nosys counters (a run whose data socket reads through the kernel
# shows direct in the hundreds of thousands).
B=$1; N=$2; shift 2
for i in $(seq $N); do
  p=$((20000 + RANDOM % 20000))
  rm -f /tmp/s.stats /tmp/c.stats
  $B/ringsock --stats=/tmp/s.stats -- iperf3 -s -1 -p $p >/dev/null 2>&1 &
  sleep 0.5
  out=$($B/ringsock --stats=/tmp/c.stats -- iperf3 -c 127.0.0.1 -p $p -t 3 -J "$@" 2>/dev/null)
  wait
  g=$(echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.2f" % (d["end"]["sum_received"]["bits_per_second"]/1e9))')
  sd=$(grep -o "direct=[0-9]*" /tmp/s.stats | head -1); sn=$(grep -o "calls_nosys=[0-9]*" /tmp/s.stats | head -1)
  echo "run $i: $g Gbit/s  server $sd $sn"
done

#!/bin/bash
# dev.sh - one entry point for a fresh Debian 12 machine (run as root from
# the repository root).
#
#   ./dev.sh demo    install dependencies, build, and run iperf3 and sockperf
#                    on the kernel path and under ringsock, side by side,
#                    with ringsock's counters
#   ./dev.sh test    install dependencies, build, and run the whole test
#                    suite (unit, differential, integration with real
#                    programs, stress, musl, and the differential harness
#                    again under ASan+UBSan and under ThreadSanitizer)
#   ./dev.sh bench [ARGS]  install the benchmark dependencies, build, and run
#                    bench/run ARGS (e.g. --quick)
#   ./dev.sh deps [--bench]  only install the dependencies (with --bench, the
#                    benchmarks' too)
#   ./dev.sh build   only build (build/)
set -euo pipefail
cd "$(dirname "$0")"

# What the build and the tests need (prometheus: promtool and the server
# integration.metrics scrapes with; systemd: systemd-analyze for
# integration.services), and what the benchmarks add.
DEPS=(build-essential cmake pkg-config liburing-dev libnl-3-dev libnl-route-3-dev
      libnl-genl-3-dev libnl-idiag-3-dev libcmocka-dev musl-tools iperf3 sockperf socat iproute2 strace
      util-linux man-db python3 procps git debhelper dpkg-dev lintian rpm
      redis-server redis-tools nginx-light wrk haproxy curl dnsmasq-base dnsperf unbound libpython3.11-testsuite gdb
      nodejs prometheus systemd libglib2.0-tests glib-networking-tests)
BENCH_DEPS=(python3-matplotlib linux-perf memcached libmemcached-tools valgrind)

deps() { # extra packages...
	local missing=()
	for p in "${DEPS[@]}" "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	if [ ${#missing[@]} -gt 0 ]; then
		echo "== installing: ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive
		# The servers the tests start themselves (redis, nginx, haproxy) must not be
		# started as system services by their packages: tell invoke-rc.d
		# not to, for this install only.
		local policy=/usr/sbin/policy-rc.d made=0
		if [ ! -e "$policy" ]; then
			printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made=1
		fi
		apt-get update -q
		local rc=0
		apt-get install -y -q --no-install-recommends "${missing[@]}" || rc=$?
		if [ $made = 1 ]; then rm -f "$policy"; fi
		if [ $rc != 0 ]; then exit $rc; fi
	fi
}

build() { # dir [cmake args...]
	local dir=$1
	shift
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j"$(nproc)"
}

case "${1:-}" in
deps)
	if [ "${2:-}" = --bench ]; then
		deps "${BENCH_DEPS[@]}"
	elif [ -n "${2:-}" ]; then
		echo "dev.sh deps: unknown argument '$2' (--bench installs the benchmarks' dependencies too)" >&2
		exit 2
	else
		deps
	fi
	;;
build) deps; build build ;;
demo)
	deps "${BENCH_DEPS[@]}"
	build build
	bench/run --demo
	;;
bench)
	shift
	deps "${BENCH_DEPS[@]}"
	build build
	bench/run "$@"
	;;
test)
	deps
	build build
	echo "== test suite (build/)"
	(cd build && ctest -j2 --output-on-failure --timeout 900)
	echo "== differential harness and unit tests under ASan+UBSan (build-asan/)"
	build build-asan -DRINGSOCK_SANITIZE=address,undefined
	(cd build-asan && ctest -j2 --output-on-failure --timeout 900)
	echo "== differential harness and unit tests under ThreadSanitizer (build-tsan/)"
	build build-tsan -DRINGSOCK_SANITIZE=thread
	(cd build-tsan && ctest -j2 --output-on-failure --timeout 900)
	;;
*)
	awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
	exit 2
	;;
esac

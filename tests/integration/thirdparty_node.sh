# Third-party suite: Node.js's own tests (test/parallel of Debian 12's
# nodejs 18 source package), socket-heavy ones: test-net-*, test-dgram-*,
# and subsets of test-http-*, test-http2-*, test-https-*, test-tls-*, test-child-process-*
# (the ones that pass sockets and handles to children) and test-cluster-*
# (listed below, SELECTED), each run as `node [its // Flags:] test/parallel/
# test-xxx.js` (the way tools/test.py runs one; test/common is found from
# the test's own path), two at a time, in three modes:
#   plain             no library
#   lib               LD_PRELOAD=$RS_LIB, default knobs
#   arm0              LD_PRELOAD=$RS_LIB, RINGSOCK_ARM_AFTER=0 (receives armed at once)
# Every test that passes plain must pass in lib and arm0.  A test that
# fails plain is run again once: passing then, it is listed as flaky plain
# and not compared, failing again, as failing plain (not compared either);
# one that skips itself plain (`1..0 # Skipped`) is not compared.  A test
# that passes plain and fails under the library is run again alone (one
# run at a time, after all the others), once plain and once in that mode:
# the difference counts when it repeats there (the plain run passing);
# one that does not repeat is printed, with its output, and not counted.
# The counters (RINGSOCK_STATS, one file per process) must show the
# engine served sockets.
#
# This machine may contact no other host.  Left out, computed from the
# sources at each run (and printed):
#   - tests whose code (comments are not looked at), or a test/fixtures
#     script it names, holds an IPv4 or IPv6 address literal other than
#     loopback (127.x, ::1), 0.0.0.0 or ::, or a host name (a dotted name
#     ending in a top-level domain: example.com, google.com, ... even when
#     only used as a header or a certificate name);
#   - tests that mention multicast, broadcast, networkInterfaces,
#     os.hostname(), dns.resolve*/reverse/setServers/lookupService,
#     common/internet, 'internet' or 'addons';
#   - tests that test/parallel/parallel.status marks SKIP, FLAKY or FAIL
#     for every system or for Linux.
# SELECTED (303 tests) was chosen from the 1176 tests of these groups not
# left out above: test-net-* but for names with timeout/large/many/
# pingpong/stress/slow, all test-dgram-*, every third test-http-* (fourth
# test-https-*, test-tls-*) among names about sockets, keep-alive, agents,
# pipelining, upgrades, close/destroy/abort, 16 test-http2-* of clients,
# servers, compat, ping, goaway, multiplexing and files (each ran in under
# a second), and the test-child-process-*
# and test-cluster-* that pass sockets, servers and handles; then kept:
# the ones that passed plain on a loaded 2-core machine (twice for dgram,
# child-process and cluster, where slow ones, over 3.5 s, were dropped;
# once with its retry for the rest).  Dropped as failing plain:
# test-net-socket-connect-without-cb (getaddrinfo ENOTFOUND localhost: the
# machine's localhost has no IPv6 entry).  The tests that talk to other
# hosts were never run.
#
# node: the system's `node` when it is the source package's major version
# (Debian 12: apt-get install nodejs); otherwise (a newer Node.js from
# another repository is installed) Debian's nodejs and libnode108 packages
# of the source's version are fetched with `apt-get download` and unpacked
# into $RS_BUILD/thirdparty/node (not installed: the system's node stays),
# with the packages libnode108 depends on installed (node-acorn,
# node-cjs-module-lexer, node-undici: its builtins load them from
# /usr/share/nodejs).  Exit 77 only when the source or node cannot be
# obtained.
#
# Environment: RS_NODE_TESTS="test-net-pingpong test-dgram-ref ..." runs only
# these tests (still minus the left-out ones); RS_NODE_JOBS (2) tests at a
# time.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/thirdparty.bash"
T0=$SECONDS
need timeout
need flock

# Differences the library is known to have, tracked as issues: "test mode
# issue".  Such a test still runs in every mode; a difference it shows in
# the listed mode is reported as known and does not fail this test.
# (None today.  test-http-writable-true-after-close, with ARM_AFTER=0,
# was one until epoll_wait kept the order of sockets across the engine's
# and the kernel's: "Expected exactly 1, actual 2", issue 31.)
KNOWN_DIFFS="
"

# ---- obtain the source and a node of its version -----------------------

CACHE=$RS_BUILD/thirdparty/node
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9
t=$SECONDS
thirdparty_fetch nodejs "$CACHE/src" nodejs dpkg-dev xz-utils python3
echo "node: source $(ls "$CACHE"/src/*.dsc 2>/dev/null | sed 's|.*/||') in $SRCDIR ($((SECONDS - t)) s)"
TESTDIR=$SRCDIR/test
[ -f "$TESTDIR/common/index.js" ] && [ -d "$TESTDIR/parallel" ] || { bad "no test/common or test/parallel in $SRCDIR"; finish; exit 1; }
SRCVER=$(sed -n 's/^Version: //p' "$CACHE"/src/*.dsc | head -1) # 18.20.4+dfsg-1~deb12u2
UPSTREAM=${SRCVER%%+*}
UPSTREAM=${UPSTREAM%%-*}                                           # 18.20.4
MAJOR=${UPSTREAM%%.*}

NODE_ENV=()
NODE=$(command -v node || true)
sysver=$([ -n "$NODE" ] && "$NODE" --version 2>/dev/null)
if [ -n "$NODE" ] && [ "${sysver#v}" != "$sysver" ] && [ "$(echo "${sysver#v}" | cut -d. -f1)" = "$MAJOR" ]; then
	echo "node: the system's $NODE ($sysver)"
else
	ROOT=$CACHE/node$MAJOR
	NODE=$ROOT/usr/bin/node
	NODE_ENV=("LD_LIBRARY_PATH=$ROOT/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)")
	if ! env "${NODE_ENV[@]}" "$NODE" --version >/dev/null 2>&1; then
		echo "node: the system's is ${sysver:-missing}, not $MAJOR.x: unpacking Debian's nodejs $MAJOR into $ROOT"
		# A Debian version of nodejs whose upstream version is the source's.
		binver=$(apt-cache madison nodejs | awk -F'|' -v u="$UPSTREAM" '$3 ~ /debian/ && $3 ~ /Packages/ {v = $2; gsub(/ /, "", v); if (index(v, u "+") == 1 || index(v, u "-") == 1) {print v; exit}}')
		[ -n "$binver" ] || { echo "skip: apt knows no Debian nodejs $UPSTREAM"; exit 77; }
		rm -rf "$CACHE/debs" "$ROOT" && mkdir -p "$CACHE/debs" "$ROOT"
		(cd "$CACHE/debs" && apt-get download -q -o APT::Sandbox::User=root "nodejs=$binver" "libnode$(apt-cache show "nodejs=$binver" | sed -n 's/^Depends:.*libnode\([0-9]*\).*/\1/p' | head -1)=$binver") >"$TMP/apt-download.log" 2>&1 ||
			{ tail -5 "$TMP/apt-download.log"; echo "skip: apt-get download nodejs=$binver failed"; exit 77; }
		deps=""
		for d in "$CACHE"/debs/*.deb; do
			dpkg-deb -x "$d" "$ROOT"
			for p in $(dpkg-deb -f "$d" Depends | tr ',' '\n' | sed 's/|.*//; s/(.*//; s/:any//' | tr -d ' '); do
				case $p in nodejs | libnode*) ;; *) pkg_installed "$p" || deps="$deps $p" ;; esac
			done
		done
		if [ -n "$deps" ]; then
			[ "$(id -u)" = 0 ] || { echo "skip: not root, cannot install$deps"; exit 77; }
			echo "apt: installing$deps"
			# shellcheck disable=SC2086
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=120 --no-install-recommends $deps >"$TMP/apt-install.log" 2>&1 ||
				{ tail -5 "$TMP/apt-install.log"; echo "skip: cannot install$deps"; exit 77; }
		fi
	fi
	env "${NODE_ENV[@]}" "$NODE" --version >/dev/null 2>&1 || { env "${NODE_ENV[@]}" "$NODE" --version 2>&1 | head -3; echo "skip: Debian's node $MAJOR does not run"; exit 77; }
	echo "node: $NODE ($(env "${NODE_ENV[@]}" "$NODE" --version); the system's is ${sysver:-missing})"
fi
flock -u 9

# ---- the tests --------------------------------------------------------

SELECTED="
# net (115)
test-net-access-byteswritten test-net-after-close test-net-allow-half-open
test-net-better-error-messages-listen-path
test-net-better-error-messages-path test-net-binary test-net-bind-twice
test-net-buffersize test-net-bytes-read test-net-bytes-stats
test-net-child-process-connect-reset test-net-client-bind-twice
test-net-connect-abort-controller test-net-connect-buffer
test-net-connect-buffer2 test-net-connect-call-socket-connect
test-net-connect-destroy test-net-connect-immediate-destroy
test-net-connect-keepalive test-net-connect-memleak test-net-connect-no-arg
test-net-connect-nodelay test-net-connect-options-allowhalfopen
test-net-connect-options-fd test-net-connect-options-invalid
test-net-connect-options-ipv6 test-net-connect-options-path
test-net-connect-options-port test-net-connect-paused-connection
test-net-connect-reset test-net-connect-reset-after-destroy
test-net-connect-reset-before-connected
test-net-connect-reset-until-connected
test-net-deprecated-setsimultaneousaccepts test-net-dns-custom-lookup
test-net-dns-error test-net-dns-lookup test-net-dns-lookup-skip
test-net-during-close test-net-eaddrinuse test-net-end-close
test-net-end-destroyed test-net-end-without-connect test-net-error-twice
test-net-keepalive test-net-listen-close-server
test-net-listen-close-server-callback-is-not-function
test-net-listen-exclusive-random-ports test-net-listen-fd0
test-net-listen-invalid-port test-net-listen-ipv6only test-net-listening
test-net-local-address-port test-net-localerror test-net-normalize-args
test-net-onread-static-buffer test-net-options-lookup
test-net-pause-resume-connecting test-net-perf_hooks
test-net-persistent-keepalive test-net-persistent-nodelay
test-net-persistent-ref-unref test-net-pipe-connect-errors
test-net-reconnect test-net-remote-address test-net-remote-address-port
test-net-server-async-dispose test-net-server-call-listen-multiple-times
test-net-server-capture-rejection test-net-server-close
test-net-server-drop-connections test-net-server-keepalive
test-net-server-listen-handle test-net-server-listen-options
test-net-server-listen-options-signal test-net-server-listen-path
test-net-server-listen-remove-callback test-net-server-max-connections
test-net-server-max-connections-close-makes-more-available
test-net-server-nodelay test-net-server-options
test-net-server-pause-on-connect test-net-server-reset
test-net-server-simultaneous-accepts-produce-warning-once
test-net-server-try-ports test-net-server-unref
test-net-server-unref-persistent test-net-socket-byteswritten
test-net-socket-close-after-end
test-net-socket-connect-invalid-autoselectfamily
test-net-socket-connecting
test-net-socket-constructor test-net-socket-destroy-send
test-net-socket-destroy-twice test-net-socket-end-before-connect
test-net-socket-end-callback test-net-socket-local-address
test-net-socket-no-halfopen-enforcer test-net-socket-ready-without-cb
test-net-socket-reset-send test-net-socket-reset-twice
test-net-socket-setnodelay test-net-socket-write-after-close
test-net-socket-write-error test-net-stream test-net-sync-cork
test-net-throttle test-net-writable test-net-write-after-close
test-net-write-after-end-nt test-net-write-arguments
test-net-write-cb-on-destroy-before-connect test-net-write-connect-write
test-net-write-fully-async-buffer test-net-write-fully-async-hex-string
# dgram (59)
test-dgram-abort-closed test-dgram-address test-dgram-async-dispose
test-dgram-bind test-dgram-bind-default-address test-dgram-bind-error-repeat
test-dgram-bind-fd test-dgram-bind-fd-error test-dgram-bytes-length
test-dgram-close test-dgram-close-during-bind test-dgram-close-in-listening
test-dgram-close-is-not-callback test-dgram-close-signal
test-dgram-cluster-bind-error test-dgram-connect-send-callback-buffer
test-dgram-connect-send-callback-buffer-length
test-dgram-connect-send-callback-multi-buffer
test-dgram-connect-send-default-host test-dgram-connect-send-empty-array
test-dgram-connect-send-empty-buffer test-dgram-connect-send-empty-packet
test-dgram-connect-send-multi-buffer-copy
test-dgram-connect-send-multi-string-array test-dgram-create-socket-handle
test-dgram-create-socket-handle-fd test-dgram-createSocket-type
test-dgram-custom-lookup test-dgram-ipv6only test-dgram-listen-after-bind
test-dgram-msgsize test-dgram-oob-buffer test-dgram-recv-error
test-dgram-ref test-dgram-send-address-types test-dgram-send-bad-arguments
test-dgram-send-callback-buffer
test-dgram-send-callback-buffer-empty-address
test-dgram-send-callback-buffer-length
test-dgram-send-callback-buffer-length-empty-address
test-dgram-send-callback-multi-buffer
test-dgram-send-callback-multi-buffer-empty-address
test-dgram-send-callback-recursive test-dgram-send-default-host
test-dgram-send-empty-array test-dgram-send-empty-buffer
test-dgram-send-empty-packet test-dgram-send-error
test-dgram-send-invalid-msg-type test-dgram-send-multi-buffer-copy
test-dgram-send-multi-string-array test-dgram-send-queue-info
test-dgram-sendto test-dgram-setTTL test-dgram-socket-buffer-size
test-dgram-udp4 test-dgram-udp6-send-default-host test-dgram-unref
test-dgram-unref-in-cluster
# http (39)
test-http-1.0-keep-alive test-http-abort-queued
test-http-agent-abort-controller test-http-agent-domain-reused-gc
test-http-agent-keepalive-delay test-http-agent-maxsockets
test-http-agent-null test-http-agent-scheduling
test-http-agent-uninitialized-with-handle test-http-client-abort-destroy
test-http-client-abort-keep-alive-queued-tcp-socket
test-http-client-abort-response-event test-http-client-abort2
test-http-client-agent-abort-close-event test-http-client-close-event
test-http-client-override-global-agent test-http-client-spurious-aborted
test-http-client-timeout-on-connect test-http-end-throw-socket-handling
test-http-incoming-message-connection-setter test-http-keep-alive
test-http-keep-alive-close-on-header
test-http-keep-alive-pipeline-max-requests test-http-keepalive-override
test-http-outgoing-destroy test-http-pipeline-assertionerror-finish
test-http-pipeline-socket-parser-typeerror test-http-request-agent
test-http-server-close-destroy-timeout
test-http-server-connection-list-when-close
test-http-server-headers-timeout-keepalive
test-http-server-keep-alive-max-requests-null
test-http-server-keepalive-req-gc test-http-server-stale-close
test-http-socket-error-listeners test-http-upgrade-advertise
test-http-upgrade-client2 test-http-upgrade-server2
test-http-writable-true-after-close
# http2 (16)
test-http2-client-destroy test-http2-client-jsstream-destroy
test-http2-client-settings-before-connect test-http2-client-upload
test-http2-client-write-before-connect test-http2-compat-serverrequest
test-http2-compat-serverresponse-end test-http2-compat-serverresponse-trailers
test-http2-create-client-connect test-http2-goaway-opaquedata
test-http2-misbehaving-multiplex test-http2-multiplex test-http2-onping
test-http2-ping test-http2-respond-file test-http2-server-close-callback
# https (14)
test-https-abortcontroller test-https-agent-create-connection
test-https-agent-session-eviction test-https-agent-unref-socket
test-https-client-checkServerIdentity test-https-client-renegotiation-limit
test-https-drain test-https-insecure-parse-per-stream
test-https-max-headers-count test-https-selfsigned-no-keycertsign-no-crash
test-https-server-connections-checking-leak
test-https-server-request-timeout test-https-strict test-https-truncate
# tls (22)
test-tls-alpn-server-client test-tls-client-abort2 test-tls-client-mindhsize
test-tls-client-renegotiation-limit
test-tls-clientcertengine-invalid-arg-type test-tls-close-notify
test-tls-connect-hints-option test-tls-connect-pipe
test-tls-connect-timeout-option test-tls-error-servername
test-tls-handshake-nohang test-tls-max-send-fragment
test-tls-on-empty-socket test-tls-reuse-host-from-socket
test-tls-server-connection-server test-tls-server-verify
test-tls-socket-constructor-alpn-options-parsing
test-tls-streamwrap-buffersize test-tls-ticket test-tls-tlswrap-segfault
test-tls-wrap-econnreset-socket test-tls-wrap-timeout
# child-process (18)
test-child-process-disconnect test-child-process-fork
test-child-process-fork-close
test-child-process-fork-closed-channel-segfault
test-child-process-fork-dgram test-child-process-fork-getconnections
test-child-process-fork-net-server test-child-process-fork-ref
test-child-process-fork-stdio test-child-process-fork3
test-child-process-http-socket-leak test-child-process-ipc
test-child-process-recv-handle test-child-process-send-after-close
test-child-process-send-cb test-child-process-send-keep-open
test-child-process-send-returns-boolean test-child-process-server-close
# cluster (20)
test-cluster-child-index-dgram test-cluster-child-index-net
test-cluster-concurrent-disconnect test-cluster-dgram-reuse
test-cluster-ipc-throw test-cluster-listen-pipe-readable-writable
test-cluster-listening-port test-cluster-net-listen
test-cluster-net-listen-backlog test-cluster-net-send
test-cluster-rr-domain-listen test-cluster-rr-handle-close
test-cluster-rr-handle-ref-unref test-cluster-rr-ref
test-cluster-send-deadlock test-cluster-send-socket-to-worker-http-server
test-cluster-shared-handle-bind-error
test-cluster-worker-disconnect-on-error test-cluster-worker-handle-close
test-cluster-worker-wait-server-close
"

# Left out: "name reason" for each test of the groups that talks (or may
# talk) to another host or that parallel.status marks.
"$PY" - "$SRCDIR" "$TMP/candidates" "$TMP/excluded" <<'EOF'
import os, re, sys
src, out_sel, out_ex = sys.argv[1:4]
par = os.path.join(src, 'test', 'parallel')
fix = os.path.join(src, 'test', 'fixtures')
group = re.compile(r'^test-(net|dgram|http|http2|https|tls|child-process|cluster)-.*\.(js|mjs)$')
status, sec = {}, None
for line in open(os.path.join(par, 'parallel.status')):
    line = line.split('#')[0].strip()
    if not line: continue
    if line.startswith('['): sec = line; continue
    if sec in ('[true]', '[$system==linux]') and ':' in line:
        n, v = line.split(':', 1); status[n.strip()] = v.strip().replace(' ', '')
ipv4 = re.compile(r'(?<![\w.])(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})(?![\w.])')
ipv6 = re.compile(r"""['"`]([0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,7}(?:\.\d+\.\d+\.\d+\.\d+)?(?:%\w+)?)['"`/]""")
ipv6b = re.compile(r'\[([0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*)\]')
host = re.compile(r"""['"`/@]((?:[A-Za-z0-9-]+\.)+(?:com|org|net|io|dev|info|invalid|test|example|local|localdomain|internal|edu|gov|arpa|co|uk|de|jp|cn|nl|fr|ru|app|xyz|biz|tld|foo|bar))(?![\w.-]*\.(?:js|pem|key|crt|cert|json|txt|mjs|cjs|pfx|der|csr|cnf))(?=[:'"`/\s]|$)""")
words = re.compile(r"require\(['\"]\.\./common/internet|\baddons\b|\binternet\b|hasInternet|networkInterfaces|[Mm]ulticast|[Bb]roadcast|addMembership|addSourceSpecificMembership|localIPv6Hosts|resolveAny|dns\.resolve|dns\.reverse|\.setServers\(|lookupService|hostname\(")
def loop4(a):
    p = [int(x) for x in a]
    return p[0] == 127 or p == [0, 0, 0, 0]
def loop6(a):
    b = a.split('%')[0].lower()
    return b in ('::', '::1', '0:0:0:0:0:0:0:1', '0:0:0:0:0:0:0:0') or b.startswith('::ffff:127.') or b == '::ffff:0.0.0.0'
def reasons(path):
    r, inblock = [], False
    try: text = open(path, errors='replace').read()
    except OSError: return r
    for ln, s in enumerate(text.split('\n'), 1):
        # Comments (links to issues) are not code: /* */ blocks, a line
        # starting with // or *, a // after a blank.
        if inblock:
            if '*/' not in s: continue
            s = s.split('*/', 1)[1]; inblock = False
        while '/*' in s:
            a, b = s.split('/*', 1)
            if '*/' in b: s = a + ' ' + b.split('*/', 1)[1]
            else: s = a; inblock = True
        st = s.lstrip()
        if st.startswith('//') or st.startswith('*'): continue
        s = re.sub(r'(^|\s)//\s.*$', '', s)
        for m in ipv4.finditer(s):
            if not loop4(m.groups()): r.append('%s (line %d)' % (m.group(0), ln))
        for m in list(ipv6.finditer(s)) + list(ipv6b.finditer(s)):
            a = m.group(1)
            if a.count(':') < 2 and '::' not in a: continue
            if not loop6(a): r.append('%s (line %d)' % (a, ln))
        for m in host.finditer(s): r.append('%s (line %d)' % (m.group(1), ln))
        for m in words.finditer(s): r.append('"%s" (line %d)' % (m.group(0), ln))
    return r
fixnames = set(os.listdir(fix))
with open(out_sel, 'w') as osel, open(out_ex, 'w') as oex:
    for f in sorted(os.listdir(par)):
        if not group.match(f): continue
        name = f.rsplit('.', 1)[0]
        if status.get(name, 'PASS') != 'PASS':
            oex.write('%s parallel.status: %s\n' % (name, status[name])); continue
        p = os.path.join(par, f)
        why = ['%s' % x for x in reasons(p)]
        for m in sorted(set(re.findall(r"['\"]([\w./-]+\.(?:js|mjs|cjs))['\"]", open(p, errors='replace').read()))):
            b = os.path.basename(m)
            if b in fixnames and os.path.isfile(os.path.join(fix, b)):
                why += ['fixtures/%s: %s' % (b, x) for x in reasons(os.path.join(fix, b))]
        if why: oex.write('%s %s\n' % (name, ', '.join(why[:4]) + (' ...' if len(why) > 4 else '')))
        else: osel.write(name + '\n')
EOF
[ -s "$TMP/candidates" ] || { bad "no test of the groups in $TESTDIR/parallel"; finish; exit 1; }
printf '%s\n' "$SELECTED" | sed 's/#.*//' | tr ' ' '\n' | sed '/^$/d' | sort -u >"$TMP/selected"
if [ -n "${RS_NODE_TESTS:-}" ]; then
	# shellcheck disable=SC2086
	printf '%s\n' $RS_NODE_TESTS | sort -u >"$TMP/selected"
fi
awk '{print $1}' "$TMP/excluded" | sort -u >"$TMP/excluded.names"
comm -12 "$TMP/selected" "$TMP/excluded.names" >"$TMP/selected.excluded"
sort -u "$TMP/candidates" | comm -12 "$TMP/selected" - >"$TMP/tests"
missing=$(comm -23 "$TMP/selected" <(sort -u "$TMP/candidates" "$TMP/excluded.names") | tr '\n' ' ')
echo "node: $(( $(wc -l <"$TMP/candidates") + $(wc -l <"$TMP/excluded") )) tests in the groups, $(wc -l <"$TMP/excluded") left out (another host, or parallel.status):"
sed 's/^/    /' "$TMP/excluded" | cut -c1-200
[ -s "$TMP/selected.excluded" ] && echo "node: selected but left out: $(tr '\n' ' ' <"$TMP/selected.excluded")"
[ -n "$missing" ] && echo "node: selected but not in this source: $missing"
NTESTS=$(wc -l <"$TMP/tests")
echo "node: $NTESTS tests to run"
[ "$NTESTS" -gt 0 ] || { bad "no test to run"; finish; exit 1; }

# ---- run --------------------------------------------------------------

MODES="plain lib arm0"
JOBS=${RS_NODE_JOBS:-2}
TEST_TIMEOUT=60 # s, one test (most take 1 s; tools/test.py's own limit is 120 s)
RUN_BUDGET=${RS_NODE_BUDGET:-720} # s, all the runs (ctest gives the script 900 s); tests left then are not run
RUN_DEADLINE=$((SECONDS + RUN_BUDGET))

for m in $MODES; do mkdir -p "$TMP/$m/stats" "$TMP/$m/out"; done
mkdir -p "$TMP/home"

# run_one MODE TEST OUT: runs the test, prints OK, SKIP, FAIL or HUNG.
run_one() {
	local mode=$1 t=$2 out=$3 rc f flags
	local -a envs=(env -u LD_PRELOAD "${NODE_ENV[@]}" TEST_PARALLEL=1 NODE_TEST_NO_INTERNET=1
		"OPENSSL_CONF=$SRCDIR/deps/openssl/openssl/apps/openssl.cnf" "HOME=$TMP/home"
		"NODE_TEST_DIR=$TMP/$mode/td.$t")
	case $mode in
	lib) envs+=("LD_PRELOAD=$RS_LIB" "RINGSOCK_STATS=$TMP/lib/stats/$t.%p") ;;
	arm0) envs+=("LD_PRELOAD=$RS_LIB" "RINGSOCK_STATS=$TMP/arm0/stats/$t.%p" RINGSOCK_ARM_AFTER=0) ;;
	esac
	f=$(ls "$TESTDIR/parallel/$t".*js | head -1)
	flags=$(sed -n 's|^// Flags: ||p' "$f" | head -1)
	rm -rf "$TMP/$mode/td.$t" && mkdir -p "$TMP/$mode/td.$t"
	# shellcheck disable=SC2086
	(cd "$TMP/$mode/td.$t" && "${envs[@]}" timeout -k 5 $TEST_TIMEOUT "$NODE" $flags "$f") >"$out" 2>&1 </dev/null
	rc=$?
	rm -rf "$TMP/$mode/td.$t"
	if [ $rc = 0 ] && grep -q '^1\.\.0 # Skipped' "$out"; then echo SKIP
	elif [ $rc = 0 ]; then echo OK
	elif [ $rc = 124 ] || [ $rc = 137 ]; then echo HUNG
	else echo "FAIL"
	fi
}
# run_test TEST: the three modes one after the other (the modes see the
# same load), then the plain retry; appends "test plain lib arm0
# plain_retry" to results.  The library's retries come after all the runs.
run_test() {
	local t=$1 p l a pr=-
	if [ $SECONDS -ge $RUN_DEADLINE ]; then
		echo "$t NOTRUN NOTRUN NOTRUN -" >>"$TMP/results"
		return
	fi
	p=$(run_one plain "$t" "$TMP/plain/out/$t")
	l=$(run_one lib "$t" "$TMP/lib/out/$t")
	a=$(run_one arm0 "$t" "$TMP/arm0/out/$t")
	[ "$p" = OK ] || [ "$p" = SKIP ] || pr=$(run_one plain "$t" "$TMP/plain/out/$t.retry")
	echo "$t $p $l $a $pr" >>"$TMP/results"
}
export -f run_one run_test
export TMP TESTDIR SRCDIR NODE RS_LIB TEST_TIMEOUT RUN_DEADLINE
export NODE_ENV_STR="${NODE_ENV[*]}"
: >"$TMP/results"
t0=$SECONDS
# (NODE_ENV is an array: rebuilt in the workers from its one-string form;
# its entries hold no blanks.)
xargs -P "$JOBS" -n 1 bash -c 'NODE_ENV=($NODE_ENV_STR); run_test "$1"' _ <"$TMP/tests"
runtime=$((SECONDS - t0))
# A test that passes plain and fails under the library is run again,
# alone (one run at a time), once plain and once in the mode it failed
# in: "test mode plain_alone mode_alone".
: >"$TMP/retries"
NODE_ENV=($NODE_ENV_STR)
while read -r t p l a pr; do
	[ "$p" = OK ] || continue
	for m in lib arm0; do
		if [ $m = lib ]; then r=$l; else r=$a; fi
		[ "$r" = OK ] && continue
		if [ $SECONDS -ge $((RUN_DEADLINE + 60)) ]; then
			echo "$t $m NOTRUN NOTRUN" >>"$TMP/retries" # no time left: counted
		else
			echo "$t $m $(run_one plain "$t" "$TMP/plain/out/$t.alone.$m") $(run_one $m "$t" "$TMP/$m/out/$t.alone")" >>"$TMP/retries"
		fi
	done
done <"$TMP/results"
echo "node: ran $NTESTS tests in 3 modes in $runtime s ($JOBS at a time), the differences again alone in $((SECONDS - t0 - runtime)) s"

# ---- compare ----------------------------------------------------------

# What a test printed (for the summary): its first lines that are no
# stack frames.
show() { grep -v '^ *at \|^ *$' "$1" | head -12 | cut -c1-220 | sed 's/^/        | /'; }

echo
echo "==== node test/parallel: results per mode ===="
for m in $MODES; do
	col=$(( $(echo "$MODES" | tr ' ' '\n' | grep -nx "$m" | cut -d: -f1) + 1 ))
	printf '  %-6s %s\n' "$m" "$(awk -v c=$col '{n[$c]++} END {printf "OK=%d FAIL=%d HUNG=%d SKIP=%d NOTRUN=%d", n["OK"], n["FAIL"], n["HUNG"], n["SKIP"], n["NOTRUN"]}' "$TMP/results")"
done

echo
echo "Not compared (not passing plain):"
for t in $(awk '$2 == "SKIP" {print $1}' "$TMP/results"); do
	echo "  skipped plain: $t: $(grep -m1 '^1\.\.0 # Skipped' "$TMP/plain/out/$t" | sed 's/^1\.\.0 # Skipped: *//')"
done
awk '$2 != "OK" && $2 != "SKIP" && $2 != "NOTRUN" && $5 != "OK" {print "  fails plain (twice): " $1 " [" $2 "/" $5 "; lib " $3 ", arm0 " $4 "]"}' "$TMP/results"
awk '$2 != "OK" && $2 != "SKIP" && $5 == "OK" {print "  flaky plain (failed, then passed; not compared): " $1 " [" $2 "/OK; lib " $3 ", arm0 " $4 "]"}' "$TMP/results"

n=$(awk '$2 == "NOTRUN"' "$TMP/results" | wc -l)
check "the runs finished within the ${RUN_BUDGET} s budget (tests not run: $n)" test "$n" = 0

compared=0 diffs=0 known=0 passed_alone=0
while read -r t p l a pr; do
	[ "$p" = OK ] || continue # flaky plain when pr is OK: not compared
	compared=$((compared + 1))
	for m in lib arm0; do
		if [ $m = lib ]; then r=$l; else r=$a; fi
		issue=$(printf '%s\n' "$KNOWN_DIFFS" | awk -v t="$t" -v m="$m" '$1 == t && $2 == m {print $3}')
		if [ "$r" = OK ]; then
			[ -n "$issue" ] && echo "  known difference did not show: $t ($m, issue $issue)"
			continue
		fi
		read -r pa ma <<<"$(awk -v t="$t" -v m="$m" '$1 == t && $2 == m {print $3, $4}' "$TMP/retries")"
		how="$r beside another test; alone: $ma in $m, $pa plain"
		[ "$r" = HUNG ] || [ "$ma" = HUNG ] && how="$how (HUNG: past the $TEST_TIMEOUT s timeout)"
		if [ "$ma" = OK ] || [ "$pa" = FAIL ] || [ "$pa" = HUNG ]; then
			# Not repeated alone: printed, not counted.
			passed_alone=$((passed_alone + 1))
			echo "  differed once, not alone: $t ($m: $how)"
			show "$TMP/$m/out/$t"
			continue
		fi
		if [ -n "$issue" ]; then
			known=$((known + 1))
			echo "  known difference (issue $issue): $t passes plain, fails under the library ($m: $how)"
			show "$TMP/$m/out/$t"
			continue
		fi
		diffs=$((diffs + 1))
		bad "$t passes plain, fails under the library ($m: $how)"
		show "$TMP/$m/out/$t"
		[ -s "$TMP/$m/out/$t.alone" ] && { echo "      alone:"; show "$TMP/$m/out/$t.alone"; }
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
	echo "  $m: $(find "$TMP/$m/stats" -type f | wc -l) stats files ($(find "$TMP/$m/stats" -type f -empty | wc -l) empty), $nt tests with sockets on the engine, calls answered without a system call: $nosys"
	check "$m: the engine served sockets (accelerated=$total)" test "$total" -gt 0
	w=$(cat "$TMP/$m"/out/* | grep 'ringsock\[[0-9]*\]' | sed 's/^.*\(ringsock\[\)[0-9]*\]/\1PID]/' | sort | uniq -c)
	if [ -n "$w" ]; then
		echo "    library messages (count, text):"
		echo "$w" | head -20 | sed 's/^/      /'
	fi
done

echo
echo "==== summary ===="
echo "  $NTESTS tests run ($(wc -l <"$TMP/excluded") of the groups left out: another host or parallel.status), $compared pass plain and are compared in lib and arm0"
[ "$known" -gt 0 ] && echo "  $known known differences (KNOWN_DIFFS) not counted"
[ "$passed_alone" -gt 0 ] && echo "  $passed_alone differences that did not repeat alone (listed above) not counted"
check "every test that passes plain passes under the library ($((compared * 2)) comparisons, $diffs differences)" test "$diffs" = 0
echo "total time: $((SECONDS - T0)) s"
finish

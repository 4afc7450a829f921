# `ringsock enable UNIT` / `disable UNIT`: systemd drop-ins, tested without
# systemd as PID 1 (units in a directory of the test's, --dir):
#  - the drop-in's content: [Service], LD_PRELOAD of this build's library,
#    the profile's knobs then --set's (a later one wins), % doubled;
#  - systemd-analyze verify accepts the unit with the drop-in, and does read
#    it (a line that is not systemd's, added on purpose, is reported);
#  - the environment systemd would give the service (its Environment=
#    lines unquoted as systemd does) starts a server under the library:
#    ringsock stat shows it, engine on, and the knobs took effect;
#  - a bad knob value, an unknown knob, an unknown profile and a unit that
#    is not a service are refused (exit 2), nothing written;
#  - disable removes the drop-in (and the directory it made), a second
#    disable says it is not enabled (exit 1), a file not ours is left.
. "$(dirname "$0")/lib.sh"
need ss
need systemd-analyze
server=$RS_BUILD/bench/rs-rr-server
[ -x "$server" ] || { echo "skip: bench programs not built"; exit 77; }
units=$TMP/units
mkdir -p "$units"
port=$(free_port)
cat >"$units/rs-test.service" <<EOF
[Unit]
Description=ringsock drop-in test

[Service]
ExecStart=$server $port 1024 127.0.0.1
EOF
srv=
cleanup() { kill $srv 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT
dropin=$units/rs-test.service.d/ringsock.conf
# (what systemd-analyze says of the unit alone: a machine's own quirks,
# such as no machine-id, must not be blamed on the drop-in)
SYSTEMD_UNIT_PATH="$units:" systemd-analyze verify --man=no "$units/rs-test.service" >"$TMP/verify0" 2>&1
rc0=$?

"$RS_CLI" enable rs-test --profile latency --set send_batch=4 --set "stats=$TMP/rs.%p" --dir "$units" >"$TMP/out"
check "enable: exit 0" test $? = 0
cat "$TMP/out" "$dropin"
check "enable: says what it wrote and how to apply it" grep -q "systemctl daemon-reload" "$TMP/out"
lib=$(readlink -f "$RS_LIB")
check "the drop-in: [Service] with LD_PRELOAD of this build's library" \
	sh -c "grep -qx '\[Service\]' '$dropin' && grep -qx 'Environment=\"LD_PRELOAD=$lib\"' '$dropin'"
check "the drop-in: the profile's knobs" grep -qx 'Environment="RINGSOCK_BLOCKING=kernel"' "$dropin"
check "the drop-in: --set after the profile wins, one line per knob" \
	test "$(grep -c RINGSOCK_SEND_BATCH "$dropin"):$(grep RINGSOCK_SEND_BATCH "$dropin")" = '1:Environment="RINGSOCK_SEND_BATCH=4"'
check "the drop-in: % doubled (not a systemd specifier)" grep -qx "Environment=\"RINGSOCK_STATS=$TMP/rs.%%p\"" "$dropin"

# systemd-analyze: the unit with its drop-in.
SYSTEMD_UNIT_PATH="$units:" systemd-analyze verify --man=no "$units/rs-test.service" >"$TMP/verify" 2>&1
rc=$?
cat "$TMP/verify"
check "systemd-analyze verify: the unit with the drop-in as without it ($rc0), no complaint about it" \
	sh -c "[ $rc = $rc0 ] && ! grep -q 'ringsock.conf' '$TMP/verify'"
cp "$dropin" "$TMP/saved"
echo "NotADirective=1" >>"$dropin"
SYSTEMD_UNIT_PATH="$units:" systemd-analyze verify --man=no "$units/rs-test.service" >"$TMP/verify" 2>&1
check "systemd-analyze verify reads the drop-in (a bad line in it is reported)" \
	grep -q "ringsock.conf:.*NotADirective" "$TMP/verify"
cp "$TMP/saved" "$dropin"

# The environment systemd gives the service: each Environment="..." word
# with its C escapes undone and %% as %.
"$PY" -c '
import re, sys
for line in open(sys.argv[1]):
    m = re.fullmatch(r"Environment=\"((?:[^\"\\\\]|\\\\.)*)\"\n", line)
    if m:
        print(re.sub(r"\\\\(.)", r"\1", m.group(1)).replace("%%", "%"))
' "$dropin" >"$TMP/env"
cat "$TMP/env"
check "the drop-in's environment: LD_PRELOAD and five knobs" test "$(wc -l <"$TMP/env")" = 6
env -i PATH="$PATH" $(cat "$TMP/env") "$server" "$port" 1024 127.0.0.1 >/dev/null 2>&1 &
srv=$!
for i in $(seq 100); do ss -ltn | grep -q ":$port " && "$RS_CLI" stat "$srv" >"$TMP/stat" 2>/dev/null && break; sleep 0.1; done
cat "$TMP/stat"
check "the service's environment: the server runs under the library, engine on" \
	grep -Eq "^$srv +rs-rr-server +on " "$TMP/stat"
kill $srv
wait $srv 2>/dev/null
check "the service's environment: its knobs took effect (STATS=...%p wrote a report for its pid)" \
	grep -q "ringsock\[$srv\]" "$TMP/rs.$srv"
srv=

# Refusals: nothing written.
"$RS_CLI" disable rs-test --dir "$units" >/dev/null
for args in "--set send_batch=banana" "--set no_such_knob=1" "--profile fastest" "--set send_batch"; do
	"$RS_CLI" enable rs-test $args --dir "$units" >/dev/null 2>"$TMP/err"
	rc=$?
	cat "$TMP/err"
	check "enable $args: exit 2, nothing written" \
		sh -c "[ $rc = 2 ] && [ -s '$TMP/err' ] && ! [ -e '$units/rs-test.service.d' ]"
done
"$RS_CLI" enable rs-test.socket --dir "$units" 2>"$TMP/err"
check "enable of a socket unit: exit 2" sh -c "[ $? = 2 ] && grep -q 'not a service' '$TMP/err'"
"$RS_CLI" enable '../etc' --dir "$units" 2>"$TMP/err"
check "enable of a name with a slash: exit 2" test $? = 2

# disable.
"$RS_CLI" enable rs-test.service --dir "$units" >/dev/null
check "enable UNIT.service: the same drop-in" test -f "$dropin"
"$RS_CLI" disable rs-test --dir "$units" >/dev/null
check "disable: the drop-in and its directory are gone" test ! -e "$units/rs-test.service.d"
"$RS_CLI" disable rs-test --dir "$units" 2>"$TMP/err"
check "disable again: exit 1, not enabled" sh -c "[ $? = 1 ] && grep -q 'not enabled' '$TMP/err'"
mkdir -p "$units/rs-test.service.d" && echo "[Service]" >"$dropin"
"$RS_CLI" disable rs-test --dir "$units" 2>"$TMP/err"
check "disable of a ringsock.conf ringsock did not write: exit 1, left alone" sh -c "[ $? = 1 ] && [ -f '$dropin' ]"
finish

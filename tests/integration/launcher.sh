# The ringsock command: help, version, knobs refused before the program
# starts, LD_PRELOAD composition, warnings for programs it cannot reach.
. "$(dirname "$0")/lib.sh"
rs() { "$RS_CLI" "$@"; }

check "--help exits 0 and shows usage" sh -c '"$0" --help | grep -q "^Usage: ringsock"' "$RS_CLI"
check "--version" sh -c '"$0" --version | grep -qE "^ringsock [0-9]+\.[0-9]+\.[0-9]+$"' "$RS_CLI"
rs >/dev/null 2>&1; check "no program: exit 2" test $? = 2
rs --bogus true >/dev/null 2>&1; check "unknown option: exit 2" test $? = 2

out=$(rs --set BUF_COUNT=7 -- sh -c 'echo ran' 2>&1); rc=$?
check "bad --set value refused with exit 2" test $rc = 2
check "program did not run on a bad knob" sh -c '! echo "$0" | grep -q "^ran$"' "$out"
check "message names the variable and the range" sh -c 'echo "$0" | grep -q "RINGSOCK_BUF_COUNT=.7. is invalid (out of range): expected an integer 16..32768"' "$out"
out=$(RINGSOCK_SEND_BATCH=abc rs sh -c 'echo ran' 2>&1); rc=$?
check "bad knob from the environment refused (exit 2)" test $rc = 2
out=$(RINGSOCK_SND_BATCH=4 rs sh -c 'echo ran' 2>&1); rc=$?
check "unknown knob refused (exit 2)" test $rc = 2
check "typo suggestion" sh -c 'echo "$0" | grep -q "did you mean RINGSOCK_SEND_BATCH"' "$out"
rs --set NO_SUCH_KNOB=1 true >/dev/null 2>&1; check "unknown --set knob: exit 2" test $? = 2
rs -p nonsense true >/dev/null 2>&1; check "unknown profile: exit 2" test $? = 2

out=$(rs -p latency --set send_batch=4 -- sh -c 'echo "$RINGSOCK_SEND_BATCH $RINGSOCK_RX_CACHE $RINGSOCK_BLOCKING"')
check "profile sets knobs and --set overrides it (lower-case name, no prefix)" test "$out" = "4 1 kernel"
out=$(rs -p throughput -- sh -c 'echo "$RINGSOCK_BUF_COUNT $RINGSOCK_BUF_SIZE"')
check "throughput profile" test "$out" = "2048 16384"
out=$(rs --stats=/tmp/x.%p -d -- sh -c 'echo "$RINGSOCK_STATS $RINGSOCK_DISABLE"')
check "--stats=FILE and --disable" test "$out" = "/tmp/x.%p 1"

lib=$(readlink -f "$RS_LIB")
out=$(rs -- sh -c 'echo "$LD_PRELOAD"')
check "LD_PRELOAD set to the library next to the command" test "$out" = "$lib"
out=$(LD_PRELOAD=/usr/lib/other.so rs -q -- sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
check "existing LD_PRELOAD entries kept after ours" test "$out" = "$lib:/usr/lib/other.so"
out=$(LD_PRELOAD="$lib" rs -- sh -c 'echo "$LD_PRELOAD"')
check "library not added twice" test "$out" = "$lib"
out=$(rs --library "$RS_LIB" -- sh -c 'echo "$LD_PRELOAD"')
check "--library" test "$out" = "$lib"

sh -c 'exit 0'
rs sh -c 'exit 42'; check "program's exit status passed through" test $? = 42
rs no-such-program-xyz 2>"$TMP/err"; rc=$?
check "missing program: exit 127" test $rc = 127
check "missing program message" grep -q "no-such-program-xyz: command not found" "$TMP/err"
printf 'not executable' >"$TMP/noexec"
chmod 644 "$TMP/noexec"
rs "$TMP/noexec" 2>/dev/null; check "non-executable program: exit 126" test $? = 126

# Programs that cannot take a preload library.
out=$(rs "$RS_STATIC_PROG" 2>&1)
check "static binary still runs" sh -c 'echo "$0" | grep -q "static program ran"' "$out"
check "static binary warning" sh -c 'echo "$0" | grep -q "is statically linked"' "$out"
out=$(rs -q "$RS_STATIC_PROG" 2>&1)
check "--quiet silences the warning" test "$out" = "static program ran"
cp /bin/true "$TMP/suid-true"
chmod u+s "$TMP/suid-true"
out=$(rs "$TMP/suid-true" 2>&1)
check "setuid warning" sh -c 'echo "$0" | grep -q "is setuid"' "$out"
cat >"$TMP/script.sh" <<EOS
#!$RS_STATIC_PROG
EOS
chmod +x "$TMP/script.sh"
out=$(rs "$TMP/script.sh" 2>&1)
check "script whose interpreter is static: warning names the interpreter" sh -c 'echo "$0" | grep -q "static_prog is statically linked"' "$out"
out=$(rs --set FEATURES_DISABLE=io_uring true 2>&1)
check "io_uring treated as missing: warning" sh -c 'echo "$0" | grep -q "io_uring disabled by RINGSOCK_FEATURES_DISABLE"' "$out"
out=$("$RS_NO_URING" "$RS_CLI" true 2>&1); rc=$?
if [ $rc = 77 ]; then echo "skip: seccomp unavailable"; else
	check "io_uring blocked by seccomp: warning says EPERM" sh -c 'echo "$0" | grep -q "blocked (EPERM"' "$out"
	check "program still runs when io_uring is blocked" test $rc = 0
fi
out=$(rs true 2>&1)
check "a normal dynamic program: no warning" test -z "$out"
finish

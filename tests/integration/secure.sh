# AT_SECURE (setuid) programs: the library ignores the environment and
# stays out of the way.  glibc preloads into a setuid program only a
# library named without a slash, from a system directory, with the
# set-user-ID bit, so the test installs such a copy for its duration and
# runs a setuid-root helper as an unprivileged user.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 77; }
need setpriv
multiarch=$(cc -print-multiarch 2>/dev/null)
sysdir=/usr/lib/$multiarch
[ -d "$sysdir" ] || sysdir=/usr/lib
name=libringsock-securetest-$$.so
cp "$RS_LIB" "$sysdir/$name" && chmod 4755 "$sysdir/$name"
trap 'rm -f "$sysdir/$name"; rm -rf "$TMP"' EXIT
chmod 755 "$TMP"
cp "$RS_API_CLIENT" "$TMP/api_client"
chmod 4755 "$TMP/api_client"
user=nobody
# Sanity: as root (no AT_SECURE) the same library tracks sockets.
out=$(LD_PRELOAD=$name "$TMP/api_client")
check "not secure: library loaded and tracking" sh -c 'echo "$0" | grep -q "tracked 2"' "$out"
out=$(setpriv --reuid="$user" --regid=nogroup --clear-groups env LD_PRELOAD=$name \
	RINGSOCK_STATS=1 RINGSOCK_BUF_COUNT=bogus RINGSOCK_STRICT=1 RINGSOCK_TYPO=1 \
	"$TMP/api_client" 2>&1)
echo "$out"
check "setuid: the library was preloaded" sh -c 'echo "$0" | grep -q "^ringsock "' "$out"
check "setuid: no socket tracked (pass-through)" sh -c 'echo "$0" | grep -q "tracked 0"' "$out"
check "setuid: environment ignored (no warning, no strict refusal)" sh -c '! echo "$0" | grep -q "RINGSOCK_\|refusing"' "$out"
check "setuid: RINGSOCK_STATS ignored (no report)" sh -c '! echo "$0" | grep -q "stats version"' "$out"
finish

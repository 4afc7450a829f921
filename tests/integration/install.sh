# cmake --install into a staging tree: library, command, header, pkg-config
# file and man pages land where they should; the installed ringsock(7)
# ENVIRONMENT section matches the knob table; a program builds against the
# installed header with pkg-config; the installed command finds the
# installed library.
. "$(dirname "$0")/lib.sh"
need man
DEST="$TMP/stage"
# Install for real into the staging tree (DESTDIR).
DESTDIR="$DEST" cmake --install "$RS_BUILD" >"$TMP/install.log" 2>&1
check "cmake --install succeeded" test $? = 0
prefix=$(sed -n 's/^prefix=//p' "$RS_BUILD/ringsock.pc")
libdir=$(sed -n 's/^libdir=//p' "$RS_BUILD/ringsock.pc")
for f in "$libdir/libringsock.so" "$prefix/bin/ringsock" "$prefix/include/ringsock.h" \
	"$libdir/pkgconfig/ringsock.pc" "$prefix/share/man/man1/ringsock.1" "$prefix/share/man/man7/ringsock.7"; do
	check "installed $f" test -e "$DEST$f"
done
# The installed page and the knob table agree.
page="$DEST$prefix/share/man/man7/ringsock.7"
sed -n '/^\.SH ENVIRONMENT/,/^\.SH /p' "$page" | sed '$d' >"$TMP/env.installed"
"$RS_CLI" knobs --man >"$TMP/env.table"
if diff -u "$TMP/env.table" "$TMP/env.installed"; then ok "installed ENVIRONMENT section equals the knob table"; else bad "installed ringsock(7) ENVIRONMENT section and the knob table disagree"; fi
for k in $("$RS_CLI" knobs | grep -o '^RINGSOCK_[A-Z0-9_]*'); do
	grep -q "^\.B $k\$" "$page" || bad "ringsock(7) lacks $k"
done
ok "every knob has an entry in ringsock(7)"
check "man renders ringsock(7)" sh -c 'MANWIDTH=80 man -l "$0" 2>/dev/null | grep -q "RINGSOCK_BUF_COUNT"' "$page"
check "man renders ringsock(1)" sh -c 'MANWIDTH=80 man -l "$0" 2>/dev/null | grep -q "ringsock check"' "$DEST$prefix/share/man/man1/ringsock.1"
check "man -w finds the pages in the tree" sh -c 'man -M "$0" -w ringsock >/dev/null' "$DEST$prefix/share/man"
# Every option in --help is documented in ringsock(1).
for opt in $("$RS_CLI" --help | grep -o -- '--[a-z]*' | sort -u); do
	grep -q -- "$(echo "$opt" | sed 's/-/\\\\-/g')" "$DEST$prefix/share/man/man1/ringsock.1" || bad "ringsock(1) does not document $opt"
done
ok "ringsock(1) documents every --help option"
# Build against the installed header via pkg-config.
cflags=$(PKG_CONFIG_SYSROOT_DIR="$DEST" PKG_CONFIG_PATH="$DEST$libdir/pkgconfig" pkg-config --cflags ringsock)
check "pkg-config knows ringsock" test -n "$cflags"
cc $cflags -o "$TMP/api_client" "$RS_SRC/tests/integration/api_client.c" -ldl
check "program builds against the installed header" test -x "$TMP/api_client"
out=$(LD_PRELOAD="$DEST$libdir/libringsock.so" "$TMP/api_client")
check "public API through dlsym sees the counters" sh -c 'echo "$0" | grep -q "inet 1 inet6 1 unix 1 tracked 2 accelerated 0"' "$out"
out=$("$TMP/api_client")
check "without the library the program notices" test "$out" = "ringsock not loaded"
# The staged command finds the staged library (../lib next to it) when
# libdir is prefix/lib, else the one in its configured libdir.
out=$("$DEST$prefix/bin/ringsock" -- sh -c 'echo "$LD_PRELOAD"')
check "installed command preloads a libringsock.so" sh -c 'echo "$0" | grep -q "/libringsock.so"' "$out"
finish

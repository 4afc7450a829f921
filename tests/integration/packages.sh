# Packages for real: build the .deb with debhelper (lintian must pass
# without errors), install it with apt, run the installed `ringsock check`
# and an iperf3 transfer under the installed `ringsock`, open the man pages,
# remove it and confirm nothing is left; build the rpm and compare its file
# list with the expected set; check the APKBUILD's version.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: needs root to install packages"; exit 77; }
need dpkg-buildpackage
need lintian
need rpmbuild
need iperf3
git -C "$RS_SRC" rev-parse HEAD >/dev/null 2>&1 || { echo "skip: not a git checkout (packages are built from git archive)"; exit 77; }
if dpkg-query -W -f='${Status}' ringsock 2>/dev/null | grep -q "install ok"; then
	echo "skip: a ringsock package is already installed here; not touching it"
	exit 77
fi
version=$(cat "$RS_SRC/VERSION")
P="$TMP/pkgs"

# ---- deb ----
if "$RS_SRC/packaging/build-packages.sh" deb "$P" >"$TMP/deb.log" 2>&1; then
	ok "deb built, lintian without errors"
else
	tail -30 "$TMP/deb.log"
	bad "deb build or lintian"
fi
check "source tarball named with VERSION" test -f "$P/ringsock-$version.tar.gz"
deb="$P/ringsock_${version}_$(dpkg --print-architecture).deb"
dev="$P/libringsock-dev_${version}_$(dpkg --print-architecture).deb"
check "runtime package built" test -f "$deb"
check "-dev package built" test -f "$dev"
check "runtime package has library, command, man pages" sh -c \
	'dpkg -c "$0" | grep -q "libringsock.so.0" && dpkg -c "$0" | grep -q "usr/bin/ringsock" && dpkg -c "$0" | grep -q "man7/ringsock.7"' "$deb"
check "-dev package has header and pkg-config file" sh -c \
	'dpkg -c "$0" | grep -q "include/ringsock.h" && dpkg -c "$0" | grep -q "pkgconfig/ringsock.pc"' "$dev"
check "runtime package declares its shared-library dependencies (libc; liburing is linked in)" sh -c 'dpkg -I "$0" | grep -q "Depends:.*libc6"' "$deb"

export DEBIAN_FRONTEND=noninteractive
if apt-get install -y -q "$deb" "$dev" >"$TMP/apt.log" 2>&1; then ok "apt installed the packages"; else tail "$TMP/apt.log"; bad "apt install"; fi
files=$(dpkg -L ringsock libringsock-dev 2>/dev/null | while read -r f; do [ -f "$f" ] || [ -L "$f" ] && echo "$f"; done)
check "installed command is /usr/bin/ringsock" test "$(command -v ringsock)" = /usr/bin/ringsock
/usr/bin/ringsock check >"$TMP/check.out" 2>&1
check "installed 'ringsock check' probes io_uring" grep -q "multishot recv:" "$TMP/check.out"
port=$(free_port)
iperf3 -s -1 -p "$port" >/dev/null 2>&1 &
spid=$!
for _ in $(seq 100); do ss -Hltn "sport = :$port" | grep -q . && break; sleep 0.05; done
/usr/bin/ringsock --stats="$TMP/st" iperf3 -c 127.0.0.1 -p "$port" -t 1 >"$TMP/iperf.out" 2>&1
check "iperf3 under the installed ringsock" test $? = 0
wait $spid
check "installed library was preloaded and tracked the sockets" test "$(stat_sum "$TMP/st" tracked)" -ge 2
check "the installed launcher preloads the installed library" sh -c '/usr/bin/ringsock -- sh -c "echo \$LD_PRELOAD" | grep -q "^/usr/lib/.*/libringsock.so"'
check "man -w ringsock" man -w ringsock
check "man -w 7 ringsock" man -w 7 ringsock
check "man page opens" sh -c 'MANWIDTH=80 man 7 ringsock 2>/dev/null | grep -q RINGSOCK_BUF_COUNT'
check "pkg-config finds the installed -dev files" pkg-config --exists ringsock

apt-get remove --purge -y -q ringsock libringsock-dev >"$TMP/rm.log" 2>&1
check "packages removed" sh -c '! dpkg-query -W -f="\${Status}" ringsock 2>/dev/null | grep -q "install ok"'
left=""
for f in $files; do [ -e "$f" ] || [ -L "$f" ] && left="$left $f"; done
check "nothing left behind after purge${left:+:$left}" test -z "$left"
check "no ringsock command left" sh -c '! command -v ringsock'

# ---- rpm ----
if "$RS_SRC/packaging/build-packages.sh" rpm "$P" >"$TMP/rpm.log" 2>&1; then ok "rpm built"; else tail -30 "$TMP/rpm.log"; bad "rpm build"; fi
arch=$(rpm --eval '%{_arch}')
lib=$(rpm --eval '%{_libdir}')
rpm -qlp "$P/ringsock-$version-1.$arch.rpm" 2>/dev/null | grep -v '/\.build-id' | sort >"$TMP/rpm.files"
cat >"$TMP/rpm.expected" <<EOR
/usr/bin/ringsock
$lib/libringsock.so.0
$lib/libringsock.so.$version
/usr/share/doc/ringsock-$version
/usr/share/doc/ringsock-$version/README.md
/usr/share/licenses/ringsock-$version
/usr/share/licenses/ringsock-$version/LICENSE
/usr/share/man/man1/ringsock.1
/usr/share/man/man7/ringsock.7
EOR
sed -i 's/\.[17]\.gz$/&/' "$TMP/rpm.files"
sed 's/\.gz$//' "$TMP/rpm.files" | sort >"$TMP/rpm.files.plain"
sort "$TMP/rpm.expected" -o "$TMP/rpm.expected"
if diff -u "$TMP/rpm.expected" "$TMP/rpm.files.plain"; then ok "rpm file list is the expected set"; else bad "rpm file list differs"; fi
rpm -qlp "$P/ringsock-devel-$version-1.$arch.rpm" 2>/dev/null | sort >"$TMP/rpmdev.files"
printf '%s\n' /usr/include/ringsock.h "$lib/libringsock.so" "$lib/pkgconfig/ringsock.pc" | sort >"$TMP/rpmdev.expected"
if diff -u "$TMP/rpmdev.expected" "$TMP/rpmdev.files"; then ok "rpm -devel file list is the expected set"; else bad "rpm -devel file list differs"; fi

# ---- apk ----
apkver=$(sed -n 's/^pkgver=//p' "$RS_SRC/packaging/alpine/APKBUILD")
check "APKBUILD pkgver equals VERSION" test "$apkver" = "$version"
check "APKBUILD is valid shell" sh -n "$RS_SRC/packaging/alpine/APKBUILD"
finish

# Sourced (after lib.sh) by the tests that build a third-party test suite
# from a Debian source package (thirdparty_libevent.sh, thirdparty_libuv.sh,
# thirdparty_node.sh), and by thirdparty_glib.sh (Debian's built tests:
# pkg_installed only).
# Not a test itself: only tests/integration/*.sh become ctest tests.
#
#   thirdparty_fetch PKG DIR TOOL_PACKAGES...
#     installs the missing TOOL_PACKAGES, makes sure apt knows the source
#     package PKG (when apt has no deb-src entry, one mirroring the system's
#     Debian `deb` entries is added in a file of its own,
#     /etc/apt/sources.list.d/ringsock-tests-deb-src.{sources,list}; the
#     system files are not touched) and unpacks it into DIR with
#     `apt-get source` (once: kept between runs).  Sets SRCDIR to the
#     unpacked tree.  Exits 77 (skip) when the source or the tools cannot be
#     obtained.

SRC_LIST_NAME=ringsock-tests-deb-src
SRC_LIST_COMMENT="# Added by ringsock's integration tests (tests/integration/thirdparty_*.sh: apt-get source)"

pkg_installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# A deb-src entry for every Debian `deb` entry (one-line .list and deb822
# .sources files), written to a file of our own; the system files are not
# touched.  Non-Debian repositories are left alone (they may serve no
# sources).
add_deb_src() {
	local d=/etc/apt/sources.list.d
	local lists="" f
	[ -f /etc/apt/sources.list ] && lists=/etc/apt/sources.list
	for f in "$d"/*.list; do [ -f "$f" ] && [ "${f##*/}" != "$SRC_LIST_NAME.list" ] && lists="$lists $f"; done
	if [ -n "$lists" ]; then
		# shellcheck disable=SC2086
		sed -n 's/^[[:space:]]*deb\([[:space:]]\)/deb-src\1/p' $lists | grep -E '[/.]debian' |
			sort -u >"$TMP/deb-src.list"
		if [ -s "$TMP/deb-src.list" ]; then
			{ echo "$SRC_LIST_COMMENT"
			  cat "$TMP/deb-src.list"; } >"$d/$SRC_LIST_NAME.list"
			echo "apt: wrote $d/$SRC_LIST_NAME.list:"; sed 's/^/    /' "$d/$SRC_LIST_NAME.list"
		fi
	fi
	: >"$TMP/deb-src.sources"
	for f in "$d"/*.sources; do
		[ -f "$f" ] && [ "${f##*/}" != "$SRC_LIST_NAME.sources" ] || continue
		# Each stanza with Types: deb (and no deb-src), enabled, whose URIs
		# are a Debian archive: the same stanza with Types: deb-src.
		awk '
		function flush() {
			if (n && types ~ /(^|[ \t])deb([ \t]|$)/ && types !~ /deb-src/ && !disabled && uris ~ /[\/.]debian/) {
				print "Types: deb-src"
				for (i = 1; i <= n; i++) if (line[i] !~ /^[Tt]ypes:/) print line[i]
				print ""
			}
			n = 0; types = ""; uris = ""; disabled = 0
		}
		/^[ \t]*#/ { next }
		/^[ \t]*$/ { flush(); next }
		{ line[++n] = $0 }
		tolower($0) ~ /^types:/ { types = $0 }
		tolower($0) ~ /^uris:/ { uris = $0 }
		tolower($0) ~ /^enabled:[ \t]*no/ { disabled = 1 }
		END { flush() }' "$f" >>"$TMP/deb-src.sources"
	done
	if [ -s "$TMP/deb-src.sources" ]; then
		{ echo "$SRC_LIST_COMMENT"
		  cat "$TMP/deb-src.sources"; } >"$d/$SRC_LIST_NAME.sources"
		echo "apt: wrote $d/$SRC_LIST_NAME.sources:"; sed 's/^/    /' "$d/$SRC_LIST_NAME.sources"
	fi
	[ -s "$TMP/deb-src.list" ] || [ -s "$TMP/deb-src.sources" ]
}

have_source_index() { apt-cache showsrc "$1" 2>/dev/null | grep -q "^Package: $1\$"; }

thirdparty_fetch() { # PKG DIR TOOL_PACKAGES...
	local pkg=$1 dir=$2 pkgs="" p have=0
	shift 2
	for p in "$@"; do pkg_installed "$p" || pkgs="$pkgs $p"; done
	# Unpacked already (the one directory with a debian/ in it): apt need
	# not know the source package any more.
	ls -d "$dir"/*/debian >/dev/null 2>&1 && have=1
	if [ -n "$pkgs" ] || { [ $have = 0 ] && ! have_source_index "$pkg"; }; then
		[ "$(id -u)" = 0 ] || { echo "skip: not root, cannot install$pkgs or add a deb-src entry"; exit 77; }
	fi
	if [ $have = 0 ] && ! have_source_index "$pkg"; then
		local added=0
		# No deb-src entry at all: add ours.  Some deb-src entry, but
		# no $pkg after an update: add ours too.
		if ! grep -rqsE '^[[:space:]]*deb-src[[:space:]]|^[Tt]ypes:.*deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; then
			add_deb_src || { echo "skip: no Debian deb entry to mirror as deb-src"; exit 77; }
			added=1
		fi
		apt-get update -q -o DPkg::Lock::Timeout=120 >"$TMP/apt-update.log" 2>&1 || tail -5 "$TMP/apt-update.log"
		if ! have_source_index "$pkg" && [ $added = 0 ] && ! ls /etc/apt/sources.list.d/"$SRC_LIST_NAME".* >/dev/null 2>&1; then
			add_deb_src || { echo "skip: no Debian deb entry to mirror as deb-src"; exit 77; }
			apt-get update -q -o DPkg::Lock::Timeout=120 >"$TMP/apt-update.log" 2>&1 || tail -5 "$TMP/apt-update.log"
		fi
		have_source_index "$pkg" || { tail -5 "$TMP/apt-update.log"; echo "skip: apt has no source package $pkg"; exit 77; }
	fi
	if [ -n "$pkgs" ]; then
		echo "apt: installing$pkgs"
		# shellcheck disable=SC2086
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=120 --no-install-recommends $pkgs >"$TMP/apt-install.log" 2>&1 || {
			apt-get update -q -o DPkg::Lock::Timeout=120 >/dev/null 2>&1
			DEBIAN_FRONTEND=noninteractive apt-get install -y -q -o DPkg::Lock::Timeout=120 --no-install-recommends $pkgs >"$TMP/apt-install.log" 2>&1
		} || { tail -5 "$TMP/apt-install.log"; echo "skip: cannot install$pkgs"; exit 77; }
	fi
	if [ $have = 0 ]; then
		# The newest version first; when the archive lacks its files (a
		# security update whose source a mirror does not serve), each
		# other version apt knows, newest first.
		local v ok=0
		for v in "" $(apt-cache showsrc "$pkg" 2>/dev/null | sed -n 's/^Version: //p' | sort -rV | uniq); do
			rm -rf "$dir" && mkdir -p "$dir"
			(cd "$dir" && apt-get source -q -o APT::Sandbox::User=root "$pkg${v:+=$v}") >>"$TMP/apt-source.log" 2>&1 &&
				ls -d "$dir"/*/debian >/dev/null 2>&1 && { ok=1; break; }
			echo "apt: apt-get source $pkg${v:+=$v} failed"
		done
		[ $ok = 1 ] || { tail -5 "$TMP/apt-source.log"; echo "skip: apt-get source $pkg failed"; exit 77; }
	fi
	SRCDIR=$(ls -d "$dir"/*/debian | head -1)
	SRCDIR=${SRCDIR%/debian}
}

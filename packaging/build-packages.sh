#!/bin/bash
# build-packages.sh deb|rpm|dist OUTDIR - build packages from a source
# tarball made by `git archive` (the `dist` target), with the version from
# the top-level VERSION file.
#   deb   dpkg-buildpackage (debhelper) + lintian; fails on lintian errors
#   rpm   rpmbuild -bb from the tarball
#   dist  only the tarball
set -euo pipefail
what=${1:?deb, rpm or dist}
out=$(mkdir -p "${2:?output directory}" && cd "$2" && pwd)
src=$(cd "$(dirname "$0")/.." && pwd)
version=$(cat "$src/VERSION")
tarball="$out/ringsock-$version.tar.gz"

# The tarball holds what is committed (like `make dist`), plus nothing else.
git -C "$src" archive --format=tar.gz --prefix="ringsock-$version/" -o "$tarball" HEAD
echo "dist: $tarball"
[ "$what" = dist ] && exit 0

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
case $what in
deb)
	tar -C "$work" -xzf "$tarball"
	cd "$work/ringsock-$version"
	cp -r packaging/debian debian
	cat >debian/changelog <<EOC
ringsock ($version) unstable; urgency=medium

  * Release $version (see README.md).

 -- ringsock developers <dev@ringsock.invalid>  $(date -R)
EOC
	dpkg-buildpackage -us -uc -b >"$out/dpkg-buildpackage.log" 2>&1 ||
		{ tail -40 "$out/dpkg-buildpackage.log"; exit 1; }
	cp ../*.deb ../*.changes ../*.buildinfo "$out/"
	changes=$(ls "$out"/ringsock_"$version"_*.changes)
	lintian --allow-root --fail-on error --tag-display-limit 0 "$changes" | tee "$out/lintian.log"
	ls "$out"/*.deb
	;;
rpm)
	mkdir -p "$work/rpm/SOURCES"
	cp "$tarball" "$work/rpm/SOURCES/"
	rpmbuild -bb --nodeps --define "_topdir $work/rpm" --define "rs_version $version" \
		"$src/packaging/rpm/ringsock.spec" >"$out/rpmbuild.log" 2>&1 ||
		{ tail -40 "$out/rpmbuild.log"; exit 1; }
	find "$work/rpm/RPMS" -name '*.rpm' -exec cp {} "$out/" \;
	ls "$out"/*.rpm
	;;
*)
	echo "unknown: $what" >&2
	exit 2
	;;
esac

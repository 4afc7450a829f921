#!/bin/bash
# coverage.sh LIBRARY SCENARIO... - every call the library interposes is
# called by at least one differential scenario (the union of the
# scenarios' undefined symbols covers the library's exports, less the
# public API).
set -u
lib=$1
shift
exports=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | grep -v '^ringsock_' | sort -u)
used=$(for s in "$@"; do nm -u "$s"; done | awk '{print $2}' | sed 's/@.*//' | sort -u)
missing=$(comm -23 <(echo "$exports") <(echo "$used"))
if [ -n "$missing" ]; then
	echo "interposed calls no scenario exercises:"
	echo "$missing"
	exit 1
fi
echo "all $(echo "$exports" | wc -l) interposed calls are called by the scenarios"

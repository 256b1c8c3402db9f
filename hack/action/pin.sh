#!/usr/bin/env bash
# The sums action.yml checks its own release's archives against, which the
# release cannot replace: they are in the tagged tree, not on the release.
#   hack/action/pin.sh VERSION   build the archives for VERSION (hack/dist.sh,
#                                reproducible byte for byte) and write their
#                                sums to hack/action/checksums.txt; run it on
#                                the release commit, before the tag
#   hack/action/pin.sh -check DIST
#                                fail unless DIST/checksums.txt (make dist of
#                                the tag) is the pinned file: the release job
#                                publishes nothing the Action would refuse
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
pinned="$here/checksums.txt"

if [ "${1:-}" = -check ]; then
	dist="${2:?usage: pin.sh -check DIST}"
	if ! diff -u "$pinned" "$dist/checksums.txt"; then
		echo "error: the archives built are not those hack/action/checksums.txt pins: run hack/action/pin.sh VERSION on the release commit and tag that" >&2
		exit 1
	fi
	echo "pin: $dist/checksums.txt is hack/action/checksums.txt"
	exit 0
fi

version="${1:?usage: pin.sh VERSION | pin.sh -check DIST}"
dist="$(mktemp -d)"
trap 'rm -rf "$dist"' EXIT
VERSION="$version" DIST="$dist" "$here/../dist.sh"
cp "$dist/checksums.txt" "$pinned"
echo "pin: hack/action/checksums.txt for $version"

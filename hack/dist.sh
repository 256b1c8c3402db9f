#!/usr/bin/env bash
# Release archives for krew and GitHub releases, reproducible byte for byte
# with the same toolchain, and their sha256 sums (checksums.txt). make dist
# then writes the krew manifest that names them (make krew-manifest:
# .krew.yaml rendered as krew-release-bot renders it, with these sums).
#   VERSION    release version, semver with a leading v (default v0.1.0)
#   PLATFORMS  os/arch list (default: linux, darwin, windows × amd64, arm64)
#   DIST       output directory (default dist)
set -euo pipefail
cd "$(dirname "$0")/.."

DEFAULT_PLATFORMS="linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"
VERSION="${VERSION:-v0.1.0}"
PLATFORMS="${PLATFORMS:-$DEFAULT_PLATFORMS}"
DIST="${DIST:-dist}"
# The archives' bytes, and so the manifest's sums, depend on the exact Go
# release: build with the one go.mod pins (fetched like a module if absent).
GOTOOLCHAIN="$(sed -n 's/^toolchain //p' go.mod)"
export GOTOOLCHAIN
# The plugin's own go.mod decides every version, as go install's build
# does: not the workspace of this tree's modules.
export GOWORK=off

[[ "$VERSION" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] || { echo "error: VERSION $VERSION is not semver with a leading v" >&2; exit 1; }
[ -f LICENSE ] || { echo "error: LICENSE is missing" >&2; exit 1; }
for tool in tar gzip zip sha256sum; do
	command -v "$tool" >/dev/null || { echo "error: $tool is needed" >&2; exit 1; }
done

mkdir -p "$DIST"
DIST="$(cd "$DIST" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

: >"$DIST/checksums.txt"
for platform in $PLATFORMS; do
	os="${platform%/*}" arch="${platform#*/}"
	bin=kubectl-crdversion
	[ "$os" = windows ] && bin=kubectl-crdversion.exe
	stage="$work/$os-$arch"
	mkdir -p "$stage"
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath \
		-ldflags "-s -w -X main.version=$VERSION -buildid=" -o "$stage/$bin" ./cmd/kubectl-crdversion
	# The completion shim is a shell script: no use on Windows.
	shim=kubectl_complete-crdversion
	[ "$os" = windows ] && shim=""
	cp LICENSE "$stage/"
	[ -n "$shim" ] && cp "cmd/kubectl-crdversion/$shim" "$stage/" && chmod 0755 "$stage/$shim"
	chmod 0755 "$stage/$bin"
	chmod 0644 "$stage/LICENSE"
	# Fixed times and owners: the same sources give the same bytes.
	find "$stage" -exec touch -h -d @0 {} +
	name="kubectl-crdversion_${VERSION}_${os}_${arch}"
	if [ "$os" = windows ]; then
		archive="$name.zip"
		rm -f "$DIST/$archive"
		(cd "$stage" && TZ=UTC zip -q -X "$DIST/$archive" LICENSE "$bin" $shim)
	else
		archive="$name.tar.gz"
		tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$stage" -cf - LICENSE "$bin" $shim |
			gzip -n -9 >"$DIST/$archive"
	fi
	sum="$(sha256sum "$DIST/$archive" | cut -d' ' -f1)"
	echo "$sum  $archive" >>"$DIST/checksums.txt"
	echo "dist: $archive $(du -h "$DIST/$archive" | cut -f1) $sum"
done

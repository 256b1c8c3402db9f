#!/usr/bin/env bash
# The step of action.yml: check the CRD manifests of the checked-out commit
# against those of CRDVERSION_BASE, write check's markdown report to the job
# summary, and end with check's exit code (3 fails the pull request).
set -euo pipefail

# The output exit-code is set however the step ends: a refusal is 1.
work=""
trap 'rc=$?; [ -z "$work" ] || rm -rf "$work"; [ -z "${GITHUB_OUTPUT:-}" ] || echo "exit-code=$rc" >>"$GITHUB_OUTPUT"' EXIT

: "${CRDVERSION_MANIFESTS:?the manifests input is required}"
if [ -z "${CRDVERSION_BASE:-}" ]; then
	echo "::error::no base commit to compare with: outside a pull request, set the base input" >&2
	exit 1
fi
work=$(mktemp -d)

# The archives are built for Linux, macOS and Windows, but this step is
# bash with tar, curl and git archive's paths: on a Windows runner it would
# fail somewhere less clear than here.
case "${RUNNER_OS:-}" in
"" | Linux | macOS) ;;
*)
	echo "::error::this Action runs on Linux and macOS runners, not ${RUNNER_OS} (check needs no cluster: runs-on: ubuntu-latest will do)" >&2
	exit 1
	;;
esac

plugin=kubectl-crdversion
if [ -n "${CRDVERSION_VERSION:-}" ]; then
	v=$CRDVERSION_VERSION
	case "${RUNNER_OS:-$(uname -s)}" in
	Linux) os=linux ;;
	macOS | Darwin) os=darwin ;;
	*) echo "::error::no release archive for $(uname -s): the Action runs on Linux and macOS runners" >&2 && exit 1 ;;
	esac
	case "${RUNNER_ARCH:-$(uname -m)}" in
	X64 | x86_64 | amd64) arch=amd64 ;;
	ARM64 | aarch64 | arm64) arch=arm64 ;;
	*) echo "::error::no release archive for ${RUNNER_ARCH:-$(uname -m)}: the archives are for amd64 and arm64" >&2 && exit 1 ;;
	esac
	archive=kubectl-crdversion_${v}_${os}_${arch}.tar.gz
	# CRDVERSION_RELEASE_URL is for tests (file:// fixtures); a pinned sum
	# holds wherever the archive comes from.
	url=${CRDVERSION_RELEASE_URL:-https://github.com/kubectl-crdversion/kubectl-crdversion/releases/download}/$v
	curl -fsSL -o "$work/$archive" "$url/$archive"
	# macOS runners have shasum, not always sha256sum.
	if command -v sha256sum >/dev/null; then
		got=$(sha256sum "$work/$archive" | cut -d' ' -f1)
	else
		got=$(shasum -a 256 "$work/$archive" | cut -d' ' -f1)
	fi
	# The release's own checksums.txt catches a broken download, not a
	# replaced release: whoever can replace the archive can replace it too.
	# So the Action's own release is checked against the sums pinned in the
	# Action (hack/action/checksums.txt, made at the release commit), another
	# version against the checksum input, and only without one against the
	# release's checksums.txt alone.
	pinned=$(awk -v a="$archive" '$2 == a { print $1 }' "$(dirname "$0")/checksums.txt")
	if [ -n "$pinned" ]; then
		want=$pinned from="the one this Action pins (hack/action/checksums.txt)"
	elif [ -n "${CRDVERSION_CHECKSUM:-}" ]; then
		want=$(echo "${CRDVERSION_CHECKSUM#sha256:}" | tr "[:upper:]" "[:lower:]") from="the checksum input"
	else
		curl -fsSL -o "$work/checksums.txt" "$url/checksums.txt"
		want=$(awk -v a="$archive" '$2 == a { print $1 }' "$work/checksums.txt")
		from="the one the release's checksums.txt lists"
		echo "::warning::$v is not this Action's own release: $archive is checked only against the release's checksums.txt, which a replaced release replaces too (set the checksum input to pin it)" >&2
	fi
	if [ "$got" != "$want" ]; then
		echo "::error::refusing to run $archive: its sha256 is $got, $from is ${want:-none}" >&2
		exit 1
	fi
	mkdir "$work/bin" && tar -xzf "$work/$archive" -C "$work/bin"
	plugin=$work/bin/kubectl-crdversion
fi

# A shallow checkout lacks the base commit: fetch it alone.
if ! git cat-file -e "$CRDVERSION_BASE^{commit}" 2>/dev/null; then
	git fetch --no-tags --depth=1 origin "$CRDVERSION_BASE"
fi
mkdir "$work/base"
read -r -a manifests <<<"$CRDVERSION_MANIFESTS"
read -r -a extra <<<"${CRDVERSION_ARGS:-}"
args=(check -R -o markdown)
for m in "${manifests[@]}"; do
	m=${m%/} # BASE:dir/ names no object
	args+=(-f "$m")
	# A path the base lacks is new in the pull request: nothing to compare.
	if git cat-file -e "$CRDVERSION_BASE:$m" 2>/dev/null; then
		git archive "$CRDVERSION_BASE" -- "$m" | tar -x -C "$work/base"
	fi
done
args+=(--against-file "$work/base")

code=0
# ${extra[@]+...}: bash 3.2 (macOS runners) takes an empty array for unset.
"$plugin" "${args[@]}" ${extra[@]+"${extra[@]}"} >"$work/report.md" || code=$?
cat "$work/report.md"
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
	cat "$work/report.md" >>"$GITHUB_STEP_SUMMARY"
fi
if [ "$code" = 3 ]; then
	echo "::error::kubectl crdversion check found what would break the upgrade (the job summary has the report)" >&2
fi
exit "$code"

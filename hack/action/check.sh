#!/usr/bin/env bash
# The step of action.yml: check the CRD manifests of the checked-out commit
# against those of CRDVERSION_BASE, write check's markdown report to the job
# summary, and end with check's exit code (3 fails the pull request).
set -euo pipefail

: "${CRDVERSION_MANIFESTS:?the manifests input is required}"
if [ -z "${CRDVERSION_BASE:-}" ]; then
	echo "::error::no base commit to compare with: outside a pull request, set the base input" >&2
	exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

plugin=kubectl-crdversion
if [ -n "${CRDVERSION_VERSION:-}" ]; then
	v=$CRDVERSION_VERSION
	os=$(uname -s | tr '[:upper:]' '[:lower:]')
	case "$(uname -m)" in
	x86_64 | amd64) arch=amd64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) echo "::error::no release archive for $(uname -m)" >&2 && exit 1 ;;
	esac
	archive=kubectl-crdversion_${v}_${os}_${arch}.tar.gz
	url=https://github.com/kubectl-crdversion/kubectl-crdversion/releases/download/$v
	curl -fsSL -o "$work/$archive" "$url/$archive"
	curl -fsSL -o "$work/checksums.txt" "$url/checksums.txt"
	(cd "$work" && grep " $archive\$" checksums.txt | sha256sum -c -)
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
if [ -n "${GITHUB_OUTPUT:-}" ]; then
	echo "exit-code=$code" >>"$GITHUB_OUTPUT"
fi
if [ "$code" = 3 ]; then
	echo "::error::kubectl crdversion check found what would break the upgrade (the job summary has the report)" >&2
fi
exit "$code"

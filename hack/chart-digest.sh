#!/usr/bin/env bash
# Pins the chart's image by digest: writes DIGEST as image.digest into
# CHART_DIR/values.yaml (a copy of deploy/chart/crdversion-migrate), so
# that the chart a release publishes runs the very image it pushed, not
# whatever its tag names later. The release job runs it before helm
# package; the tree's chart keeps digest "" (the tag).
#   hack/chart-digest.sh CHART_DIR sha256:<64 hex>
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 CHART_DIR DIGEST" >&2; exit 1; }
dir="$1" digest="$2"
[[ "$digest" =~ ^sha256:[a-f0-9]{64}$ ]] || { echo "error: $digest is not a sha256 digest (sha256:<64 hex>)" >&2; exit 1; }
values="$dir/values.yaml"
# The one line the chart's values.yaml has for it, under image:.
n="$(grep -c '^  digest: ""$' "$values" || true)"
[ "$n" = 1 ] || { echo "error: $values has $n lines '  digest: \"\"', want 1" >&2; exit 1; }
# Whole or not at all: a temporary file beside it, then a rename.
tmp="$(mktemp "$values.XXXXXX")"
sed "s|^  digest: \"\"\$|  digest: \"$digest\"|" "$values" >"$tmp"
chmod 0644 "$tmp"
mv "$tmp" "$values"

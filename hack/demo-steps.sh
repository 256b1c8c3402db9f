#!/usr/bin/env bash
# The demo's steps, run by crdversion-sandbox with KUBECONFIG pointing at it.
# kubectl finds the plugin on PATH, as it would after a krew install.
set -uo pipefail
export PATH="$PWD/bin:$PATH"

step() {
	printf '\n\033[1m$ %s\033[0m\n' "$*"
	"$@"
	local rc=$?
	[ "$rc" -eq 0 ] || printf '(exit %d)\n' "$rc"
}

step kubectl crdversion version
step kubectl crdversion status
step kubectl crdversion status cert -o wide
step kubectl crdversion status backups.storage.example.com -o yaml
# The deprecated version still answers, with the warning clients now see:
step kubectl get certificates.v1alpha2.pki.example.com -n team-a web-0000
step kubectl crdversion status no-such-thing

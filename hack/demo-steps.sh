#!/usr/bin/env bash
# The demo's steps, run by crdversion-sandbox with KUBECONFIG pointing at it.
# kubectl finds the plugin on PATH, as it would after a krew install.
set -uo pipefail
# bin/ first: the plugin just built, and the kubectl make demo built where
# PATH had none.
export PATH="$PWD/bin:$PATH"

# Each step states the exit code it must end with; any other ends the demo
# with a failure. step: 0, done. attention: 3, done and something needs
# attention. refused: 1, bad input refused.
expect() {
	local want=$1
	shift
	printf '\n\033[1m$ %s\033[0m\n' "$*"
	"$@"
	local rc=$?
	[ "$rc" -eq 0 ] || printf '(exit %d)\n' "$rc"
	if [ "$rc" -ne "$want" ]; then
		printf 'demo: this step should have ended with exit %d, not %d\n' "$want" "$rc" >&2
		exit 1
	fi
}
step() { expect 0 "$@"; }
attention() { expect 3 "$@"; }
refused() { expect 1 "$@"; }
say() { printf '\n\033[36m# %s\033[0m\n' "$*"; }

say "Every CRD in the cluster, its versions' stages and what to do next"
step kubectl crdversion version
attention kubectl crdversion status
step kubectl crdversion status cert -o wide
step kubectl crdversion status backups.storage.example.com -o yaml

say "The deprecated version still answers, with the warning clients now see"
step kubectl get certificates.v1alpha2.pki.example.com -n team-a web-0000

say "Walk ClusterPolicy from v1 alone to v2 as storage"
step kubectl crdversion promote clusterpolicies v2 --from-file hack/demo/clusterpolicies-v2.yaml
say "Skipping a stage is refused, with the command to run instead"
refused kubectl crdversion promote clusterpolicies v2 --to deprecated
say "bridge: every object must round-trip v1 -> v2 -> v1 through the API server first"
step kubectl crdversion verify clusterpolicies
step kubectl crdversion promote clusterpolicies v2
say "deprecated: checked by the API server first (nothing persisted), then applied"
step kubectl crdversion promote clusterpolicies v2 --dry-run=server
step kubectl crdversion promote clusterpolicies v2
step kubectl get clusterpolicies.v1.policy.example.com baseline-0000
step kubectl crdversion status clusterpolicies
say "One step back is one command (here only shown: --dry-run=client)"
step kubectl crdversion rollback clusterpolicies --dry-run=client

say "Re-store every object at its storage version, then prune storedVersions (progress on stderr)."
say "The storage switches are seconds old: a write begun before one could still land at the old version,"
say "so the prune waits out a grace and re-stores once more (2m by default; 10s here: nothing else writes)"
step kubectl crdversion migrate --all --switch-grace=10s
step kubectl crdversion status
say "Blocking v1 breaks its clients, so promote looks for them first: the kubectl get of v1 above was one."
say "Refused, nothing changed, each client named (the API server's count names no one)"
attention kubectl crdversion promote clusterpolicies v2
say "Once they have moved to v2, say so by name: v1 is blocked, then removed"
step kubectl crdversion promote clusterpolicies v2 --despite-clients=requests
step kubectl crdversion promote clusterpolicies v2
step kubectl crdversion status clusterpolicies

say "Bad input is one error line and exit 1"
refused kubectl crdversion status no-such-thing

#!/usr/bin/env bash
# make demo: start the sandbox API server and walk through the plugin.
set -euo pipefail
cd "$(dirname "$0")/.."
exec ./bin/crdversion-sandbox exec --objects "${DEMO_OBJECTS:-6000}" -- ./hack/demo-steps.sh

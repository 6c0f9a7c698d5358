#!/usr/bin/env bash
# Two local clusters, a provider and a consumer, with kubepact installed and
# both controllers running as their ServiceAccounts (hack/playground/main.go
# says how):
#   hack/playground.sh up       # prints the commands to peer, inspect, unpeer
#   hack/playground.sh status
#   hack/playground.sh down     # stops everything, removes the state directory
# --state-dir DIR (or KUBEPACT_PLAYGROUND_DIR) picks where its state is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
# Static and -trimpath, as hack/playground builds kubepact: a fresh clone
# elsewhere then finds the compiled packages in Go's build cache.
CGO_ENABLED=0 exec go run -trimpath ./hack/playground "$@"

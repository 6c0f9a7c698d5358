#!/usr/bin/env bash
# Regenerates deepcopy functions and CRD manifests from the API types, and the
# peer roles' manifests (config/roles) from package rbac.
set -euo pipefail
cd "$(dirname "$0")/.."
CONTROLLER_GEN="go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.20.0"
$CONTROLLER_GEN object:headerFile=hack/boilerplate.go.txt paths=./apis/...
$CONTROLLER_GEN crd paths=./apis/... output:crd:artifacts:config=config/crd
go test ./config/roles -update

#!/usr/bin/env bash
# Builds the control-plane binaries used by the real-cluster tests (internal/testcluster):
# kube-apiserver and kube-controller-manager v1.35.4 and etcd v3.6.5, from the Go module proxy.
#
# The binaries go to a cache directory outside the repository, by default
# $HOME/.cache/kubepact/controlplane/v1.35.4 (override with KUBEPACT_CONTROLPLANE_DIR). When the
# three binaries are already there and report the pinned versions, nothing is built.
#
# A cold build downloads about 0.6 GB of modules, fills about 2.7 GB of Go build cache and takes
# about 5-7 minutes on 2 cores with a peak of about 2 GB of memory.
#
# Progress goes to stderr; the last line of stdout is the directory holding the binaries.
set -euo pipefail

readonly KUBE_VERSION=v1.35.4
readonly STAGING_VERSION=v0.35.4
readonly ETCD_VERSION=v3.6.5

# The staging modules that k8s.io/kubernetes replaces with its own staging/ directories; outside
# its repository each must be replaced by the published version matching the release.
readonly STAGING_MODULES=(
	api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider
	cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api
	cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms
	kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics
	mount-utils pod-security-admission sample-apiserver sample-cli-plugin sample-controller
)

readonly OUT_DIR="${KUBEPACT_CONTROLPLANE_DIR:-$HOME/.cache/kubepact/controlplane/${KUBE_VERSION}}"

log() { printf 'controlplane: %s\n' "$*" >&2; }

# reports succeeds when the binary $1, run with --version, prints the line $2. Its whole output is
# read first: piped into grep -q, a binary that writes its version in several pieces (etcd does)
# can be cut off by grep's early exit, and pipefail would then fail a binary that matched.
reports() {
	local out
	out=$("$1" --version 2>/dev/null) || return 1
	grep -qx -- "$2" <<<"$out"
}

# up_to_date succeeds when all three binaries in $1 exist and report the pinned versions.
up_to_date() {
	local dir=$1
	[[ -x $dir/kube-apiserver && -x $dir/kube-controller-manager && -x $dir/etcd ]] || return 1
	reports "$dir/kube-apiserver" "Kubernetes ${KUBE_VERSION}" || return 1
	reports "$dir/kube-controller-manager" "Kubernetes ${KUBE_VERSION}" || return 1
	reports "$dir/etcd" "etcd Version: ${ETCD_VERSION#v}" || return 1
}

if up_to_date "$OUT_DIR"; then
	log "binaries up to date in $OUT_DIR"
	echo "$OUT_DIR"
	exit 0
fi

mkdir -p "$OUT_DIR"
# Serialize concurrent builds (for example several test packages starting at once); whoever
# waited finds the binaries built by the first one.
exec 9>"$OUT_DIR/.lock"
flock 9
if up_to_date "$OUT_DIR"; then
	log "binaries up to date in $OUT_DIR"
	echo "$OUT_DIR"
	exit 0
fi

command -v go >/dev/null || {
	log "go is not on PATH"
	exit 1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/kubepact-controlplane.XXXXXX")
trap 'rm -rf "$work"' EXIT
# Exit, running the EXIT trap, when interrupted (for example when a test's context is cancelled).
trap 'exit 130' INT
trap 'exit 143' TERM

log "building kube-apiserver and kube-controller-manager ${KUBE_VERSION} and etcd ${ETCD_VERSION} in $work"
log "a cold build takes several minutes"

{
	echo "module kubepact.local/controlplane"
	echo
	echo "go 1.25.0"
	echo
	echo "godebug default=go1.25"
	echo
	echo "require ("
	echo "	go.etcd.io/etcd/server/v3 ${ETCD_VERSION}"
	echo "	k8s.io/kubernetes ${KUBE_VERSION}"
	echo ")"
	echo
	echo "replace ("
	for m in "${STAGING_MODULES[@]}"; do
		echo "	k8s.io/$m => k8s.io/$m ${STAGING_VERSION}"
	done
	echo ")"
} >"$work/go.mod"

cat >"$work/tools.go" <<'EOF'
//go:build tools

// Package tools records the main packages this module builds, so go mod tidy keeps their
// dependencies.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
EOF

cd "$work"
export GOWORK=off GOFLAGS="-buildvcs=false -trimpath" CGO_ENABLED=0 GOTOOLCHAIN=local

log "resolving modules (go mod tidy)"
go mod tidy >&2

version_pkgs=(k8s.io/component-base/version k8s.io/client-go/pkg/version)
ldflags="-s -w"
for pkg in "${version_pkgs[@]}"; do
	ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
	ldflags+=" -X ${pkg}.gitMajor=1"
	ldflags+=" -X ${pkg}.gitMinor=35"
	ldflags+=" -X ${pkg}.gitTreeState=clean"
	ldflags+=" -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
done

stage="$work/bin"
mkdir -p "$stage"
for cmd in kube-apiserver kube-controller-manager; do
	log "building $cmd"
	go build -ldflags "$ldflags" -o "$stage/$cmd" "k8s.io/kubernetes/cmd/$cmd"
done
log "building etcd"
go build -ldflags "-s -w" -o "$stage/etcd" go.etcd.io/etcd/server/v3

if ! up_to_date "$stage"; then
	log "built binaries do not report the expected versions:"
	"$stage/kube-apiserver" --version >&2 || true
	"$stage/kube-controller-manager" --version >&2 || true
	"$stage/etcd" --version >&2 || true
	exit 1
fi

# Move each binary into place atomically, so a reader never sees a partial file.
for bin in kube-apiserver kube-controller-manager etcd; do
	cp "$stage/$bin" "$OUT_DIR/.$bin.tmp"
	mv -f "$OUT_DIR/.$bin.tmp" "$OUT_DIR/$bin"
done

log "binaries ready in $OUT_DIR"
echo "$OUT_DIR"

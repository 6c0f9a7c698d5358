#!/usr/bin/env bash
# Builds kubepact-controller's image as an OCI image-layout archive at OUT.tar,
# with no container engine and no registry:
#
#   bash hack/image.sh OUT.tar
#
# The same image as the Dockerfile: a static binary (CGO_ENABLED=0, -trimpath,
# stripped, its version from VERSION) at /kubepact-controller in an empty
# image, run as 65532:65532, named ghcr.io/kubepact/kubepact-controller:VERSION.
# It builds the release: the version linked in with -ldflags wins over every
# other source (package internal/version), so the image's version label,
# kubepact-controller --version and kubepact_build_info all say VERSION; build
# it from the release's commit.
# GOARCH picks the architecture (default amd64). Load or push the archive with
# skopeo, crane, ctr or podman (README.md, "Image").
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: bash hack/image.sh OUT.tar" >&2
	exit 2
fi
out="$(realpath -m "$1")"
cd "$(dirname "$0")/.."
version="$(cat VERSION)"
arch="${GOARCH:-amd64}"
ref="ghcr.io/kubepact/kubepact-controller:$version"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath \
	-ldflags "-s -w -X main.version=$version" \
	-o "$work/kubepact-controller" ./cmd/kubepact-controller
# The binary says the version the image is labelled with, where it can run.
if [ "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" = "linux/$arch" ]; then
	reported="$("$work/kubepact-controller" --version)"
	if [ "$reported" != "kubepact-controller $version" ]; then
		echo "hack/image.sh: the binary reports \"$reported\", the image would say $version" >&2
		exit 1
	fi
fi
# hack/image is a module of its own: go-containerregistry stays out of the
# library's go.mod. It runs on the build machine, whatever GOARCH says.
(cd hack/image && GOOS= GOARCH= go run . build -binary "$work/kubepact-controller" \
	-version "$version" -arch "$arch" -ref "$ref" -out "$out")

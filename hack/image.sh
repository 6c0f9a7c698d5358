#!/usr/bin/env bash
# Builds kubepact-controller's multi-architecture image as an OCI image-layout
# archive at OUT.tar, with no container engine and no registry:
#
#   bash hack/image.sh OUT.tar
#
# The archive names one image index, ghcr.io/kubepact/kubepact-controller:VERSION,
# holding an image for linux/amd64 and one for linux/arm64. Each is the image
# the Dockerfile builds: static binaries (CGO_ENABLED=0, -trimpath, stripped,
# their version from VERSION) in an empty image, run as 65532:65532: the
# controller at /kubepact-controller, the entrypoint, the enrolment endpoint
# at /kubepact-enrolment, which its Deployment names as its command, and the
# kubepact CLI at /kubepact, which the chart's helm test hook names as its.
# It builds the release: the version linked in with -ldflags wins over every
# other source (package internal/version), so the image's version label,
# kubepact-controller --version, kubepact version --client and
# kubepact_build_info all say VERSION; build it from the release's commit.
# ARCHS picks the architectures (default "amd64 arm64"; ARCHS=amd64 builds one).
# Each binary's build info is checked (GOOS, GOARCH, CGO_ENABLED=0, -trimpath),
# and those for this machine's architecture are run: they must report VERSION
# (the controller and the enrolment endpoint with --version, the CLI with
# version --client).
# Load or push the archive with skopeo, crane or ctr (docs/install.md, "Image").
set -euo pipefail
if [ $# -ne 1 ]; then
	echo "usage: bash hack/image.sh OUT.tar" >&2
	exit 2
fi
out="$(realpath -m "$1")"
cd "$(dirname "$0")/.."
version="$(cat VERSION)"
archs="${ARCHS:-amd64 arm64}"
ref="ghcr.io/kubepact/kubepact-controller:$version"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
binaries=()

# build ARCH PACKAGE OUT builds the command PACKAGE (./cmd/NAME) for
# linux/ARCH at OUT and checks it.
build() {
	local arch="$1" pkg="$2" bin="$3" name info reported want
	name="$(basename "$pkg")"
	CGO_ENABLED=0 GOOS=linux GOARCH="$arch" go build -trimpath \
		-ldflags "-s -w -X main.version=$version" \
		-o "$bin" "$pkg"
	# The binary was built as the image says, whether or not it runs here.
	# Go leaves -ldflags out of the build info of a -trimpath build
	# (golang.org/issue/52372); the binary that runs here, built by this same
	# line, shows the version was linked in.
	info="$(go version -m "$bin")"
	for want in "path	github.com/kubepact/kubepact/cmd/$name" \
		"build	-trimpath=true" "build	CGO_ENABLED=0" "build	GOARCH=$arch" "build	GOOS=linux"; do
		if ! grep -qF -- "$want" <<<"$info"; then
			echo "hack/image.sh: the linux/$arch $name binary's build info lacks \"$want\":" >&2
			echo "$info" >&2
			exit 1
		fi
	done
	# The binary says the version the image is labelled with, where it can run.
	if [ "$(go env GOHOSTOS)/$(go env GOHOSTARCH)" = "linux/$arch" ]; then
		if [ "$name" = kubepact ]; then
			reported="$("$bin" version --client)"
			want="Client Version: $version"
		else
			reported="$("$bin" --version)"
			want="$name $version"
		fi
		if [ "$reported" != "$want" ]; then
			echo "hack/image.sh: the $name binary reports \"$reported\", the image would say $version" >&2
			exit 1
		fi
	fi
}

for arch in $archs; do
	build "$arch" ./cmd/kubepact-controller "$work/$arch/kubepact-controller"
	build "$arch" ./cmd/kubepact-enrolment "$work/$arch/kubepact-enrolment"
	build "$arch" ./cmd/kubepact "$work/$arch/kubepact"
	binaries+=(-binary "$arch=$work/$arch/kubepact-controller" -enrolment "$arch=$work/$arch/kubepact-enrolment"
		-cli "$arch=$work/$arch/kubepact")
done
# hack/image is a module of its own: go-containerregistry stays out of the
# library's go.mod. It runs on the build machine, whatever GOARCH says.
(cd hack/image && GOOS= GOARCH= go run . build -version "$version" -ref "$ref" -out "$out" "${binaries[@]}")

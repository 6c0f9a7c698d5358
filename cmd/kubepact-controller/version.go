package main

import buildversion "github.com/kubepact/kubepact/internal/version"

// version is the controller's version when set at link time, which wins
// over every other source:
//
//	go build -ldflags "-X main.version=$(cat VERSION)" ./cmd/kubepact-controller
//
// hack/image.sh and the Dockerfile do: they build the release's image.
// Without it, the controller reports the module version go install
// recorded when it is a release, else VERSION with -dev and the revision
// built, as the kubepact CLI does (package internal/version gives the
// order).
var version string

// Version returns the controller's version: what --version prints and
// kubepact_build_info's version label.
func Version() string { return buildversion.Get(version) }

package main

import "runtime/debug"

// version is the controller's version, set at build time:
//
//	go build -ldflags "-X main.version=$(cat VERSION)" ./cmd/kubepact-controller
//
// hack/image.sh and the Dockerfile do. A build without it reports the
// module version go install recorded, else "devel".
var version string

// Version returns the controller's version.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

package main

import buildversion "github.com/kubepact/kubepact/internal/version"

// version is the endpoint's version when set at link time, which wins over
// every other source:
//
//	go build -ldflags "-X main.version=$(cat VERSION)" ./cmd/kubepact-enrolment
//
// Without it, the endpoint reports what package internal/version finds,
// as kubepact-controller does.
var version string

// Version returns the endpoint's version, as --version prints it.
func Version() string { return buildversion.Get(version) }

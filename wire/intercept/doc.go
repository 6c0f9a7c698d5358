// Package intercept injects failures into kubepact's ports, in the manner
// of controller-runtime's client/interceptor: Provider and Consumer wrap
// every port of a provider.Ports or consumer.Ports so that
// Faults sees each call before it runs and after it succeeded, and may
// fail it at either point. The ports wrapped may be package fake's
// (through wire/memory) or package kube's adapters.
//
// A wrapper keeps every optional port its input has and adds none that it
// lacks, so a run under Faults takes the same branches as one without.
//
// # Concurrency
//
// Faults, and the ports Provider and Consumer return, are safe for
// concurrent use when the ports they wrap are.
package intercept

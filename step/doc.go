// Package step names the steps of kubepact's handshake, of a tenant's
// lifecycle, of renewal and of ResourceSlice identities, and the error that
// reports which of them failed.
//
// A [Name]'s value is the message liqoctl prints when the step completes, so
// the values are part of kubepact's compatibility with Liqo: they never
// change. A Provider or a Consumer reports each completed step as a [Done]
// to the callback its options name, and wraps a failure in an [*Error]:
//
//	var se *step.Error
//	if errors.As(err, &se) && se.Step == step.TenantApplied {
//		// the provider refused the Tenant
//	}
//
// # Errors
//
// [Error] wraps its cause, so errors.Is and errors.As see through it to the
// sentinel errors of the package that failed. Its text names the step by
// what doing it is called ([Name.Action]), not by liqoctl's message for it
// done: "kubepact: applying the Tenant on the provider: <cause>".
//
// # Concurrency
//
// The package holds only constants and plain values; everything in it is
// safe for concurrent use.
package step

// Package contract holds what kubepact's controllers promise to those who
// read their work: the reasons of the Events they record, and the keys
// kubepact adds to a liqo-signed-nonce Secret. The CLI (cmd/kubepact), the
// interoperability tests with Liqo and anyone who watches Events or writes a
// signed-nonce request read these, without running or importing the
// controllers.
//
// # Stability
//
// The values are stable: a reason, a key or its meaning is never changed
// or reused, only added. Whether a reason ends a wait is stable too: a
// reason marked Final refuses the object for good ([Final]), and one marked
// Blocking waits for an administrator ([Blocking]); a tool waiting for a
// controller's answer stops at either, as kubepact authenticate does. Every
// other Warning reason is retried by the controller that records it.
//
// Event messages are for people: they never carry a secret, and their
// wording may change; branch on the reason only.
//
// # Concurrency
//
// The package holds only constants and functions of them; everything in it
// is safe for concurrent use.
package contract

package consumer

import (
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/portcheck"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// Ports are the consumer's I/O: a required core, and optional
// ports. New checks them, and names the first field missing in a
// *peer.MissingPortError:
//
//   - Core is required, every field.
//   - IdentityKeys is required of a Strict consumer (Options.Strict)
//     and optional otherwise: a consumer that has it also applies
//     Identities issued to a Strict run of itself, and renews onto a key
//     of its own.
//   - Reviewer and Slices are optional; what their absence means is in
//     their docs.
type Ports struct {
	Core
	// IdentityKeys keeps the per-identity TLS keys of a Strict consumer,
	// and the key a renewal moves to (renewal.NextKeyName).
	IdentityKeys keys.Keyring
	// Reviewer, when set, reaches providers' API servers: Apply asks the
	// provider who the new kubeconfig authenticates as (identity.Confirm)
	// before writing anything. Nil applies Identities offline, with only
	// the checks the Identity itself allows (identity.Verify).
	Reviewer identity.Reviewer
	// Slices are the consumer's ResourceSlices: ForgetForce needs them,
	// and Forget refuses (ErrInUse) while slices remain only when they are
	// set.
	Slices resourceslice.Store
}

// Core are the ports every consumer needs, for the handshake.
type Core struct {
	Namespaces tenant.Namespaces
	Keys       keys.Store
	Identities identity.Store
	Secrets    kubeconfig.SecretWriter
}

// check returns a *peer.MissingPortError naming the first port of p that
// New requires and p lacks; strict is Options.Strict.
func (p Ports) check(strict bool) error {
	if err := portcheck.FirstMissing("consumer",
		portcheck.Port{Field: "Core.Namespaces", Set: p.Namespaces != nil},
		portcheck.Port{Field: "Core.Keys", Set: p.Keys != nil},
		portcheck.Port{Field: "Core.Identities", Set: p.Identities != nil},
		portcheck.Port{Field: "Core.Secrets", Set: p.Secrets != nil},
	); err != nil {
		return err
	}
	if strict && p.IdentityKeys == nil {
		return &peer.MissingPortError{Role: "consumer", Field: "IdentityKeys", Why: "a Strict consumer keeps its identities' keys there"}
	}
	return nil
}

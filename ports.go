package kubepact

import (
	"fmt"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// MissingPortError reports a port that NewProvider or NewConsumer requires
// and was not given. errors.Is(err, ErrInvalidConfig) is true of it.
type MissingPortError struct {
	// Role is "provider" or "consumer".
	Role string
	// Field is the port's path in ProviderPorts or ConsumerPorts, as a
	// composite literal spells it: "ProviderCore.Nonces",
	// "Lifecycle.Revocations", "SlicePorts.Slices", "ConsumerCore.Keys" or
	// "IdentityKeys".
	Field string
	// Why says why the port is needed when that depends on the options
	// (a Strict consumer's IdentityKeys); empty otherwise.
	Why string
}

func (e *MissingPortError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("%v: the %s port %s is required: %s", ErrInvalidConfig, e.Role, e.Field, e.Why)
	}
	return fmt.Sprintf("%v: the %s port %s is required", ErrInvalidConfig, e.Role, e.Field)
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *MissingPortError) Is(target error) bool { return target == ErrInvalidConfig }

// port is one field of a ports struct, for the checks of NewProvider and
// NewConsumer.
type port struct {
	field string
	set   bool
}

// firstMissing returns a *MissingPortError naming the first of ports not
// set, or nil.
func firstMissing(role string, ports ...port) error {
	for _, p := range ports {
		if !p.set {
			return &MissingPortError{Role: role, Field: p.field}
		}
	}
	return nil
}

// ProviderPorts are the provider's I/O, in three groups. NewProvider checks
// each, and names the first field missing in a *MissingPortError:
//
//   - ProviderCore is required, every field but Peek.
//   - Lifecycle is required, every field: Accept admits a consumer only
//     when Lifecycle.Revocations holds no revocation of it, and Cordon,
//     Drain, Revoke and Forget use the rest.
//   - SlicePorts is optional. Left empty, the provider binds no
//     cluster-wide slice role on Accept, and AcceptSlice and ForgetSlice
//     fail with ErrInvalidConfig. Once any of its fields is set, ClusterRBAC
//     and Slices are required; SlicePolicy and StorageClasses stay
//     optional.
//
// A wrapper of the ports (package wire/intercept's, say) keeps every
// optional port its input has, Peek included, so that the provider takes
// the same branches with and without it.
type ProviderPorts struct {
	ProviderCore
	SlicePorts
	// Lifecycle cordons, drains and revokes tenants (see Cordon, Drain),
	// and holds the revocations Accept admits consumers by.
	Lifecycle lifecycle.Ports
}

// ProviderCore are the ports every provider needs, for the handshake.
type ProviderCore struct {
	Namespaces tenant.Namespaces
	Nonces     nonce.Store
	// Peek, optional, returns the nonce entry of a consumer as Nonces last
	// saw it (a controller's cache): Accept then verifies a Tenant's
	// signature against it before the redemption reads the stored entry,
	// and starts the privilege check early; it does not read the nonce
	// ahead of the redemption. It must see the entries Nonces stores,
	// typically by being the same store. Nil reads the nonce instead.
	Peek         nonce.Peeker
	Tenants      tenant.Store
	Signer       csr.Signer
	Certificates csr.Cache
	// RBAC binds the consumer's role, after checking (rbac.Reviewer) that
	// the consumer's user name holds no privilege of its own.
	RBAC rbac.Binder
}

// SlicePorts are the ports of ResourceSlices: needed only by AcceptSlice
// and ForgetSlice, and by Accept to bind the cluster-wide slice role.
type SlicePorts struct {
	// ClusterRBAC binds the cluster-wide roles of slice identities.
	ClusterRBAC rbac.ClusterBinder
	// Slices are the ResourceSlices of the provider's consumers.
	Slices resourceslice.Store
	// SlicePolicy, when set, caps or refuses the resources AcceptSlice
	// grants; nil grants every slice what it asks (with the offer's
	// default quantities).
	SlicePolicy resourceslice.Policy
	// StorageClasses, when set, lists the StorageClasses AcceptSlice
	// offers; nil offers none, as Liqo does with --enable-storage=false.
	StorageClasses resourceslice.StorageClassLister
}

// check returns a *MissingPortError naming the first port of p that
// NewProvider requires and p lacks, group by group, in the order
// ProviderPorts lists them.
func (p ProviderPorts) check() error {
	if err := firstMissing("provider",
		port{"ProviderCore.Namespaces", p.Namespaces != nil},
		port{"ProviderCore.Nonces", p.Nonces != nil},
		port{"ProviderCore.Tenants", p.Tenants != nil},
		port{"ProviderCore.Signer", p.Signer != nil},
		port{"ProviderCore.Certificates", p.Certificates != nil},
		port{"ProviderCore.RBAC", p.RBAC != nil},
		port{"Lifecycle.Conditions", p.Lifecycle.Conditions != nil},
		port{"Lifecycle.Slices", p.Lifecycle.Slices != nil},
		port{"Lifecycle.Bindings", p.Lifecycle.Bindings != nil},
		port{"Lifecycle.Revocations", p.Lifecycle.Revocations != nil},
	); err != nil {
		return err
	}
	s := p.SlicePorts
	if s.ClusterRBAC == nil && s.Slices == nil && s.SlicePolicy == nil && s.StorageClasses == nil {
		return nil
	}
	return firstMissing("provider",
		port{"SlicePorts.ClusterRBAC", s.ClusterRBAC != nil},
		port{"SlicePorts.Slices", s.Slices != nil},
	)
}

// ConsumerPorts are the consumer's I/O: a required core, and optional
// ports. NewConsumer checks them, and names the first field missing in a
// *MissingPortError:
//
//   - ConsumerCore is required, every field.
//   - IdentityKeys is required of a Strict consumer (ConsumerOptions.Strict)
//     and optional otherwise: a consumer that has it also applies
//     Identities issued to a Strict run of itself, and renews onto a key
//     of its own.
//   - Reviewer and Slices are optional; what their absence means is in
//     their docs.
type ConsumerPorts struct {
	ConsumerCore
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

// ConsumerCore are the ports every consumer needs, for the handshake.
type ConsumerCore struct {
	Namespaces tenant.Namespaces
	Keys       keys.Store
	Identities identity.Store
	Secrets    kubeconfig.SecretWriter
}

// check returns a *MissingPortError naming the first port of p that
// NewConsumer requires and p lacks; strict is ConsumerOptions.Strict.
func (p ConsumerPorts) check(strict bool) error {
	if err := firstMissing("consumer",
		port{"ConsumerCore.Namespaces", p.Namespaces != nil},
		port{"ConsumerCore.Keys", p.Keys != nil},
		port{"ConsumerCore.Identities", p.Identities != nil},
		port{"ConsumerCore.Secrets", p.Secrets != nil},
	); err != nil {
		return err
	}
	if strict && p.IdentityKeys == nil {
		return &MissingPortError{Role: "consumer", Field: "IdentityKeys", Why: "a Strict consumer keeps its identities' keys there"}
	}
	return nil
}

package provider

import (
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/internal/portcheck"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// Ports are the provider's I/O, in three groups. New checks
// each, and names the first field missing in a *peer.MissingPortError:
//
//   - Core is required, every field but Peek.
//   - Lifecycle is required, every field: Accept admits a consumer only
//     when Lifecycle.Revocations holds no revocation of it, and Cordon,
//     Drain, Revoke and Forget use the rest.
//   - SlicePorts is optional. Left empty, the provider binds no
//     cluster-wide slice role on Accept, and AcceptSlice and ForgetSlice
//     fail with peer.ErrInvalidConfig. Once any of its fields is set, ClusterRBAC
//     and Slices are required; SlicePolicy and StorageClasses stay
//     optional.
//
// A wrapper of the ports (package wire/intercept's, say) keeps every
// optional port its input has, Peek included, so that the provider takes
// the same branches with and without it.
type Ports struct {
	Core
	SlicePorts
	// Lifecycle cordons, drains and revokes tenants (see Cordon, Drain),
	// and holds the revocations Accept admits consumers by.
	Lifecycle lifecycle.Ports
}

// Core are the ports every provider needs, for the handshake.
type Core struct {
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
	// Commitments, optional, are the consumers committed from Git (the
	// AuthorizedConsumers): where one commits a consumer ID, only its keys
	// get an identity for it, in any flow, and its committed request is
	// verified without a nonce. Nil means none is committed.
	Commitments enrol.Commitments
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

// check returns a *peer.MissingPortError naming the first port of p that
// New requires and p lacks, group by group, in the order
// Ports lists them.
func (p Ports) check() error {
	if err := portcheck.FirstMissing("provider",
		portcheck.Port{Field: "Core.Namespaces", Set: p.Namespaces != nil},
		portcheck.Port{Field: "Core.Nonces", Set: p.Nonces != nil},
		portcheck.Port{Field: "Core.Tenants", Set: p.Tenants != nil},
		portcheck.Port{Field: "Core.Signer", Set: p.Signer != nil},
		portcheck.Port{Field: "Core.Certificates", Set: p.Certificates != nil},
		portcheck.Port{Field: "Core.RBAC", Set: p.RBAC != nil},
		portcheck.Port{Field: "Lifecycle.Conditions", Set: p.Lifecycle.Conditions != nil},
		portcheck.Port{Field: "Lifecycle.Slices", Set: p.Lifecycle.Slices != nil},
		portcheck.Port{Field: "Lifecycle.Bindings", Set: p.Lifecycle.Bindings != nil},
		portcheck.Port{Field: "Lifecycle.Revocations", Set: p.Lifecycle.Revocations != nil},
	); err != nil {
		return err
	}
	s := p.SlicePorts
	if s.ClusterRBAC == nil && s.Slices == nil && s.SlicePolicy == nil && s.StorageClasses == nil {
		return nil
	}
	return portcheck.FirstMissing("provider",
		portcheck.Port{Field: "SlicePorts.ClusterRBAC", Set: s.ClusterRBAC != nil},
		portcheck.Port{Field: "SlicePorts.Slices", Set: s.Slices != nil},
	)
}

// Package consumer runs the consumer's side of kubepact's handshake, and
// what follows it: a Consumer builds Tenants answering a provider's nonce,
// applies the Identities providers return as kubeconfig Secrets, asks for
// ResourceSlices and renews its certificates. Package kubepact's doc tells
// the handshake end to end; package provider holds the other side.
//
// # The handshake
//
// Tenant ensures the consumer's tenant namespace for the provider and its
// long-term cluster key (keys.Ensure), records the signed nonce in the
// Secret "liqo-signed-nonce" as Liqo consumers do, and builds a Tenant
// carrying the cluster ID, public key, signature and a ControlPlane CSR
// (tenant.Build); BuildTenant builds it without writing anything. Apply
// checks the provider's Identity (identity.Verify, and identity.Confirm
// with Ports.Reviewer), refuses one that changes the server or CA of a
// kubeconfig already held unless ApplyOptions.ReplaceEndpoint
// (ErrEndpointChanged), writes the kubeconfig Secret
// "kubeconfig-controlplane-<provider ID>" and points the Identity's status
// at it (handshake.go). A Session is one handshake with one provider, as
// kubepact.Authenticate runs it (session.go).
//
// # After the handshake
//
// Slice, CompleteSlice, ApplySliceIdentity, ForgetSlice and ForgetForce
// handle ResourceSlices and their identities (slices.go). RenewRequest and
// Renewed renew the ControlPlane certificate, with a fresh key for a Strict
// consumer (renewal.go). IdentityKey and AdoptKeys keep the keys of the
// consumer's identities (keys.go). Forget removes what the consumer holds
// for a provider.
//
// # Ports
//
// Ports groups the consumer's I/O: Core is required, IdentityKeys is
// required of a Strict consumer, Reviewer and Slices are optional. New
// names the first port missing in a *peer.MissingPortError (ports.go).
//
// # Security
//
// The cluster key only signs handshakes when the identity gets a key of its
// own (Options.Strict, TenantOptions.OwnKey); keys of identities are
// attested (keys.Attester), and only attested keys are used. Secret-holding
// values print redacted, and errors never carry key material, signatures or
// kubeconfigs.
//
// # Errors
//
// The steps return a *step.Error naming the step that failed and wrapping
// the cause: ErrEndpointChanged, ErrInUse, ErrNotAuthenticated,
// ErrSlicePending, ErrSliceDenied, or a sentinel or typed error of the
// step's package (identity.ErrUntrusted, identity.ErrRejected…). A consumer
// asked for what its configuration cannot do wraps peer.ErrInvalidConfig.
//
// # Concurrency
//
// A Consumer is safe for concurrent use. A Session is for one goroutine.
package consumer

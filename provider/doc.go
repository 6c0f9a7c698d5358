// Package provider runs the provider's side of kubepact's handshake, and
// what follows it: a Provider issues nonces, accepts Tenants, judges
// ResourceSlices, answers Renews, and cordons, drains, revokes and forgets
// its consumers. Package kubepact's doc tells the handshake end to end;
// package consumer holds the other side.
//
// # The handshake
//
// IssueNonce ensures the tenant namespace "liqo-tenant-<consumer ID>" and
// issues a nonce, kept in the nonce.Store, single-use, expiring after
// Options.NonceTTL (nonce.DefaultTTL by default). Accept validates the
// consumer's Tenant without touching anything, redeems the nonce, verifies
// the signature, checks the CSR against a strict policy (csr.Check), has it
// signed through a csr.Signer with a bounded lifetime
// (Options.CertificateLifetime, DefaultCertificateLifetime by default),
// caches the certificate so a repeated handshake is not signed twice, binds
// the ControlPlane role, records the Tenant with its status filled, and
// returns the Identity for the consumer (handshake.go).
//
// Accept decides in three parts: it gathers what the decision needs, runs
// the checks of package accept over it (accept.Builtin, extended with
// Options.Checks), and does what the resulting plan says. Unchanged, which
// a controller calls at restart, runs the same checks over its cache
// (CachedRecords) and answers only when nothing needs doing (restart.go).
// A Session is one handshake with one consumer, as kubepact.Authenticate
// runs it: Accept's reads start while the nonce is issued (session.go).
//
// # After the handshake
//
// AcceptSlice and ForgetSlice judge ResourceSlices within Options.SliceBounds
// (slices.go, slices_bounds.go). Renew answers a consumer's Renew
// (renewal.go). Cordon, Uncordon, Drain, Enforce, Readmit, Revoke and
// Forget are the tenant lifecycle (lifecycle.go).
//
// # Ports
//
// Ports groups the provider's I/O: Core is required (every field but Peek),
// Lifecycle is required, SlicePorts is optional. New checks each group and
// names the first port missing in a *peer.MissingPortError (ports.go).
//
// # Security
//
// A Tenant that fails validation changes nothing; one that passes
// validation redeems its nonce before the signature is checked, so a nonce
// backs at most one verification. Nothing stored is trusted on the way:
// the status is rebuilt from a certificate checked against the verified
// CSR. Before anything is signed, Accept refuses a consumer that is drained
// or revoked, one whose ID another key holds a live certificate for, and
// one whose identity holds a privilege of its own (rbac.CheckUnprivileged).
// Errors never carry key material, signatures or certificates.
//
// # Errors
//
// The steps return a *step.Error naming the step that failed and wrapping
// the cause: a sentinel or typed error of the step's package (for example
// nonce.ErrExpired, csr.ErrOrganization, *lifecycle.HeldError,
// *rbac.PrivilegedError). A provider asked for what its configuration
// cannot do wraps peer.ErrInvalidConfig (ErrNoEndpoint, *SliceNamespaceError
// among them).
//
// # Concurrency
//
// A Provider is safe for concurrent use by handshakes of different
// consumers; handshakes of one consumer are serialised by its nonce. A
// Session is for one goroutine.
package provider

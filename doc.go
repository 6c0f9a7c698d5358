// Package kubepact lets one Kubernetes cluster obtain a narrowly scoped
// identity on another, speaking the wire format of Liqo's authentication
// module (authentication.liqo.io/v1beta1), so a kubepact cluster and a Liqo
// cluster can peer.
//
// # The handshake
//
// Two clusters take part. The consumer wants to use the provider; at the end
// it holds a kubeconfig that lets it act, as its own cluster ID, in its
// tenant namespace on the provider, and nowhere else.
//
//  1. The provider ensures the tenant namespace "liqo-tenant-<consumer ID>"
//     and issues a nonce: 64 random bytes as an 88-character base64 text,
//     kept in its nonce.Store, single-use, expiring after the TTL it was
//     issued with (provider.Options.NonceTTL, nonce.DefaultTTL by default)
//     (Provider.IssueNonce).
//  2. The consumer ensures its own tenant namespace for the provider and
//     its long-term cluster key (keys.Ensure), signs the nonce text, and
//     builds a Tenant carrying its cluster ID, public key, signature and a
//     ControlPlane CSR with CN = consumer ID and O = liqo.io
//     (Consumer.Tenant, tenant.Build).
//  3. The provider validates the Tenant without touching anything, redeems
//     the nonce (removing it), verifies the signature and checks the CSR
//     against a strict policy (csr.Check: exact CN, exactly O=liqo.io, no
//     SAN, accepted key, same key as the Tenant). It gets the CSR signed
//     through a csr.Signer (a csr.LocalCA, or the Kubernetes CSR API through
//     an adapter) with a bounded lifetime, caches the certificate so a
//     repeated handshake is not signed twice, binds the ClusterRole
//     "liqo-remote-controlplane" to the consumer in its tenant namespace
//     (the role is installed once, as Liqo's chart or config/roles does,
//     or by rbac.Install: the handshake only checks that it exists),
//     records the Tenant with its status filled, and returns an Identity
//     (Provider.Accept).
//  4. The consumer checks the Identity (it comes from the provider the
//     caller expects, names an https API server, and its certificate chains
//     to the CA, is for its own key, is valid now and names it), refuses one
//     that changes the server or CA of a kubeconfig already held unless told
//     to replace it, stores only its name, provider label and spec, writes
//     the kubeconfig Secret "kubeconfig-controlplane-<provider ID>" and
//     points the Identity's status at it (Consumer.Apply).
//
// Authenticate runs the four steps when both clusters are reachable from one
// process, through Provider.Session and Consumer.Session, which start each
// side's requests that do not wait for the other's at once;
// Unauthenticate undoes them. Each step is also usable on its own, so the
// Tenant and the Identity can travel as YAML files moved by hand.
//
// Accept decides in three parts: it gathers what the decision needs, runs
// the provider's checks over it (package accept: a chain of named checks,
// extended with provider.Options.Checks), and does what the resulting plan
// says. Provider.Unchanged runs the same checks over a cache.
//
// # After the handshake
//
// The consumer asks for resources with ResourceSlices, each with an
// identity of its own (Consumer.Slice, Provider.AcceptSlice,
// Consumer.ApplySliceIdentity; package resourceslice). Certificates are
// renewed before they expire: the provider re-signs each between half and
// two thirds of its lifetime, at a point drawn from the certificate so that
// a burst of them is not re-signed at once, and answers Renews, and a Strict consumer renews with a fresh key
// (Provider.Renew, Consumer.RenewRequest, Consumer.Renewed; package
// renewal). The provider cordons, drains and readmits tenants
// (Provider.Cordon, Provider.Drain, Provider.Readmit; package lifecycle): a
// drained or revoked consumer (Provider.Revoke) is not bound again while a
// certificate issued to it may still be valid. Deleting a Tenant
// (Provider.Forget, Unauthenticate) is an unpeering, as in Liqo: the nonce
// and the cached certificate stay, and the same cluster key peers again at
// once. Package controllers runs all of it
// declaratively, as Liqo's controllers do. The older flows are in packages
// authtoken and authserver (Liqo's shared-token server) and saidentity
// (ServiceAccount identities with expiring tokens).
//
// # Ports
//
// Every step is a pure function over explicit inputs (the packages nonce,
// tenant, csr, identity, kubeconfig and rbac); all I/O goes through small
// interfaces declared beside the step that uses them: nonce.Store,
// tenant.Namespaces, tenant.Store, csr.Signer, csr.Approver, csr.Cache,
// rbac.Applier, keys.Store, identity.Store and kubeconfig.SecretWriter.
// provider.Ports and consumer.Ports group them: a required core
// (provider.Core, consumer.Core), the provider's required Lifecycle, and
// optional ports (provider.SlicePorts, provider.Core.Peek, the consumer's
// Reviewer, IdentityKeys and Slices). provider.New and consumer.New check
// the groups and name the first port missing in a *peer.MissingPortError.
// Package fake implements every port in memory and package kube over an
// API server; package wire and its subpackages put them together. Time and
// randomness are options (a clock.PassiveClock and an io.Reader) wherever
// they matter.
//
// # Packages
//
// Package provider holds the provider's side (provider.Provider,
// provider.New): the handshake, slices, lifecycle, renewal and the fast
// path at restart (Provider.Unchanged). Package consumer holds the
// consumer's side (consumer.Consumer, consumer.New). Package peer holds
// what they share: peer.ErrInvalidConfig and peer.MissingPortError. This
// package keeps Authenticate and Unauthenticate, which compose the two
// sides through their exported calls only, and aliases of Provider,
// Consumer and Authenticated.
//
// # On real clusters
//
// Package kube adapts every port to a Kubernetes API server, and
// wire.Connect wires them in one call: it connects to a cluster from its
// *rest.Config, and the returned wire.Cluster's Provider and Consumer are
// that cluster's Provider and Consumer, under the cluster ID the cluster
// records, which its controllers and liqoctl use (an ID given that differs
// is refused with a *wire.ClusterIDMismatchError). With
// wire.ConnectOptions.Install it first creates what a fresh cluster lacks:
// the CRDs, the peer ClusterRoles and the ID record. Package kube's
// Example_realClusters runs a handshake between two clusters that way, in
// a few lines; package controllers runs it declaratively instead.
//
// # Security
//
// Secret-holding values (keys.PrivateKey, nonce.Nonce, kubeconfig.Config)
// print redacted. Errors never carry key material, signatures, tokens or
// kubeconfigs. A Tenant that fails validation changes nothing; one that
// passes validation redeems its nonce before the signature is checked, so a
// nonce backs at most one verification.
//
// # Errors
//
// The steps of Provider and Consumer return a *step.Error
// naming the step that failed (a step.Name, such as step.TenantApplied) and
// wrapping the cause, which is one of the sentinel errors or
// typed errors of the step's package (for example nonce.ErrExpired,
// csr.ErrOrganization, *csr.DeniedError, identity.ErrUntrusted), so callers
// branch with errors.Is and errors.As.
package kubepact

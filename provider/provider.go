package provider

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/kubepact/kubepact/accept"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/async"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

// DefaultCertificateLifetime is the lifetime a Provider requests for the
// certificates it issues unless configured otherwise: short enough that
// expiry revokes, since certificates are renewed before it.
const DefaultCertificateLifetime = 7 * 24 * time.Hour

// Endpoint is how consumers reach a provider's API server.
type Endpoint struct {
	// Server is the https URL of the API server.
	Server string
	// CA is the PEM CA bundle of the API server.
	CA []byte
}

// Options tunes a Provider. The zero value, like a nil pointer, uses
// the real clock, crypto/rand.Reader, nonce.DefaultTTL,
// DefaultCertificateLifetime, resourceslice.DefaultOffer(), the default
// resourceslice.Bounds and no step observer.
type Options struct {
	Clock clock.PassiveClock
	Rand  io.Reader
	// NonceTTL is how long a nonce IssueNonce issues stays valid. It is
	// recorded with the nonce: a stored nonce is judged by the TTL it was
	// issued with, by this one only when it records none (a nonce Secret
	// written by Liqo).
	NonceTTL time.Duration
	// CertificateLifetime is the lifetime requested for certificates; the
	// signer may shorten it.
	CertificateLifetime time.Duration
	// Policy is how strictly Tenants are checked: tenant.Compatible (the
	// default) accepts Liqo consumers, tenant.Strict requires a transcript.
	Policy tenant.Policy
	// OnStep, when set, is called after each completed step.
	OnStep func(step.Done)
	// RecheckInterval is how long a passed privilege check of a consumer
	// (rbac.CheckUnprivileged), and a peer ClusterRole found installed
	// (rbac.RequireRoles), are trusted before Accept repeats them: a handshake
	// whose certificate is signed asynchronously is accepted in two calls,
	// and many handshakes share the role. Zero means
	// DefaultRecheckInterval; a negative value repeats them on every call.
	RecheckInterval time.Duration
	// SliceNamespaces returns the namespaces the ResourceSlices of
	// consumerID may use, where AcceptSlice binds group consumerID to
	// rbac.VirtualKubeletClusterRole (Secrets, ConfigMaps, pods/exec…):
	// namespaces offloaded to that consumer, as Liqo's offloading module
	// binds it. Nil means none: slice identities get only the cluster-wide
	// binding. A tenant namespace is refused (a *SliceNamespaceError, and
	// nothing is bound): it holds this cluster's own objects for the peer.
	SliceNamespaces func(consumerID string) []string
	// SliceOffer is what AcceptSlice offers a slice whose resources it
	// accepts: default quantities, the local StorageClass, ingress and
	// load-balancer classes, node labels. Nil means
	// resourceslice.DefaultOffer(), Liqo's Helm chart's defaults.
	SliceOffer *resourceslice.Offer
	// NoFinalizer makes Accept record Tenants without tenant.Finalizer, for
	// a provider whose Tenants no controller watches (the offline flow): no
	// one would remove the finalizer, so deleting such a Tenant, or its
	// tenant namespace, would hang. kubepact.Authenticate, which does the provider's
	// steps in-process, records none either way. By default Accept, the
	// step a controller calls, adds it, and the controller's cleanup runs
	// before the Tenant goes. A finalizer the stored Tenant carries always
	// stays, and a controller that comes later adds its own when it
	// accepts the Tenant again.
	NoFinalizer bool
	// Checks are checks of the caller's own, which Accept and Unchanged
	// run after the built-in ones of their stage (accept.Builtin), each
	// before the act its stage guards. A refusal is returned as the check
	// returns it, wrapped in its step: step.TenantApplied for
	// accept.StageRedeem, step.CertificateIssued for accept.StageIssue.
	Checks []accept.Check
	// SliceBounds bounds, per consumer, the certificates AcceptSlice has
	// signed for ResourceSlices: how many live slices get one, the
	// shortest time between two CSRs of one slice, and how many new
	// requests are signed in an hour. The zero value uses
	// resourceslice.DefaultMaxSlices, half the lifetime of the certificate
	// a slice holds, and resourceslice.DefaultCertificatesPerHour; a
	// negative value removes its bound. See resourceslice.Bounds.
	SliceBounds resourceslice.Bounds
}

// Provider runs the provider's side of the handshake: it issues nonces and
// accepts Tenants. It is safe for concurrent use by handshakes of different
// consumers; handshakes of one consumer are serialised by its nonce.
type Provider struct {
	id       string
	endpoint Endpoint
	ports    Ports
	opts     Options

	// unprivileged holds the consumers that recently passed the privilege
	// check; rolesFound the peer ClusterRoles recently found installed.
	unprivileged, rolesFound *recent
	// checks is the decision Accept and Unchanged take: accept.Builtin,
	// then Options.Checks.
	checks accept.Chain
	// sliceLedger holds, per consumer, the slice requests recently
	// admitted (SliceBounds).
	sliceLedger sliceLedgers
}

// New returns the Provider of cluster clusterID, reachable at
// endpoint. The endpoint may be empty for a Provider that only issues nonces
// and forgets consumers; Accept needs it. It returns clusterid.Validate's
// error for an invalid clusterID, and a *peer.MissingPortError (errors.Is
// peer.ErrInvalidConfig) naming the first port ports lacks that Ports
// says is required.
func New(clusterID string, endpoint Endpoint, ports Ports, opts *Options) (*Provider, error) {
	if err := clusterid.Validate(clusterID); err != nil {
		return nil, err
	}
	if err := ports.check(); err != nil {
		return nil, err
	}
	p := &Provider{id: clusterID, endpoint: endpoint, ports: ports}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.Clock == nil {
		p.opts.Clock = clock.RealClock{}
	}
	if p.opts.Rand == nil {
		p.opts.Rand = rand.Reader
	}
	if p.opts.CertificateLifetime <= 0 {
		p.opts.CertificateLifetime = DefaultCertificateLifetime
	}
	if p.opts.SliceOffer == nil {
		p.opts.SliceOffer = resourceslice.DefaultOffer()
	} else {
		// The caller keeps its Offer: a copy, so no later change races.
		o := *p.opts.SliceOffer
		o.DefaultResources = o.DefaultResources.DeepCopy()
		o.IngressClasses = slices.Clone(o.IngressClasses)
		o.LoadBalancerClasses = slices.Clone(o.LoadBalancerClasses)
		o.NodeLabels = maps.Clone(o.NodeLabels)
		p.opts.SliceOffer = &o
	}
	if p.opts.RecheckInterval == 0 {
		p.opts.RecheckInterval = DefaultRecheckInterval
	}
	p.unprivileged, p.rolesFound = newRecent(p.opts.RecheckInterval), newRecent(p.opts.RecheckInterval)
	p.checks = accept.Builtin().With(p.opts.Checks...)
	return p, nil
}

// ClusterID returns the provider's cluster ID.
func (p *Provider) ClusterID() string { return p.id }

// step reports a completed step to the observer and, at V(1), to the
// logger in ctx.
func (p *Provider) step(ctx context.Context, s step.Done) {
	s.Cluster = p.id
	logr.FromContextOrDiscard(ctx).V(1).Info(string(s.Name), "cluster", s.Cluster, "role", "provider")
	if p.opts.OnStep != nil {
		p.opts.OnStep(s)
	}
}

func (p *Provider) nonceOptions() *nonce.Options {
	return &nonce.Options{Rand: p.opts.Rand, TTL: p.opts.NonceTTL}
}

// IssueNonce ensures the tenant namespace of consumerID and returns its
// current nonce, issuing one when there is none, it expired, or it was
// redeemed by a Tenant this provider did not accept. The nonce redeemed by
// the key of the consumer's accepted Tenant is kept, and so is the one of a
// key whose accepted Tenant was unpeered (Forget marks it:
// nonce.Redemption.Unpeered), so the consumer re-authenticates with the
// nonce it holds, as a Liqo consumer must (it refuses a different nonce);
// any other key still gets nonce.ErrRedeemed.
func (p *Provider) IssueNonce(ctx context.Context, consumerID string) (nonce.Nonce, error) {
	if err := clusterid.Validate(consumerID); err != nil {
		return nonce.Nonce{}, err
	}
	// The nonce is read while the tenant namespace is ensured: one missing
	// namespace reads as no nonce.
	nonces := prefetch(ctx, p.ports.Nonces, consumerID)
	if err := p.ports.Namespaces.Ensure(ctx, tenant.Namespace(consumerID)); err != nil {
		_, _ = nonces.Get(ctx, consumerID)
		return nonce.Nonce{}, stepError(step.ProviderNamespace, err)
	}
	p.step(ctx, step.Done{Name: step.ProviderNamespace})
	opts := p.nonceOptions()
	opts.KeepRedeemed = func(ctx context.Context, r nonce.Redemption) (bool, error) {
		if r.Unpeered != "" && r.Key != "" {
			return true, nil
		}
		return p.acceptedKey(ctx, consumerID, r.Key)
	}
	n, err := nonce.Ensure(ctx, nonces, consumerID, p.opts.Clock.Now(), opts)
	if err != nil {
		return nonce.Nonce{}, stepError(step.NonceGenerated, err)
	}
	p.step(ctx, step.Done{Name: step.NonceGenerated})
	return n, nil
}

// Accept verifies t, gets its CSR signed, binds the ControlPlane RBAC,
// records t with its status filled, and returns the Identity for the
// consumer.
//
// A Tenant that fails validation changes nothing. Any other Tenant redeems
// the consumer's nonce before its signature is checked: the nonce is bound
// to that Tenant's digest (tenant.Digest) and the key it claims, so a
// Tenant claiming another key gets nonce.ErrRedeemed. A new Tenant of the
// same key (the consumer re-authenticating with the nonce it holds) is
// verified like the first. The same Tenant may be accepted again: it is
// verified again, under the current policy, against the nonce it redeemed,
// and every later step is idempotent, so a retry after a failure halfway
// (signing, binding, the status write) resumes where it stopped, and a retry
// after success returns the same Identity without signing or writing
// anything new. Nothing stored is trusted on the way: the status is rebuilt
// from a certificate checked against the verified CSR (see csr.Issue).
//
// The Tenant's condition is the provider's (see Cordon, Drain): Accept
// neither writes it nor lets it change what is verified, and before anything
// else it refuses a consumer whose stored Tenant is drained
// (lifecycle.ErrDrained) or whose certificates were revoked and may still
// be valid (*lifecycle.RevokedError, see Readmit). Once the Tenant's keys
// are verified, and before anything is signed, it refuses a consumer ID for
// which another key holds a live certificate, whatever flow issued it (the
// token server included): a *lifecycle.HeldError (lifecycle.CheckHolder).
// A re-authentication signed by the stored Tenant's key, with a fresh CSR
// key or not, is the holder's; so is one signed by the key of a Tenant that
// was unpeered (see Forget), with the nonce it kept.
//
// Before anything is signed it checks that the consumer's identity (its
// user, the cluster ID, and csr.ControlPlaneOrganization) holds no
// privilege (rbac.CheckUnprivileged; a pass is trusted for
// Options.RecheckInterval, unless Recheck says otherwise). A
// refusal (*rbac.PrivilegedError) of a consumer accepted before, whose
// user or group someone granted a privilege since, deletes the bindings
// Accept applied (the ControlPlane RoleBinding, and the slice
// ClusterRoleBinding where the provider binds cluster-wide) and signs
// nothing: the certificate already issued is not re-signed, and stays
// valid until it expires, for Kubernetes has no revocation of client
// certificates. A deletion that fails is joined to the refusal, for the
// caller to retry. Once the grant goes, the next Accept binds the
// consumer again, with the certificate it holds while it is fresh.
func (p *Provider) Accept(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Identity, error) {
	return p.accept(ctx, t, nil, nil)
}

// tenantRoles are the peer roles an accepted Tenant is bound to: the
// ControlPlane role, and the cluster-wide slice role where the provider
// binds cluster-wide (ClusterRBAC).
func (p *Provider) tenantRoles() []string {
	if p.ports.ClusterRBAC == nil {
		return []string{rbac.ControlPlaneClusterRoleName}
	}
	return []string{rbac.ControlPlaneClusterRoleName, rbac.VirtualKubeletClusterWideRoleName}
}

// prefetchedNonces is a nonce.Store whose first Get answers with a read
// started beforehand (prefetch).
type prefetchedNonces struct {
	nonce.Store
	first sync.Once
	read  func() (nonce.Entry, error)
}

// prefetch starts reading the nonce of consumerID from s, and returns s
// with its first Get answered by that read.
func prefetch(ctx context.Context, s nonce.Store, consumerID string) *prefetchedNonces {
	return &prefetchedNonces{Store: s, read: async.Start(func() (nonce.Entry, error) { return s.Get(ctx, consumerID) })}
}

func (s *prefetchedNonces) Get(ctx context.Context, clusterID string) (nonce.Entry, error) {
	first := false
	s.first.Do(func() { first = true })
	if first {
		return s.read()
	}
	return s.Store.Get(ctx, clusterID)
}

// acceptReads are the reads Accept makes before it decides anything,
// started at once (startReads), each waited for where Accept decides on
// it: the admission (the stored Tenant and the revocation record), the
// certificate cache (the holder check, then the signing), the peer roles
// (before signing) and, when read, the nonce, which only lets the
// privilege check start early (the redemption reads it again, and
// decides).
type acceptReads struct {
	consumerID string
	admitted   func() (*authv1beta1.Tenant, error)
	cached     func() (*csr.CacheEntry, error)
	roles      func() error
	nonce      func() (nonce.Entry, error) // nil when not read
}

// startReads starts the reads of Accept for consumerID, the nonce's only
// with readNonce.
func (p *Provider) startReads(ctx context.Context, consumerID string, readNonce bool) *acceptReads {
	r := &acceptReads{
		consumerID: consumerID,
		admitted: async.Start(func() (*authv1beta1.Tenant, error) {
			return lifecycle.Admit(ctx, p.ports.Tenants, p.ports.Lifecycle.Revocations, consumerID, p.opts.Clock.Now())
		}),
		cached: p.readCache(ctx, csr.CacheKey{ConsumerID: consumerID}),
		roles:  async.StartErr(func() error { return p.requireRoles(ctx, p.tenantRoles()...) }),
	}
	if readNonce {
		r.nonce = async.Start(func() (nonce.Entry, error) { return p.ports.Nonces.Get(ctx, consumerID) })
	}
	return r
}

// wait waits for every read of r.
func (r *acceptReads) wait() {
	_, _ = r.admitted()
	_, _ = r.cached()
	_ = r.roles()
	if r.nonce != nil {
		_, _ = r.nonce()
	}
}

// preverified returns what Verify learns from t against the nonce entry e
// as read before its redemption, judged as Accept judges it once redeemed,
// or nil when t does not verify against it.
func (p *Provider) preverified(t *authv1beta1.Tenant, e nonce.Entry, digest []byte) *tenant.Verified {
	if e.Nonce.IsZero() {
		return nil
	}
	at := p.opts.Clock.Now()
	if e.Redemption != nil && bytes.Equal(e.Redemption.By, digest) {
		at = e.Redemption.At
	}
	v, err := tenant.Verify(t, e.Nonce, &tenant.VerifyOptions{ProviderID: p.id, Policy: p.opts.Policy, Now: at})
	if err != nil {
		return nil
	}
	return v
}

// controlPlaneGroups are the groups of a ControlPlane certificate, whose
// user is the consumer ID: what the privilege check judges with it.
func controlPlaneGroups() []string { return []string{csr.ControlPlaneOrganization} }

// checkPrivileges starts rbac.CheckUnprivileged for consumerID, unless it
// passed within RecheckInterval and no Recheck came since, and returns the
// function that waits for its answer. A pass is remembered only when no
// Recheck came while it was asked: its answers may predate the grant.
func (p *Provider) checkPrivileges(ctx context.Context, consumerID string) func() error {
	if p.unprivileged.fresh(consumerID, p.opts.Clock.Now()) {
		return func() error { return nil }
	}
	since := p.unprivileged.generation()
	return async.StartErr(func() error {
		if err := rbac.CheckUnprivileged(ctx, p.ports.RBAC, consumerID, controlPlaneGroups()); err != nil {
			return err
		}
		p.unprivileged.passSince(consumerID, p.opts.Clock.Now(), since)
		return nil
	})
}

// Recheck makes the next Accept of each of consumerIDs check its
// privileges again (rbac.CheckUnprivileged), however recently they
// passed (Options.RecheckInterval). A controller calls it when a
// binding that names a consumer's user or groups changes, before it
// requeues the consumer's Tenant.
func (p *Provider) Recheck(consumerIDs ...string) {
	for _, id := range consumerIDs {
		p.unprivileged.forget(id)
	}
}

// refusePrivileged returns err, the privilege check's failure for
// consumerID. When err is a refusal (rbac.ErrPrivilegedUser), and not a
// check that could not tell, it first deletes the bindings Accept applies
// (the ControlPlane RoleBinding and, where the provider binds
// cluster-wide, the slice ClusterRoleBinding): a consumer accepted before
// its user or a group of its certificate was granted a privilege keeps
// nothing kubepact bound. The certificate already issued is not re-signed,
// and stays valid until it expires. A deletion that fails is joined to err.
func (p *Provider) refusePrivileged(ctx context.Context, consumerID string, err error) error {
	if !errors.Is(err, rbac.ErrPrivilegedUser) {
		return err
	}
	namespace := clusterid.TenantNamespace(consumerID)
	var unbind, unbindCluster error
	var wg sync.WaitGroup
	wg.Go(func() {
		unbind = p.ports.RBAC.DeleteRoleBinding(ctx, namespace, rbac.BindingName(rbac.ControlPlaneClusterRoleName))
	})
	if p.ports.ClusterRBAC != nil {
		wg.Go(func() {
			unbindCluster = p.ports.ClusterRBAC.DeleteClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID))
		})
	}
	wg.Wait()
	if unbind != nil || unbindCluster != nil {
		return errors.Join(err, unbind, unbindCluster)
	}
	return err
}

// readCache starts reading the certificate cached under key and returns
// the function that waits for it: the entry, nil when nothing is cached.
func (p *Provider) readCache(ctx context.Context, key csr.CacheKey) func() (*csr.CacheEntry, error) {
	return async.Start(func() (*csr.CacheEntry, error) {
		e, err := p.ports.Certificates.Get(ctx, key)
		switch {
		case err == nil:
			return &e, nil
		case errors.Is(err, csr.ErrNotFound):
			return nil, nil
		}
		return nil, fmt.Errorf("reading certificate cache %s: %w", key.SecretName(), err)
	})
}

// requireRoles checks that the peer ClusterRoles names are installed
// (rbac.RequireRoles): a *rbac.MissingRoleError names the first one
// missing. A role found is trusted for RecheckInterval, as many handshakes
// share it.
func (p *Provider) requireRoles(ctx context.Context, names ...string) error {
	now := p.opts.Clock.Now()
	for _, name := range names {
		if p.rolesFound.fresh(name, now) {
			continue
		}
		if err := rbac.RequireRoles(ctx, p.ports.RBAC, name); err != nil {
			return err
		}
		p.rolesFound.pass(name, now)
	}
	return nil
}

// acceptedKey reports whether the Tenant stored for consumerID, which only
// Accept writes with a status, was accepted with the key of fingerprint
// key.
func (p *Provider) acceptedKey(ctx context.Context, consumerID, key string) (bool, error) {
	if key == "" {
		return false, nil
	}
	stored, err := p.ports.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	case stored.Status.AuthParams == nil:
		return false, nil
	}
	pub, err := keys.ParsePublicKey(stored.Spec.PublicKey)
	if err != nil {
		return false, nil // not one this provider accepted
	}
	return keys.Fingerprint(pub) == key, nil
}

func (p *Provider) identity(ctx context.Context, t *authv1beta1.Tenant) (*authv1beta1.Identity, error) {
	id, err := identity.Build(p.id, *t.Status.AuthParams, &identity.BuildOptions{TenantNamespace: t.Status.TenantNamespace})
	if err != nil {
		return nil, stepError(step.IdentityGenerated, err)
	}
	p.step(ctx, step.Done{Name: step.IdentityGenerated})
	return id, nil
}

// Forget unpeers consumerID, as Liqo does when a Tenant is deleted (by its
// consumer, liqoctl unauthenticate or kubepact unauthenticate): it deletes
// the consumer's ControlPlane RoleBinding, every slice binding of the
// consumer (in Options.SliceNamespaces, in its tenant namespace
// where earlier versions bound them, and cluster-wide), whatever its
// slices' labels say, and its Tenant, and the next
// valid handshake signed by the same cluster key is admitted at once. What
// that needs is kept:
//
//   - the nonce, as Liqo keeps its liqo-nonce Secret: a Liqo consumer
//     refuses a different one. When the Tenant was accepted and redeemed
//     it, the nonce is marked (nonce.Redemption.Unpeered) with the key of
//     the certificate cached for the consumer, so IssueNonce keeps it for
//     that key after the Tenant is gone; another key still gets
//     nonce.ErrRedeemed.
//   - the cached certificate (csr.CacheKey{ConsumerID}): it is valid until
//     it expires, whatever happens to the Tenant, so it keeps holding the
//     consumer ID (lifecycle.CheckHolder): another key is refused with a
//     *lifecycle.HeldError until it expires; the unpeered key, proven by
//     the nonce's signature, is its holder.
//
// No revocation record is written, and one already in force (a drain, a
// record an administrator wrote) stays: Accept keeps refusing until it
// ends or Readmit. A deletion is a revocation instead (see Revoke) when
// the stored Tenant is Drained, or carries lifecycle.RevokeAnnotation
// "true". A drained Tenant's nonce is kept as an unpeered one is: the
// drain's record refuses the consumer until the administrator readmits it,
// and then a Liqo consumer comes back with the nonce it already signed,
// with no step by hand. The annotation is what a consumer whose key may
// have leaked sets before deleting
// its Tenant. The tenant namespace stays. Forgetting an unknown consumer
// succeeds.
func (p *Provider) Forget(ctx context.Context, consumerID string) error {
	return p.forget(ctx, consumerID, false)
}

// Revoke deletes what the provider holds for consumerID, as Forget does,
// but as a revocation: when a certificate was issued to the consumer, it
// first records until when it may be valid (lifecycle.Revocation, see
// Readmit) and deletes the bindings of its ServiceAccount identity
// (saidentity.IdentityBinding), whose refresh is then refused, and it
// deletes the cached certificate and the nonce, so that
// nothing of the old peering is kept. Accept binds the consumer again only
// once every certificate issued to it expired, or the administrator
// readmits it; a new key then gets a fresh nonce. kubepact unauthenticate
// --revoke calls it.
func (p *Provider) Revoke(ctx context.Context, consumerID string) error {
	return p.forget(ctx, consumerID, true)
}

// forget unpeers consumerID or, with revoke, or when its stored Tenant is
// drained or asks for it, revokes it.
func (p *Provider) forget(ctx context.Context, consumerID string, revoke bool) error {
	if err := clusterid.Validate(consumerID); err != nil {
		return err
	}
	namespace := clusterid.TenantNamespace(consumerID)
	stored, err := p.ports.Tenants.Get(ctx, namespace, consumerID)
	switch {
	case errors.Is(err, tenant.ErrNotFound):
		stored = nil
	case err != nil:
		return stepError(step.ForgetTenant, err)
	}
	reason := forgetReason(stored, revoke)
	if reason != "" {
		if err := p.revoke(ctx, consumerID, reason); err != nil {
			return err
		}
	}
	// Only a suspected key starts over with a new nonce.
	keepNonce := reason != lifecycle.ReasonRevoked
	if keepNonce {
		if err := p.keepNonce(ctx, consumerID, stored); err != nil {
			return stepError(step.ForgetTenant, err)
		}
	}
	if err := p.unbind(ctx, consumerID); err != nil {
		return stepError(step.ForgetTenant, err)
	}
	if reason != "" {
		if err := p.ports.Certificates.Delete(ctx, csr.CacheKey{ConsumerID: consumerID}); err != nil {
			return stepError(step.ForgetTenant, err)
		}
	}
	if !keepNonce {
		if _, err := p.ports.Nonces.Consume(ctx, consumerID); err != nil && !errors.Is(err, nonce.ErrNotFound) {
			return stepError(step.ForgetTenant, err)
		}
	}
	if err := p.ports.Tenants.Delete(ctx, namespace, consumerID); err != nil {
		return stepError(step.ForgetTenant, err)
	}
	p.unprivileged.forget(consumerID)
	p.step(ctx, step.Done{Name: step.ForgetTenant})
	return nil
}

// forgetReason is the revocation reason an unpeering of the consumer
// whose stored Tenant is stored records, "" for none: ReasonRevoked when
// asked (revoke) or when the Tenant carries lifecycle.RevokeAnnotation
// "true", ReasonDrained for a Drained Tenant.
func forgetReason(stored *authv1beta1.Tenant, revoke bool) string {
	switch {
	case revoke:
		return lifecycle.ReasonRevoked
	case stored != nil && lifecycle.Condition(stored.Spec.TenantCondition) == authv1beta1.TenantConditionDrained:
		return lifecycle.ReasonDrained
	case stored != nil && stored.Annotations[lifecycle.RevokeAnnotation] == "true":
		return lifecycle.ReasonRevoked
	}
	return ""
}

// unbind deletes every binding the provider made for consumerID: its
// ControlPlane RoleBinding, and every slice binding, whatever the slices'
// labels (which the consumer's replicator sets) say, cluster-wide too.
func (p *Provider) unbind(ctx context.Context, consumerID string) error {
	namespace := clusterid.TenantNamespace(consumerID)
	if err := p.ports.RBAC.DeleteRoleBinding(ctx, namespace, rbac.BindingName(rbac.ControlPlaneClusterRoleName)); err != nil {
		return err
	}
	if err := p.unbindSlices(ctx, consumerID); err != nil {
		return err
	}
	if p.ports.ClusterRBAC != nil {
		return p.ports.ClusterRBAC.DeleteClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID))
	}
	return nil
}

// keepNonce marks the nonce of consumerID as kept for the key of its
// stored Tenant, before an unpeering deletes that Tenant: only when the
// Tenant was accepted (it has a status) with the key that redeemed the
// nonce, and every live certificate the provider holds for the consumer is
// that Tenant's (lifecycle.CheckHolder with the Tenant's own keys). The
// mark names the key of the cached certificate (the Tenant's key when
// nothing is cached), so that certificate stays the unpeered key's and no
// other. Anything else leaves the nonce as it is: IssueNonce then replaces
// it once the Tenant is gone.
func (p *Provider) keepNonce(ctx context.Context, consumerID string, stored *authv1beta1.Tenant) error {
	if stored == nil || stored.Status.AuthParams == nil || lifecycle.FlowOf(stored) != lifecycle.FlowHandshake {
		return nil
	}
	pub, err := keys.ParsePublicKey(stored.Spec.PublicKey)
	if err != nil {
		return nil
	}
	e, err := p.ports.Nonces.Get(ctx, consumerID)
	switch {
	case errors.Is(err, nonce.ErrNotFound):
		return nil
	case err != nil:
		return err
	case e.Redemption == nil || e.Redemption.Key != keys.Fingerprint(pub):
		return nil
	}
	// The Tenant's own keys (its CSR's included, through stored) hold
	// every live certificate, or another key holds one.
	claim := []crypto.PublicKey{pub}
	var cached *csr.CacheEntry
	switch c, err := p.ports.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID}); {
	case err == nil:
		cached = &c
	case !errors.Is(err, csr.ErrNotFound):
		return err
	}
	if lifecycle.CheckHolder(consumerID, stored, cached, claim, p.opts.Clock.Now()) != nil {
		return nil
	}
	holder := e.Redemption.Key
	if cached != nil {
		if leaf, err := csr.ParseCertificate(cached.Certificate); err == nil {
			holder = keys.Fingerprint(leaf.PublicKey)
		}
	}
	if e.Redemption.Unpeered == holder {
		return nil
	}
	e.Redemption.Unpeered = holder
	return p.ports.Nonces.Put(ctx, consumerID, e)
}

// String names the provider and its endpoint.
func (p *Provider) String() string {
	if p == nil {
		return "kubepact.Provider(<nil>)"
	}
	return fmt.Sprintf("kubepact.Provider(%s, %s, policy=%v)", p.id, p.endpoint.Server, p.opts.Policy)
}

// GoString is String.
func (p *Provider) GoString() string { return p.String() }

// Format makes every fmt verb print String.
func (p *Provider) Format(f fmt.State, _ rune) { io.WriteString(f, p.String()) }

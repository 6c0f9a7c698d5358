package kubepact

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
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
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

// ProviderPorts are the provider's I/O. All are required.
type ProviderPorts struct {
	Namespaces   tenant.Namespaces
	Nonces       nonce.Store
	Tenants      tenant.Store
	Signer       csr.Signer
	Certificates csr.Cache
	// RBAC binds the consumer's role, after checking (rbac.Reviewer) that
	// the consumer's user name holds no privilege of its own.
	RBAC rbac.Binder
	// ClusterRBAC and Slices are needed only by AcceptSlice and ForgetSlice.
	ClusterRBAC rbac.ClusterBinder
	Slices      resourceslice.Store
	// SlicePolicy, when set, caps or refuses the resources AcceptSlice
	// grants; nil grants every slice what it asks (with the offer's
	// default quantities).
	SlicePolicy resourceslice.Policy
	// StorageClasses, when set, lists the StorageClasses AcceptSlice
	// offers; nil offers none, as Liqo does with --enable-storage=false.
	StorageClasses resourceslice.StorageClassLister
	// Lifecycle cordons, drains and revokes tenants (see Cordon, Drain).
	Lifecycle lifecycle.Ports
}

// ProviderOptions tunes a Provider. The zero value, like a nil pointer, uses
// the real clock, crypto/rand.Reader, nonce.DefaultTTL,
// DefaultCertificateLifetime, resourceslice.DefaultOffer(), the default
// resourceslice.Bounds and no step observer.
type ProviderOptions struct {
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
	// tenant namespace, would hang. Authenticate, which does the provider's
	// steps in-process, records none either way. By default Accept, the
	// step a controller calls, adds it, and the controller's cleanup runs
	// before the Tenant goes. A finalizer the stored Tenant carries always
	// stays, and a controller that comes later adds its own when it
	// accepts the Tenant again.
	NoFinalizer bool
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
	ports    ProviderPorts
	opts     ProviderOptions

	// unprivileged holds the consumers that recently passed the privilege
	// check; rolesFound the peer ClusterRoles recently found installed.
	unprivileged, rolesFound *recent
	// sliceLedger holds, per consumer, the slice requests recently
	// admitted (SliceBounds).
	sliceLedger sliceLedgers
}

// NewProvider returns the Provider of cluster clusterID, reachable at
// endpoint. The endpoint may be empty for a Provider that only issues nonces
// and forgets consumers; Accept needs it.
func NewProvider(clusterID string, endpoint Endpoint, ports ProviderPorts, opts *ProviderOptions) (*Provider, error) {
	if err := clusterid.Validate(clusterID); err != nil {
		return nil, err
	}
	if ports.Namespaces == nil || ports.Nonces == nil || ports.Tenants == nil ||
		ports.Signer == nil || ports.Certificates == nil || ports.RBAC == nil || !ports.Lifecycle.Complete() {
		return nil, fmt.Errorf("%w: every provider port is required", ErrInvalidConfig)
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
// ProviderOptions.RecheckInterval, unless Recheck says otherwise). A
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

// accept is Accept, with the reads of early when they are for t's consumer
// (Authenticate starts them while the nonce is issued) and, when issued is
// set, the nonce the provider issued in the same handshake, against which
// the Tenant is verified before its redemption instead of a nonce read.
func (p *Provider) accept(ctx context.Context, t *authv1beta1.Tenant, early *acceptReads, issued *nonce.Nonce) (*authv1beta1.Identity, error) {
	if p.endpoint.Server == "" {
		return nil, stepError(step.TenantApplied, fmt.Errorf("%w: %w: accepting Tenants needs it", ErrInvalidConfig, ErrNoEndpoint))
	}
	if len(p.endpoint.CA) == 0 {
		return nil, stepError(step.TenantApplied, fmt.Errorf("%w: accepting Tenants needs the endpoint's CA", ErrInvalidConfig))
	}
	pub, err := tenant.Validate(t)
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	consumerID := t.Spec.ClusterID
	namespace := clusterid.TenantNamespace(consumerID)
	if t.Namespace != "" && t.Namespace != namespace {
		return nil, stepError(step.TenantApplied, &tenant.FieldError{Tenant: t.Name, Field: "metadata.namespace",
			Err: fmt.Errorf("%w: %q is not the tenant namespace %q", clusterid.ErrInvalid, t.Namespace, namespace)})
	}
	peeker, peeks := p.ports.Nonces.(nonce.Peeker)
	reads := early
	if reads == nil || reads.consumerID != consumerID {
		reads = p.startReads(ctx, consumerID, issued == nil && !peeks)
	}
	privileges := func() error { return nil }
	asking, stopAsking := context.WithCancel(ctx)
	defer func() { stopAsking(); reads.wait(); _ = privileges() }() // none outlives Accept

	t = verifiable(t)
	digest := tenant.Digest(t)
	// A Tenant that verifies against the nonce as read lets the privilege
	// check (below) start at once, beside the admission and the
	// redemption: only a consumer whose signature verified makes the
	// provider ask, and a refusal in between stops the questions. The
	// nonce is the one issued in the same handshake, else the one a
	// nonce.Peeker has at hand, else the one read. A stale peek fails to
	// verify, and the check then waits for the redemption.
	checking := false
	pre, err := nonce.Entry{}, error(nil)
	switch {
	case issued != nil:
		pre.Nonce = *issued
	case peeks:
		pre, _ = peeker.Peek(ctx, consumerID)
	default:
		pre, err = reads.nonce()
	}
	var verifiedPre *tenant.Verified
	switch {
	case err == nil:
		if verifiedPre = p.preverified(t, pre, digest); verifiedPre != nil {
			privileges, checking = p.checkPrivileges(asking, consumerID), true
		}
	case !errors.Is(err, nonce.ErrNotFound):
		return nil, stepError(step.TenantApplied, fmt.Errorf("reading nonce of %s: %w", consumerID, err))
	}
	current, err := reads.admitted()
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	e, err := nonce.Redeem(ctx, p.ports.Nonces, consumerID, nonce.Redeemer{Tenant: digest, Key: keys.Fingerprint(pub)},
		p.opts.Clock.Now(), p.nonceOptions())
	if err != nil {
		return nil, stepError(step.TenantApplied, &tenant.FieldError{Tenant: t.Name, Field: "spec.signature", Err: err})
	}
	// A resumed handshake is judged as of its redemption, so its
	// transcript's expiry counts as on the first attempt; a new Tenant of
	// the same key, re-authenticating, is judged now.
	verifyAt := p.opts.Clock.Now()
	if bytes.Equal(e.Redemption.By, digest) {
		verifyAt = e.Redemption.At
	}
	// The Tenant verified already against the nonce it redeemed needs only
	// its transcript's expiry judged again, as of verifyAt: the rest of
	// Verify does not depend on time. Against any other nonce (it changed
	// since it was read) it is verified anew.
	v := verifiedPre
	if v != nil && e.Nonce.Equal(pre.Nonce) {
		err = v.Recheck(verifyAt)
	} else {
		v, err = tenant.Verify(t, e.Nonce, &tenant.VerifyOptions{ProviderID: p.id, Policy: p.opts.Policy, Now: verifyAt})
	}
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	p.step(ctx, step.Done{Name: step.TenantApplied})

	// No silent sharing: while another key holds a live certificate for
	// the consumer ID, whatever flow issued it, a second key would be the
	// same user, and Kubernetes cannot revoke the first certificate.
	// Checked once the keys are proven, before anything is signed.
	entry, err := reads.cached()
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	if err := p.checkHolder(ctx, consumerID, current, entry, pub, v.CSR.PublicKey()); err != nil {
		return nil, stepError(step.TenantApplied, err)
	}

	// The cluster ID becomes a user name: refuse one that already holds
	// permissions (an "admin" would inherit its bindings). Checked after
	// the signature, so only a consumer with a valid nonce makes the
	// provider ask, and before anything is signed or bound. A pass is
	// trusted for RecheckInterval: the check is a snapshot either way, and
	// the retry of a handshake whose certificate was pending comes moments
	// later.
	if !checking {
		privileges = p.checkPrivileges(asking, consumerID)
	}
	if err := privileges(); err != nil {
		return nil, stepError(step.CertificateIssued, p.refusePrivileged(ctx, consumerID, err))
	}

	// The role the consumer is bound to must be installed before anything
	// is signed: a certificate bound to a missing role would be an
	// identity that can do nothing, issued for nothing.
	if err := reads.roles(); err != nil {
		return nil, stepError(step.CertificateIssued, err)
	}

	r := csr.Request{CSR: v.CSR, Lifetime: p.opts.CertificateLifetime}
	key := csr.CacheKey{ConsumerID: consumerID}
	var cert []byte
	if entry != nil {
		cert = csr.Cached(*entry, r, p.opts.Clock.Now())
	}
	signed := cert == nil
	if signed {
		if cert, err = csr.SignChecked(ctx, p.ports.Signer, r, p.opts.Clock.Now()); err != nil {
			return nil, stepError(step.CertificateIssued, err)
		}
	}

	// Once the certificate is issued, and not before, the writes at once:
	// the certificate cached, the Tenant recorded (status aside), and, as
	// Liqo's provider does when it accepts a Tenant, group consumerID bound
	// to the cluster-wide slice role (metrics), not only with its first
	// ResourceSlice. A Tenant read as recorded already (a retry, or the
	// second call of a handshake whose certificate was pending) is not
	// written again. The ControlPlane binding is owned by the Tenant
	// (deleting the Tenant collects it): it joins them when the Tenant is
	// stored already (a controller's Tenant, which the consumer created),
	// else it waits for the Tenant's UID. Last comes the status, which
	// hands the certificate out.
	// Only a provider with a controller to remove it puts the finalizer on
	// (see ProviderOptions.NoFinalizer): issued is set by Authenticate,
	// which runs in-process, with no controller as the writer. One stored
	// stays, or the field manager's apply would remove it.
	finalize := !p.opts.NoFinalizer && issued == nil ||
		current != nil && current.DeletionTimestamp == nil && slices.Contains(current.Finalizers, tenant.Finalizer)
	stored := storedTenant(t, finalize)
	owner := current
	stable := current != nil && current.UID != "" && current.DeletionTimestamp == nil
	binding := rbac.ControlPlaneRoleBinding(namespace, consumerID)
	var (
		wg                                           sync.WaitGroup
		cacheErr, recordErr, bindErr, clusterBindErr error
	)
	if signed {
		wg.Go(func() {
			if err := p.ports.Certificates.Put(ctx, key, csr.CacheEntry{CSR: r.CSR.PEM(), Certificate: cert}); err != nil {
				cacheErr = fmt.Errorf("writing certificate cache %s: %w", key.SecretName(), err)
			}
		})
	}
	if !recorded(current, stored) {
		wg.Go(func() { owner, recordErr = p.ports.Tenants.Apply(ctx, stored) })
	}
	if p.ports.ClusterRBAC != nil {
		wg.Go(func() {
			clusterBindErr = p.ports.ClusterRBAC.ApplyClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBinding(consumerID))
		})
	}
	if stable {
		binding.OwnerReferences = []metav1.OwnerReference{tenant.OwnerReference(current)}
		wg.Go(func() { bindErr = p.ports.RBAC.ApplyRoleBinding(ctx, binding) })
	}
	wg.Wait()
	if cacheErr != nil {
		return nil, stepError(step.CertificateIssued, cacheErr)
	}
	p.step(ctx, step.Done{Name: step.CertificateIssued})
	if err := errors.Join(recordErr, bindErr, clusterBindErr); err != nil {
		return nil, stepError(step.RBACBound, err)
	}
	if !stable {
		binding.OwnerReferences = []metav1.OwnerReference{tenant.OwnerReference(owner)}
		if err := p.ports.RBAC.ApplyRoleBinding(ctx, binding); err != nil {
			return nil, stepError(step.RBACBound, err)
		}
	}
	p.step(ctx, step.Done{Name: step.RBACBound})

	stored.Status = authv1beta1.TenantStatus{
		TenantNamespace: namespace,
		AuthParams: &authv1beta1.AuthParams{
			CA:        bytes.Clone(p.endpoint.CA),
			SignedCRT: cert,
			APIServer: p.endpoint.Server,
			ProxyURL:  v.ProxyURL,
		},
	}
	if !equality.Semantic.DeepEqual(owner.Status, stored.Status) {
		if _, err := p.ports.Tenants.ApplyStatus(ctx, stored); err != nil {
			return nil, stepError(step.TenantStatus, err)
		}
	}
	p.step(ctx, step.Done{Name: step.TenantStatus})
	return p.identity(ctx, stored)
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
	return &prefetchedNonces{Store: s, read: start(func() (nonce.Entry, error) { return s.Get(ctx, consumerID) })}
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
		admitted: start(func() (*authv1beta1.Tenant, error) {
			return lifecycle.Admit(ctx, p.ports.Tenants, p.ports.Lifecycle.Revocations, consumerID, p.opts.Clock.Now())
		}),
		cached: p.readCache(ctx, csr.CacheKey{ConsumerID: consumerID}),
		roles:  startErr(func() error { return p.requireRoles(ctx, p.tenantRoles()...) }),
	}
	if readNonce {
		r.nonce = start(func() (nonce.Entry, error) { return p.ports.Nonces.Get(ctx, consumerID) })
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
	return startErr(func() error {
		if err := rbac.CheckUnprivileged(ctx, p.ports.RBAC, consumerID, controlPlaneGroups()); err != nil {
			return err
		}
		p.unprivileged.passSince(consumerID, p.opts.Clock.Now(), since)
		return nil
	})
}

// Recheck makes the next Accept of each of consumerIDs check its
// privileges again (rbac.CheckUnprivileged), however recently they
// passed (ProviderOptions.RecheckInterval). A controller calls it when a
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
	return start(func() (*csr.CacheEntry, error) {
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

// storedTenant returns the Tenant the provider stores for t: its spec but
// its condition, and only the metadata the protocol defines (name,
// namespace, the cluster ID label, kubepact's finalizer when finalize is
// set, and the transcript annotations). Owner
// references, finalizers, labels and annotations that came with t from the
// other cluster are not kept: an owner reference to a missing object would
// let the garbage collector delete the Tenant.
func storedTenant(t *authv1beta1.Tenant, finalize bool) *authv1beta1.Tenant {
	consumerID := t.Spec.ClusterID
	stored := &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        consumerID,
			Namespace:   clusterid.TenantNamespace(consumerID),
			Labels:      map[string]string{clusterid.Label: consumerID},
			Annotations: tenant.TranscriptAnnotations(t),
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if finalize {
		stored.Finalizers = []string{tenant.Finalizer}
	}
	// The condition is the provider's: left out, it keeps what the
	// administrator set (or its default, Active), whatever t says.
	stored.Spec.TenantCondition = ""
	return stored
}

// recorded reports whether the stored Tenant current already carries all
// of want, the Tenant Accept records, status aside: its spec (the
// condition, which is the provider's, aside), and its label, annotations
// and, when want has it, finalizer. Applying want again would change
// nothing.
func recorded(current, want *authv1beta1.Tenant) bool {
	if current == nil || current.DeletionTimestamp != nil || current.UID == "" {
		return false
	}
	spec := current.Spec
	spec.TenantCondition = ""
	if !equality.Semantic.DeepEqual(spec, want.Spec) || len(want.Finalizers) > 0 && !slices.Contains(current.Finalizers, tenant.Finalizer) {
		return false
	}
	for _, m := range []struct{ have, want map[string]string }{
		{current.Labels, want.Labels}, {current.Annotations, want.Annotations},
	} {
		for k, v := range m.want {
			if got, ok := m.have[k]; !ok || got != v {
				return false
			}
		}
	}
	return true
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
// consumer (in ProviderOptions.SliceNamespaces, in its tenant namespace
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
	reason := lifecycle.ReasonRevoked
	switch {
	case revoke:
	case stored != nil && lifecycle.Condition(stored.Spec.TenantCondition) == authv1beta1.TenantConditionDrained:
		reason = lifecycle.ReasonDrained
	case stored != nil && stored.Annotations[lifecycle.RevokeAnnotation] == "true":
	default:
		reason = ""
	}
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
	if err := p.ports.RBAC.DeleteRoleBinding(ctx, namespace, rbac.BindingName(rbac.ControlPlaneClusterRoleName)); err != nil {
		return stepError(step.ForgetTenant, err)
	}
	// Every slice binding goes with the Tenant, whatever the slices' labels
	// (which the consumer's replicator sets) say.
	if err := p.unbindSlices(ctx, consumerID); err != nil {
		return stepError(step.ForgetTenant, err)
	}
	if p.ports.ClusterRBAC != nil {
		if err := p.ports.ClusterRBAC.DeleteClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID)); err != nil {
			return stepError(step.ForgetTenant, err)
		}
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

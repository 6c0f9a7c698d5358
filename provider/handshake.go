package provider

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/accept"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/async"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

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
// Where an AuthorizedConsumer commits the consumer ID (Core.Commitments),
// a Tenant of a key it does not list is refused before the nonce is
// redeemed (enrol.ErrNotCommitted), whatever flow sent it, and so is
// every Tenant of the ID while the commitment cannot be read or parsed.
// The Tenant of the committed request itself (Enrol records it) is
// verified by that request, with the committed keys, and redeems no
// nonce: it was never issued one. Where the commitment's policy
// withholds the cluster-wide slice role (spec.policy
// resourceSliceClusterWideRole false, enrol.Policy.SliceClusterWideRole),
// Accept binds the consumer's slice identities to none, and deletes the
// slice ClusterRoleBinding instead of applying it; the ControlPlane
// RoleBinding is bound all the same.
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
	commitment func() (*enrol.Commitment, error)
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
		cached:     p.readCache(ctx, csr.CacheKey{ConsumerID: consumerID}),
		roles:      async.StartErr(func() error { return p.requireRoles(ctx, p.tenantRoles()...) }),
		commitment: async.Start(func() (*enrol.Commitment, error) { return commitment(ctx, p.ports.Commitments, consumerID) }),
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
	_, _ = r.commitment()
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

// Accept decides in three parts. Gathering reads what the decision needs:
// the API server's records for Accept (acceptGathering), a cache's for
// Unchanged (cachedFacts). Deciding is the provider's accept.Chain over
// those accept.Facts, stage by stage, then accept.Decide's Plan. Acting
// (act) does what the Plan says, and nothing else.

// incoming is a Tenant as it came, parsed: as its consumer signed it, its
// consumer ID, its cluster key, and its digest.
type incoming struct {
	tenant     *authv1beta1.Tenant
	consumerID string
	key        crypto.PublicKey
	digest     []byte
}

// parse checks what a Tenant must be before anything is read for it: the
// provider has an endpoint to hand out, the Tenant is well formed
// (tenant.Validate), and it is in its consumer's tenant namespace, when it
// names one.
func (p *Provider) parse(t *authv1beta1.Tenant) (incoming, error) {
	if p.endpoint.Server == "" {
		return incoming{}, fmt.Errorf("%w: %w: accepting Tenants needs it", peer.ErrInvalidConfig, ErrNoEndpoint)
	}
	if len(p.endpoint.CA) == 0 {
		return incoming{}, fmt.Errorf("%w: accepting Tenants needs the endpoint's CA", peer.ErrInvalidConfig)
	}
	pub, err := tenant.Validate(t)
	if err != nil {
		return incoming{}, err
	}
	consumerID := t.Spec.ClusterID
	if namespace := clusterid.TenantNamespace(consumerID); t.Namespace != "" && t.Namespace != namespace {
		return incoming{}, &tenant.FieldError{Tenant: t.Name, Field: "metadata.namespace",
			Err: fmt.Errorf("%w: %q is not the tenant namespace %q", clusterid.ErrInvalid, t.Namespace, namespace)}
	}
	v := verifiable(t)
	return incoming{tenant: v, consumerID: consumerID, key: pub, digest: tenant.Digest(v)}, nil
}

// accept is Accept, with the reads of early when they are for t's consumer
// (kubepact.Authenticate starts them while the nonce is issued) and, when issued is
// set, the nonce the provider issued in the same handshake, against which
// the Tenant is verified before its redemption instead of a nonce read.
func (p *Provider) accept(ctx context.Context, t *authv1beta1.Tenant, early *acceptReads, issued *nonce.Nonce) (*authv1beta1.Identity, error) {
	in, err := p.parse(t)
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	g := p.gather(ctx, in, early, issued)
	defer g.close() // no read outlives Accept
	f, err := g.beforeRedeem()
	if err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	if _, err := p.checks.Run(ctx, accept.StageRedeem, f); err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	if err := g.redeem(ctx, f); err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	if err := g.beforeIssue(ctx, f); err != nil {
		return nil, stepError(step.TenantApplied, err)
	}
	if check, err := p.checks.Run(ctx, accept.StageIssue, f); err != nil {
		return nil, p.refused(ctx, f, check, err)
	}
	p.step(ctx, step.Done{Name: step.TenantApplied})
	w := p.want(f, issued != nil)
	return p.act(ctx, f, w, accept.Decide(f, w))
}

// refused returns the refusal err of check, in the step it fails: the
// Tenant's own checks (its signature, the holder of its ID) fail applying
// it, the others issuing its certificate. A privilege refusal first
// deletes the bindings Accept applies (refusePrivileged).
func (p *Provider) refused(ctx context.Context, f *accept.Facts, check *accept.Check, err error) error {
	switch check.Name {
	case accept.Signature:
		return stepError(step.TenantApplied, err)
	case accept.SingleHolder:
		p.step(ctx, step.Done{Name: step.TenantApplied})
		return stepError(step.TenantApplied, err)
	}
	p.step(ctx, step.Done{Name: step.TenantApplied})
	return stepError(step.CertificateIssued, p.refusePrivileged(ctx, f.ConsumerID, err))
}

// want is what the provider keeps for the Tenant of f. Only a provider
// with a controller to remove it puts the finalizer on (see
// Options.NoFinalizer): inProcess is set by kubepact.Authenticate, which
// runs in-process, with no controller as the writer. One stored stays, or
// the field manager's apply would remove it. The slice ClusterRoleBinding
// is wanted where the provider binds cluster-wide (Ports.ClusterRBAC),
// unless the consumer's commitment withholds it (accept.ClusterBinding).
func (p *Provider) want(f *accept.Facts, inProcess bool) accept.Want {
	finalize := !p.opts.NoFinalizer && !inProcess ||
		f.Stored != nil && f.Stored.DeletionTimestamp == nil && slices.Contains(f.Stored.Finalizers, tenant.Finalizer)
	bindCluster, unbindCluster := accept.ClusterBinding(p.ports.ClusterRBAC != nil, f.Commitment)
	return accept.Want{
		Record:        accept.Record(f.Tenant, finalize),
		Server:        p.endpoint.Server,
		CA:            p.endpoint.CA,
		BindCluster:   bindCluster,
		UnbindCluster: unbindCluster,
		Lifetime:      p.opts.CertificateLifetime,
	}
}

// acceptGathering is what Accept reads for one Tenant, from the API
// server: its reads start at once (acceptReads), and each is waited for
// where the decision needs it.
type acceptGathering struct {
	p      *Provider
	in     incoming
	reads  *acceptReads
	issued *nonce.Nonce
	// asking is the context of the privilege check, which stops when
	// Accept returns; privileges waits for its answer, once started.
	asking     context.Context
	stopAsking context.CancelFunc
	privileges func() error
	// pre is the nonce as read before its redemption, and what the Tenant
	// verified as against it (nil when it did not).
	pre         nonce.Entry
	preverified *tenant.Verified
}

// gather starts Accept's reads for in: those of early when they are for
// its consumer.
func (p *Provider) gather(ctx context.Context, in incoming, early *acceptReads, issued *nonce.Nonce) *acceptGathering {
	reads := early
	if reads == nil || reads.consumerID != in.consumerID {
		reads = p.startReads(ctx, in.consumerID, issued == nil && p.ports.Peek == nil)
	}
	g := &acceptGathering{p: p, in: in, reads: reads, issued: issued}
	g.asking, g.stopAsking = context.WithCancel(ctx)
	return g
}

// close stops the privilege check and waits for every read.
func (g *acceptGathering) close() {
	g.stopAsking()
	g.reads.wait()
	if g.privileges != nil {
		_ = g.privileges()
	}
}

// beforeRedeem gathers the Facts of the checks before the redemption: the
// stored Tenant and the admission. A Tenant that verifies against the
// nonce as read lets the privilege check start at once, beside the
// admission and the redemption: only a consumer whose signature verified
// makes the provider ask, and a refusal in between stops the questions.
// The nonce is the one issued in the same handshake, else the one the
// Core.Peek port has at hand, else the one read. A stale peek fails to
// verify, and the check then waits for the redemption.
func (g *acceptGathering) beforeRedeem() (*accept.Facts, error) {
	var err error
	switch {
	case g.issued != nil:
		g.pre.Nonce = *g.issued
	case g.p.ports.Peek != nil:
		g.pre, _ = g.p.ports.Peek.Peek(g.asking, g.in.consumerID)
	default:
		g.pre, err = g.reads.nonce()
	}
	switch {
	case err == nil:
		if g.preverified = g.p.preverified(g.in.tenant, g.pre, g.in.digest); g.preverified != nil {
			g.privileges = g.p.checkPrivileges(g.asking, g.in.consumerID)
		}
	case !errors.Is(err, nonce.ErrNotFound):
		return nil, fmt.Errorf("reading nonce of %s: %w", g.in.consumerID, err)
	}
	f := &accept.Facts{ConsumerID: g.in.consumerID, Tenant: g.in.tenant, Key: g.in.key, Now: g.p.opts.Clock.Now()}
	f.Stored, f.Admission = g.reads.admitted()
	f.Commitment, f.Commitments = g.reads.commitment()
	return f, nil
}

// commitment returns the commitment of consumerID in c, nil when c is nil
// or commits none.
func commitment(ctx context.Context, c enrol.Commitments, consumerID string) (*enrol.Commitment, error) {
	if c == nil {
		return nil, nil
	}
	return c.Commitment(ctx, consumerID)
}

// enrolled reports whether the Tenant of f is its consumer's committed
// request (enrol.Commitment.Enrolled), and then verifies it by that
// request, into f: it redeems no nonce, for it was never issued one.
func (p *Provider) enrolled(f *accept.Facts) bool {
	if f.Commitment == nil || !f.Commitment.Enrolled(f.Tenant) {
		return false
	}
	v, err := f.Commitment.VerifyTenant(f.Tenant, f.Key, p.id)
	if err != nil {
		f.Verified, f.Verification = nil, &tenant.FieldError{Tenant: f.Tenant.Name, Field: "spec.signature", Err: err}
	} else {
		f.Verified, f.Verification = v, nil
	}
	return true
}

// redeem redeems the consumer's nonce for the Tenant (a compare-and-swap)
// and verifies the Tenant against it, into f. A resumed handshake is
// judged as of its redemption, so its transcript's expiry counts as on the
// first attempt; a new Tenant of the same key, re-authenticating, is
// judged now. A Tenant verified already against the nonce it redeemed
// needs only its transcript's expiry judged again, as of then: the rest of
// Verify does not depend on time. Against any other nonce (it changed
// since it was read) it is verified anew.
func (g *acceptGathering) redeem(ctx context.Context, f *accept.Facts) error {
	if g.p.enrolled(f) {
		return nil
	}
	e, err := nonce.Redeem(ctx, g.p.ports.Nonces, f.ConsumerID, nonce.Redeemer{Tenant: g.in.digest, Key: keys.Fingerprint(f.Key)},
		g.p.opts.Clock.Now(), g.p.nonceOptions())
	if err != nil {
		return &tenant.FieldError{Tenant: f.Tenant.Name, Field: "spec.signature", Err: err}
	}
	at := g.p.opts.Clock.Now()
	if bytes.Equal(e.Redemption.By, g.in.digest) {
		at = e.Redemption.At
	}
	if v := g.preverified; v != nil && e.Nonce.Equal(g.pre.Nonce) {
		if f.Verification = v.Recheck(at); f.Verification == nil {
			f.Verified = v
		}
		return nil
	}
	f.Verified, f.Verification = tenant.Verify(f.Tenant, e.Nonce, &tenant.VerifyOptions{ProviderID: g.p.id, Policy: g.p.opts.Policy, Now: at})
	return nil
}

// beforeIssue gathers, for a Tenant whose signature verified, the Facts
// of the checks before anything is issued: the certificate record, the
// privilege check (started now, unless it started before the redemption)
// and the peer roles. A Tenant whose signature failed gets nothing more
// read: the signature check refuses it first.
func (g *acceptGathering) beforeIssue(ctx context.Context, f *accept.Facts) error {
	if f.Verified == nil {
		return nil
	}
	entry, err := g.reads.cached()
	if err != nil {
		return err
	}
	f.Certificate = entry
	if entry != nil && (f.Stored == nil || f.Stored.Status.AuthParams == nil) {
		claim := []crypto.PublicKey{f.Key, f.Verified.CSR.PublicKey()}
		if f.HeldAfterUnpeering, err = g.p.unpeeredHolder(ctx, f.ConsumerID, entry, claim); err != nil {
			return err
		}
	}
	// A pass of the privilege check is trusted for RecheckInterval: the
	// check is a snapshot either way, and the retry of a handshake whose
	// certificate was pending comes moments later.
	f.Privileges = func() error {
		if g.privileges == nil {
			g.privileges = g.p.checkPrivileges(g.asking, f.ConsumerID)
		}
		return g.privileges()
	}
	f.Roles = g.reads.roles
	return nil
}

// act does what plan says for the Tenant of f, towards w, and returns the
// Identity its status hands out. Once the certificate is issued, and not
// before, the writes at once: the certificate cached, the Tenant recorded
// (status aside), and, as Liqo's provider does when it accepts a Tenant,
// group consumerID bound to the cluster-wide slice role (metrics), not
// only with its first ResourceSlice; or, where the consumer's commitment
// withholds that role, its binding deleted. The ControlPlane binding is owned by
// the Tenant (deleting the Tenant collects it): it joins them when the
// Tenant is stored already (a controller's Tenant, which the consumer
// created), else it waits for the Tenant's UID. Last comes the status,
// which hands the certificate out.
func (p *Provider) act(ctx context.Context, f *accept.Facts, w accept.Want, plan accept.Plan) (*authv1beta1.Identity, error) {
	cert := plan.Certificate
	if plan.Sign {
		var err error
		if cert, err = csr.SignChecked(ctx, p.ports.Signer, accept.Request(f, w), p.opts.Clock.Now()); err != nil {
			return nil, stepError(step.CertificateIssued, err)
		}
	}
	if err := p.write(ctx, f, w, plan, cert); err != nil {
		return nil, err
	}
	stored := w.Record
	stored.Status = accept.Status(f, w, cert)
	if plan.WriteStatus {
		if _, err := p.ports.Tenants.ApplyStatus(ctx, stored); err != nil {
			return nil, stepError(step.TenantStatus, err)
		}
	}
	p.step(ctx, step.Done{Name: step.TenantStatus})
	return p.identity(ctx, stored)
}

// write caches cert when it is new, records the Tenant and applies its
// bindings, as plan says, at once where it can.
func (p *Provider) write(ctx context.Context, f *accept.Facts, w accept.Want, plan accept.Plan, cert []byte) error {
	owner := f.Stored
	stable := owner != nil && owner.UID != "" && owner.DeletionTimestamp == nil
	binding := rbac.ControlPlaneRoleBinding(clusterid.TenantNamespace(f.ConsumerID), f.ConsumerID)
	var (
		wg                                           sync.WaitGroup
		cacheErr, recordErr, bindErr, clusterBindErr error
	)
	if plan.Sign {
		wg.Go(func() {
			key := csr.CacheKey{ConsumerID: f.ConsumerID}
			if err := p.ports.Certificates.Put(ctx, key, csr.CacheEntry{CSR: f.Verified.CSR.PEM(), Certificate: cert}); err != nil {
				cacheErr = fmt.Errorf("writing certificate cache %s: %w", key.SecretName(), err)
			}
		})
	}
	if plan.Record {
		wg.Go(func() { owner, recordErr = p.ports.Tenants.Apply(ctx, w.Record) })
	}
	switch {
	case plan.BindCluster:
		wg.Go(func() {
			clusterBindErr = p.ports.ClusterRBAC.ApplyClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBinding(f.ConsumerID))
		})
	case plan.UnbindCluster:
		wg.Go(func() {
			clusterBindErr = p.ports.ClusterRBAC.DeleteClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBindingName(f.ConsumerID))
		})
	}
	if stable && plan.Bind {
		binding.OwnerReferences = []metav1.OwnerReference{tenant.OwnerReference(f.Stored)}
		wg.Go(func() { bindErr = p.ports.RBAC.ApplyRoleBinding(ctx, binding) })
	}
	wg.Wait()
	if cacheErr != nil {
		return stepError(step.CertificateIssued, cacheErr)
	}
	p.step(ctx, step.Done{Name: step.CertificateIssued})
	if err := errors.Join(recordErr, bindErr, clusterBindErr); err != nil {
		return stepError(step.RBACBound, err)
	}
	if !stable && plan.Bind {
		binding.OwnerReferences = []metav1.OwnerReference{tenant.OwnerReference(owner)}
		if err := p.ports.RBAC.ApplyRoleBinding(ctx, binding); err != nil {
			return stepError(step.RBACBound, err)
		}
	}
	p.step(ctx, step.Done{Name: step.RBACBound})
	return nil
}

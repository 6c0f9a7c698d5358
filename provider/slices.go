package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubepact/kubepact/accept"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

// AcceptSlice judges the ResourceSlice s, replicated into the tenant
// namespace of its consumer, and returns the status the provider gives it.
// s's own status, which its consumer may write, decides nothing: only the
// lastTransitionTime of its two conditions is kept where the status does
// not change, and every other field is computed anew. A slice accepted
// before a cordon stays accepted when the provider holds the certificate
// it issued to it (its csr.CacheKey entry), which only the provider
// writes.
//
// Authentication is Denied, with a *resourceslice.DeniedError returned
// beside the status, unless resourceslice.Verify accepts s (namespace,
// consumer and provider IDs, an accepted Tenant, the exact CSR policy and
// key rule), the CSR's CN is not the user of any consumer's ControlPlane
// identity (a Tenant named after it: resourceslice.ErrUserTaken), and the
// identity the certificate would carry (user = the CSR's CN, group = the
// consumer ID) holds no privilege (rbac.CheckUnprivileged; the DeniedError
// then wraps rbac.ErrPrivilegedUser). Nothing is signed or
// bound then. Resources follow resourceslice.Decide over the Tenant's
// spec.tenantCondition. A slice whose resources are Accepted gets, as from
// Liqo's provider, the offer of Options.SliceOffer in its status:
// status.resources = its spec's resources plus the offer's default
// quantities for those the spec leaves out (resourceslice.Resources),
// capped by Ports.SlicePolicy (resourceslice.Cap); the cluster's
// StorageClasses, sorted by name, with the offer's local class, else the
// annotated one, as the default (resourceslice.StorageClasses; only with
// Ports.StorageClasses); and the offer's ingress classes,
// load-balancer classes and node labels. A Liqo consumer builds its
// virtual node from them. A slice the policy refuses (an error wrapping
// resourceslice.ErrRefused) has its Resources Denied with the refusal as
// message; a slice whose resources are Denied is offered nothing. Only a
// slice with both conditions Accepted gets
// credentials: its CSR is signed like the ControlPlane CSR, cached under
// csr.CacheKey{ConsumerID, Slice}, the slice RBAC is bound for group
// consumerID (rbac.VirtualKubeletClusterRole in each of
// Options.SliceNamespaces, rbac.VirtualKubeletClusterWideRole
// cluster-wide unless the AuthorizedConsumer that commits the consumer
// withholds it, when its slice ClusterRoleBinding is deleted instead) and
// status.authParams is filled.
//
// A certificate for a request the provider has not signed for the slice
// (its first CSR, or another one) is asked of the signer only within
// Options.SliceBounds, the consumer's bounds (resourceslice.Bounds):
// over one, AcceptSlice returns a *resourceslice.BoundError, wrapping
// resourceslice.ErrSliceLimit, ErrRekeyTooSoon or ErrCertificateRate, with
// a nil status: nothing is signed, bound or written, and the slice keeps
// the status and the certificate it holds. The bounds decide from what only
// the provider and the API server write: the slices that exist and their
// creationTimestamp, the certificate cached for the slice, and the requests
// this Provider admitted (see resourceslice.Bounds for the defaults). A
// slice whose resources are denied (a new slice of a cordoned Tenant) is
// denied before any bound is read. Other errors (I/O, a
// policy's or StorageClass list's failure, csr.ErrPending) come with a nil
// status: nothing is decided.
func (p *Provider) AcceptSlice(ctx context.Context, s *authv1beta1.ResourceSlice) (*authv1beta1.ResourceSliceStatus, error) {
	if err := p.sliceConfig(true); err != nil {
		return nil, stepError(step.SliceVerified, err)
	}
	now := p.opts.Clock.Now()
	status := &authv1beta1.ResourceSliceStatus{Conditions: resourceslice.KnownConditions(s.Status.Conditions)}
	wasAccepted, err := p.sliceHeld(ctx, s)
	if err != nil {
		return nil, stepError(step.SliceVerified, err)
	}
	v, t, denied, err := p.verifySlice(ctx, s, now)
	switch {
	case err != nil:
		return nil, stepError(step.SliceVerified, err)
	case denied != nil:
		return p.denySlice(ctx, s, status, denied, now)
	}
	resourceslice.SetCondition(status, authv1beta1.ResourceSliceConditionTypeAuthentication,
		authv1beta1.ResourceSliceConditionAccepted, resourceslice.ReasonAuthenticationAccepted, "authenticated", now)
	p.step(ctx, step.Done{Name: step.SliceVerified})

	accepted, err := p.sliceResources(ctx, s, t, status, wasAccepted, now)
	if err != nil {
		return nil, err
	}
	if !accepted {
		if err := p.release(ctx, s.Namespace, v.ConsumerID, s.Name, false); err != nil {
			return nil, stepError(step.SliceBound, err)
		}
		return status, nil
	}

	namespaces, err := p.sliceNamespaces(v.ConsumerID)
	if err != nil {
		return nil, stepError(step.SliceBound, err)
	}
	clusterWide, err := p.sliceClusterWide(ctx, v.ConsumerID)
	if err != nil {
		return nil, stepError(step.SliceBound, err)
	}
	var roles []string
	if clusterWide {
		roles = append(roles, rbac.VirtualKubeletClusterWideRoleName)
	}
	if len(namespaces) > 0 {
		roles = append(roles, rbac.VirtualKubeletClusterRoleName)
	}
	if err := p.requireRoles(ctx, roles...); err != nil {
		return nil, stepError(step.CertificateIssued, err)
	}
	cert, err := p.issueSlice(ctx, s, csr.CacheKey{ConsumerID: v.ConsumerID, Slice: s.Name},
		csr.Request{CSR: v.CSR, Lifetime: p.opts.CertificateLifetime}, now)
	if err != nil {
		return nil, stepError(step.CertificateIssued, err)
	}
	if err := p.bindSlices(ctx, v.ConsumerID, clusterWide); err != nil {
		return nil, stepError(step.SliceBound, err)
	}
	p.step(ctx, step.Done{Name: step.SliceBound})
	status.AuthParams = &authv1beta1.AuthParams{
		CA:        bytes.Clone(p.endpoint.CA),
		SignedCRT: cert,
		APIServer: p.endpoint.Server,
		ProxyURL:  t.Spec.ProxyURL,
	}
	return status, nil
}

// sliceResources decides the Resources condition of the authenticated
// slice s, into status: resourceslice.Decide on its class and the Tenant's
// condition, then the grant of what it asks (grant). It reports whether
// the resources are accepted.
func (p *Provider) sliceResources(ctx context.Context, s *authv1beta1.ResourceSlice, t *authv1beta1.Tenant, status *authv1beta1.ResourceSliceStatus, wasAccepted bool, now time.Time) (bool, error) {
	res, why := resourceslice.Decide(s.Spec.Class, t.Spec.TenantCondition, wasAccepted)
	if res == authv1beta1.ResourceSliceConditionAccepted {
		refused, err := p.grant(ctx, s, status)
		switch {
		case err != nil:
			return false, stepError(step.SliceGranted, err)
		case refused != nil:
			res, why = authv1beta1.ResourceSliceConditionDenied, refused.Error()
		default:
			p.step(ctx, step.Done{Name: step.SliceGranted})
		}
	}
	reason := resourceslice.ReasonResourcesAccepted
	if res == authv1beta1.ResourceSliceConditionDenied {
		reason = resourceslice.ReasonResourcesDenied
	}
	resourceslice.SetCondition(status, authv1beta1.ResourceSliceConditionTypeResources, res, reason, why, now)
	return res == authv1beta1.ResourceSliceConditionAccepted, nil
}

// verifySlice verifies s (resourceslice.Verify) against the Tenant stored
// for its consumer, which it returns, and checks that the identity it asks
// for may be issued: its consumer is not revoked (lifecycle.Revoked, as
// Accept admits it), its user name is no consumer's ID, and its user and
// groups hold no privilege. A refusal is returned as denied, a failure to
// tell as err.
func (p *Provider) verifySlice(ctx context.Context, s *authv1beta1.ResourceSlice, now time.Time) (v *resourceslice.Verified, t *authv1beta1.Tenant, denied, err error) {
	if consumerID, err := resourceslice.ConsumerOf(s.Namespace); err == nil {
		got, err := p.ports.Tenants.Get(ctx, s.Namespace, consumerID)
		switch {
		case err == nil:
			t = got
		case !errors.Is(err, tenant.ErrNotFound):
			return nil, nil, nil, err
		}
		if err := lifecycle.Revoked(ctx, p.ports.Lifecycle.Revocations, consumerID, now); errors.Is(err, lifecycle.ErrRevoked) {
			return nil, nil, &resourceslice.DeniedError{Slice: s.Namespace + "/" + s.Name, Field: "metadata.namespace", Err: err}, nil
		} else if err != nil {
			return nil, nil, nil, err
		}
	}
	if v, err = resourceslice.Verify(s, p.id, t); err != nil {
		return nil, nil, err, nil
	}
	subject := v.CSR.Subject()
	// The CN is a user name: one that is also a consumer's ID would carry
	// that consumer's ControlPlane bindings.
	if clusterid.Validate(subject.CommonName) == nil {
		_, err := p.ports.Tenants.Get(ctx, clusterid.TenantNamespace(subject.CommonName), subject.CommonName)
		switch {
		case err == nil:
			return nil, nil, &resourceslice.DeniedError{Slice: s.Namespace + "/" + s.Name, Field: "metadata.name",
				Err: fmt.Errorf("%w: %q", resourceslice.ErrUserTaken, subject.CommonName)}, nil
		case !errors.Is(err, tenant.ErrNotFound):
			return nil, nil, nil, err
		}
	}
	if err := rbac.CheckUnprivileged(ctx, p.ports.RBAC, subject.CommonName, subject.Organization); err != nil {
		if !errors.Is(err, rbac.ErrPrivilegedUser) {
			return nil, nil, nil, err
		}
		return nil, nil, &resourceslice.DeniedError{Slice: s.Namespace + "/" + s.Name, Field: "spec.csr", Err: err}, nil
	}
	return v, t, nil, nil
}

// denySlice denies s for why, into status. A slice denied now may have
// been accepted before: its certificate goes, and the bindings unless
// another slice needs them (all of them when the consumer has no accepted
// Tenant).
func (p *Provider) denySlice(ctx context.Context, s *authv1beta1.ResourceSlice, status *authv1beta1.ResourceSliceStatus, why error, now time.Time) (*authv1beta1.ResourceSliceStatus, error) {
	if consumerID, err := resourceslice.ConsumerOf(s.Namespace); err == nil {
		tenantGone := errors.Is(why, resourceslice.ErrNoTenant)
		if err := p.release(ctx, s.Namespace, consumerID, s.Name, tenantGone); err != nil {
			return nil, stepError(step.SliceVerified, err)
		}
	}
	resourceslice.SetCondition(status, authv1beta1.ResourceSliceConditionTypeAuthentication,
		authv1beta1.ResourceSliceConditionDenied, resourceslice.ReasonAuthenticationDenied, why.Error(), now)
	resourceslice.SetCondition(status, authv1beta1.ResourceSliceConditionTypeResources,
		authv1beta1.ResourceSliceConditionDenied, resourceslice.ReasonResourcesDenied, "authentication denied", now)
	return status, stepError(step.SliceVerified, why)
}

// sliceHeld reports whether the provider holds credentials it issued to
// slice s: a certificate cached for it, which only an acceptance of both
// its conditions writes and every denial deletes. It is what "accepted
// before a cordon" means. The slice's own status is no record of it: its
// consumer may write it (resourceslices/status is in the ControlPlane
// role), and the certificate cache is in a namespace where no identity of a
// peer holds rights on Secrets.
func (p *Provider) sliceHeld(ctx context.Context, s *authv1beta1.ResourceSlice) (bool, error) {
	consumerID, err := resourceslice.ConsumerOf(s.Namespace)
	if err != nil {
		return false, nil
	}
	_, err = p.ports.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID, Slice: s.Name})
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, csr.ErrNotFound):
		return false, nil
	default:
		return false, err
	}
}

// grant fills the offer fields of status, the status of slice s whose
// resources Decide accepts: the resources the spec asks for with the
// offer's default quantities, capped by Ports.SlicePolicy, the
// cluster's StorageClasses (when Ports.StorageClasses is set),
// and the offer's classes and node labels. A refusal of the policy is
// returned as refused (wrapping resourceslice.ErrRefused), with status
// left without an offer; other errors are failures to decide.
func (p *Provider) grant(ctx context.Context, s *authv1beta1.ResourceSlice, status *authv1beta1.ResourceSliceStatus) (refused, err error) {
	offer := p.opts.SliceOffer
	granted := resourceslice.Resources(s.Spec.Resources, offer.DefaultResources)
	if p.ports.SlicePolicy != nil {
		limits, err := p.ports.SlicePolicy.Limits(ctx, s.DeepCopy())
		switch {
		case errors.Is(err, resourceslice.ErrRefused):
			resourceslice.Withdraw(status)
			return err, nil
		case err != nil:
			return nil, fmt.Errorf("ResourceSlice %s/%s: the slice policy: %w", s.Namespace, s.Name, err)
		}
		granted = resourceslice.Cap(granted, limits)
	}
	var storage []authv1beta1.StorageType
	if p.ports.StorageClasses != nil {
		classes, err := p.ports.StorageClasses.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("ResourceSlice %s/%s: listing StorageClasses: %w", s.Namespace, s.Name, err)
		}
		storage = resourceslice.StorageClasses(classes, offer.LocalStorageClass)
	}
	resourceslice.Grant(status, granted, storage, offer)
	return nil, nil
}

// sliceConfig checks that p has what slices need.
func (p *Provider) sliceConfig(accept bool) error {
	if p.ports.ClusterRBAC == nil || p.ports.Slices == nil {
		return fmt.Errorf("%w: ResourceSlices need the ClusterRBAC and Slices ports", peer.ErrInvalidConfig)
	}
	if accept && p.endpoint.Server == "" {
		return fmt.Errorf("%w: %w: accepting ResourceSlices needs it", peer.ErrInvalidConfig, ErrNoEndpoint)
	}
	if accept && len(p.endpoint.CA) == 0 {
		return fmt.Errorf("%w: accepting ResourceSlices needs the endpoint's CA", peer.ErrInvalidConfig)
	}
	return nil
}

// ErrSliceNamespace is what Options.SliceNamespaces naming a
// tenant namespace fails with, as a *SliceNamespaceError (which also
// matches peer.ErrInvalidConfig).
var ErrSliceNamespace = errors.New("kubepact: a tenant namespace is never granted to ResourceSlice identities")

// SliceNamespaceError names the tenant namespace that
// Options.SliceNamespaces returned for a consumer's slices. A
// tenant namespace holds this cluster's own objects for that peer (in a
// two-way peering its kubeconfig Secret, whose key may be the cluster key,
// its signed nonce and its certificate caches) and the provider's records
// (nonce, certificate caches, revocation): the Secrets and ConfigMaps
// rights of rbac.VirtualKubeletClusterRole there would hand them to the
// peer. Nothing is bound when SliceNamespaces returns one.
type SliceNamespaceError struct {
	ConsumerID, Namespace string
}

func (e *SliceNamespaceError) Error() string {
	return fmt.Sprintf("kubepact: Options.SliceNamespaces of consumer %q names tenant namespace %q: a tenant namespace is never granted to ResourceSlice identities",
		e.ConsumerID, e.Namespace)
}

// Unwrap returns ErrSliceNamespace and peer.ErrInvalidConfig.
func (e *SliceNamespaceError) Unwrap() []error {
	return []error{ErrSliceNamespace, peer.ErrInvalidConfig}
}

// sliceNamespaces returns the namespaces consumerID's slices may use: none
// unless Options.SliceNamespaces names some, and never a tenant
// namespace (a *SliceNamespaceError).
func (p *Provider) sliceNamespaces(consumerID string) ([]string, error) {
	if p.opts.SliceNamespaces == nil {
		return nil, nil
	}
	namespaces := p.opts.SliceNamespaces(consumerID)
	for _, ns := range namespaces {
		if strings.HasPrefix(ns, clusterid.TenantNamespacePrefix) {
			return nil, &SliceNamespaceError{ConsumerID: consumerID, Namespace: ns}
		}
	}
	return namespaces, nil
}

// sliceClusterWide reports whether the slice identities of consumerID are
// bound to the cluster-wide slice role: unless the AuthorizedConsumer that
// commits the consumer withholds it (accept.ClusterBinding). A commitment
// that cannot be read or parsed is an error: nothing is decided.
func (p *Provider) sliceClusterWide(ctx context.Context, consumerID string) (bool, error) {
	c, err := commitment(ctx, p.ports.Commitments, consumerID)
	if err != nil {
		return false, err
	}
	bind, _ := accept.ClusterBinding(true, c)
	return bind, nil
}

// bindSlices binds group consumerID to the slice ClusterRoles, which must
// be installed (requireRoles): the namespaced one in each of
// sliceNamespaces, and, with clusterWide, the cluster-wide one; without
// it, the cluster-wide binding is deleted.
func (p *Provider) bindSlices(ctx context.Context, consumerID string, clusterWide bool) error {
	namespaces, err := p.sliceNamespaces(consumerID)
	if err != nil {
		return err
	}
	for _, b := range rbac.ResourceSliceRoleBindings(consumerID, rbac.VirtualKubeletClusterRoleName, namespaces) {
		if err := p.ports.RBAC.ApplyRoleBinding(ctx, b); err != nil {
			return err
		}
	}
	if !clusterWide {
		return p.ports.ClusterRBAC.DeleteClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID))
	}
	return p.ports.ClusterRBAC.ApplyClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBinding(consumerID))
}

// unbindSlices deletes the namespaced slice bindings of consumerID: in each
// of sliceNamespaces, and in its tenant namespace, where kubepact v0.1.0
// and earlier bound rbac.VirtualKubeletClusterRole by default. A
// SliceNamespaces that names a tenant namespace bound nothing (bindSlices
// refuses it), so nothing more is deleted then.
func (p *Provider) unbindSlices(ctx context.Context, consumerID string) error {
	name := rbac.BindingName(rbac.VirtualKubeletClusterRoleName)
	if err := p.ports.RBAC.DeleteRoleBinding(ctx, clusterid.TenantNamespace(consumerID), name); err != nil {
		return err
	}
	namespaces, err := p.sliceNamespaces(consumerID)
	switch {
	case errors.Is(err, ErrSliceNamespace):
		return nil
	case err != nil:
		return err
	}
	for _, ns := range namespaces {
		if err := p.ports.RBAC.DeleteRoleBinding(ctx, ns, name); err != nil {
			return err
		}
	}
	return nil
}

// ForgetSlice removes what the provider holds for the slice
// namespace/name: its cached certificate and, when no other slice of its
// consumer in namespace may still need them (one not being deleted and not
// denied), the slice bindings of the consumer. The slice itself is not
// deleted. Certificates already issued are not revoked: they lose their
// permissions with the bindings. Forgetting an unknown slice succeeds.
func (p *Provider) ForgetSlice(ctx context.Context, namespace, name string) error {
	if err := p.sliceConfig(false); err != nil {
		return stepError(step.SliceForgot, err)
	}
	consumerID, err := resourceslice.ConsumerOf(namespace)
	if err != nil {
		return stepError(step.SliceForgot, err)
	}
	if err := p.release(ctx, namespace, consumerID, name, false); err != nil {
		return stepError(step.SliceForgot, err)
	}
	p.step(ctx, step.Done{Name: step.SliceForgot})
	return nil
}

// release removes the cached certificate of slice name and, when no other
// slice of consumerID may need them, or with all (the consumer has no
// accepted Tenant), the consumer's slice bindings. A slice that another
// worker accepted while the bindings went gets them back.
func (p *Provider) release(ctx context.Context, namespace, consumerID, name string, all bool) error {
	if err := p.ports.Certificates.Delete(ctx, csr.CacheKey{ConsumerID: consumerID, Slice: name}); err != nil {
		return err
	}
	p.sliceLedger.released(consumerID)
	if !all {
		need, err := p.othersNeedBindings(ctx, namespace, name)
		if err != nil || need {
			return err
		}
	}
	if err := p.unbindSlices(ctx, consumerID); err != nil {
		return err
	}
	if all {
		// No accepted Tenant: the cluster-wide binding its acceptance made
		// goes too.
		return p.ports.ClusterRBAC.DeleteClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID))
	}
	need, err := p.othersNeedBindings(ctx, namespace, name)
	if err != nil || !need {
		return err
	}
	clusterWide, err := p.sliceClusterWide(ctx, consumerID)
	if err != nil {
		return err
	}
	return p.bindSlices(ctx, consumerID, clusterWide)
}

// othersNeedBindings reports whether a slice in namespace other than name
// needs the consumer's slice bindings: one not being deleted that holds
// credentials the provider issued (sliceHeld). The slices' status, which
// their consumer may write, decides nothing. A slice not judged yet binds
// them again when it is accepted.
func (p *Provider) othersNeedBindings(ctx context.Context, namespace, name string) (bool, error) {
	others, err := p.ports.Slices.List(ctx, namespace)
	if err != nil {
		return false, err
	}
	for _, o := range others {
		if o.Name == name || o.DeletionTimestamp != nil {
			continue
		}
		held, err := p.sliceHeld(ctx, &o)
		if err != nil || held {
			return held, err
		}
	}
	return false, nil
}

package kubepact

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// Steps of a ResourceSlice on the provider.
const (
	StepSliceVerified StepName = "ResourceSlice authenticated"
	StepSliceGranted  StepName = "ResourceSlice resources granted"
	StepSliceBound    StepName = "ResourceSlice permissions bound"
	StepSliceForgot   StepName = "ResourceSlice removed from provider cluster"
)

// AcceptSlice judges the ResourceSlice s, replicated into the tenant
// namespace of its consumer, and returns the status the provider gives it.
// s's own status is only read for its conditions, so that
// lastTransitionTime changes only on a transition and a slice accepted
// before a cordon stays accepted.
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
// Liqo's provider, the offer of ProviderOptions.SliceOffer in its status:
// status.resources = its spec's resources plus the offer's default
// quantities for those the spec leaves out (resourceslice.Resources),
// capped by ProviderPorts.SlicePolicy (resourceslice.Cap); the cluster's
// StorageClasses, sorted by name, with the offer's local class, else the
// annotated one, as the default (resourceslice.StorageClasses; only with
// ProviderPorts.StorageClasses); and the offer's ingress classes,
// load-balancer classes and node labels. A Liqo consumer builds its
// virtual node from them. A slice the policy refuses (an error wrapping
// resourceslice.ErrRefused) has its Resources Denied with the refusal as
// message; a slice whose resources are Denied is offered nothing. Only a
// slice with both conditions Accepted gets
// credentials: its CSR is signed like the ControlPlane CSR, cached under
// csr.CacheKey{ConsumerID, Slice}, the slice RBAC is bound for group
// consumerID (rbac.VirtualKubeletClusterRole in each of
// ProviderOptions.SliceNamespaces, rbac.VirtualKubeletClusterWideRole
// cluster-wide) and status.authParams is filled. Other errors (I/O, a
// policy's or StorageClass list's failure, csr.ErrPending) come with a nil
// status: nothing is decided.
func (p *Provider) AcceptSlice(ctx context.Context, s *authv1beta1.ResourceSlice) (*authv1beta1.ResourceSliceStatus, error) {
	if err := p.sliceConfig(true); err != nil {
		return nil, stepError(StepSliceVerified, err)
	}
	now := p.opts.Clock.Now()
	status := &authv1beta1.ResourceSliceStatus{Conditions: s.DeepCopy().Status.Conditions}
	wasAccepted := resourceslice.Accepted(&s.Status, authv1beta1.ResourceSliceConditionTypeResources)
	deny := func(err error) (*authv1beta1.ResourceSliceStatus, error) {
		// A slice denied now may have been accepted before: its
		// certificate goes, and the bindings unless another slice needs
		// them (all of them when the consumer has no accepted Tenant).
		if consumerID, cerr := resourceslice.ConsumerOf(s.Namespace); cerr == nil {
			tenantGone := errors.Is(err, resourceslice.ErrNoTenant)
			if rerr := p.release(ctx, s.Namespace, consumerID, s.Name, tenantGone); rerr != nil {
				return nil, stepError(StepSliceVerified, rerr)
			}
		}
		resourceslice.SetCondition(status, authv1beta1.ResourceSliceConditionTypeAuthentication,
			authv1beta1.ResourceSliceConditionDenied, resourceslice.ReasonAuthenticationDenied, err.Error(), now)
		resourceslice.SetCondition(status, authv1beta1.ResourceSliceConditionTypeResources,
			authv1beta1.ResourceSliceConditionDenied, resourceslice.ReasonResourcesDenied, "authentication denied", now)
		return status, stepError(StepSliceVerified, err)
	}

	var t *authv1beta1.Tenant
	if consumerID, err := resourceslice.ConsumerOf(s.Namespace); err == nil {
		got, err := p.ports.Tenants.Get(ctx, s.Namespace, consumerID)
		switch {
		case err == nil:
			t = got
		case !errors.Is(err, tenant.ErrNotFound):
			return nil, stepError(StepSliceVerified, err)
		}
	}
	v, err := resourceslice.Verify(s, p.id, t)
	if err != nil {
		return deny(err)
	}
	subject := v.CSR.Subject()
	// The CN is a user name: one that is also a consumer's ID would carry
	// that consumer's ControlPlane bindings.
	if clusterid.Validate(subject.CommonName) == nil {
		_, err := p.ports.Tenants.Get(ctx, clusterid.TenantNamespace(subject.CommonName), subject.CommonName)
		switch {
		case err == nil:
			return deny(&resourceslice.DeniedError{Slice: s.Namespace + "/" + s.Name, Field: "metadata.name",
				Err: fmt.Errorf("%w: %q", resourceslice.ErrUserTaken, subject.CommonName)})
		case !errors.Is(err, tenant.ErrNotFound):
			return nil, stepError(StepSliceVerified, err)
		}
	}
	if err := rbac.CheckUnprivileged(ctx, p.ports.RBAC, subject.CommonName, subject.Organization); err != nil {
		if !errors.Is(err, rbac.ErrPrivilegedUser) {
			return nil, stepError(StepSliceVerified, err)
		}
		return deny(&resourceslice.DeniedError{Slice: s.Namespace + "/" + s.Name, Field: "spec.csr", Err: err})
	}
	resourceslice.SetCondition(status, authv1beta1.ResourceSliceConditionTypeAuthentication,
		authv1beta1.ResourceSliceConditionAccepted, resourceslice.ReasonAuthenticationAccepted, "authenticated", now)
	p.step(ctx, Step{Name: StepSliceVerified})

	res, why := resourceslice.Decide(s.Spec.Class, t.Spec.TenantCondition, wasAccepted)
	if res == authv1beta1.ResourceSliceConditionAccepted {
		refused, err := p.grant(ctx, s, status)
		switch {
		case err != nil:
			return nil, stepError(StepSliceGranted, err)
		case refused != nil:
			res, why = authv1beta1.ResourceSliceConditionDenied, refused.Error()
		default:
			p.step(ctx, Step{Name: StepSliceGranted})
		}
	}
	reason := resourceslice.ReasonResourcesAccepted
	if res == authv1beta1.ResourceSliceConditionDenied {
		reason = resourceslice.ReasonResourcesDenied
	}
	resourceslice.SetCondition(status, authv1beta1.ResourceSliceConditionTypeResources, res, reason, why, now)
	if res == authv1beta1.ResourceSliceConditionDenied {
		if err := p.release(ctx, s.Namespace, v.ConsumerID, s.Name, false); err != nil {
			return nil, stepError(StepSliceBound, err)
		}
		return status, nil
	}

	if err := p.requireRoles(ctx, rbac.VirtualKubeletClusterRoleName, rbac.VirtualKubeletClusterWideRoleName); err != nil {
		return nil, stepError(StepCertificateIssued, err)
	}
	cert, err := csr.Issue(ctx, p.ports.Signer, p.ports.Certificates, csr.CacheKey{ConsumerID: v.ConsumerID, Slice: s.Name},
		csr.Request{CSR: v.CSR, Lifetime: p.opts.CertificateLifetime}, now)
	if err != nil {
		return nil, stepError(StepCertificateIssued, err)
	}
	if err := p.bindSlices(ctx, v.ConsumerID); err != nil {
		return nil, stepError(StepSliceBound, err)
	}
	p.step(ctx, Step{Name: StepSliceBound})
	status.AuthParams = &authv1beta1.AuthParams{
		CA:        bytes.Clone(p.endpoint.CA),
		SignedCRT: cert,
		APIServer: p.endpoint.Server,
		ProxyURL:  t.Spec.ProxyURL,
	}
	return status, nil
}

// grant fills the offer fields of status, the status of slice s whose
// resources Decide accepts: the resources the spec asks for with the
// offer's default quantities, capped by ProviderPorts.SlicePolicy, the
// cluster's StorageClasses (when ProviderPorts.StorageClasses is set),
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
		return fmt.Errorf("%w: ResourceSlices need the ClusterRBAC and Slices ports", ErrInvalidConfig)
	}
	if accept && p.endpoint.Server == "" {
		return fmt.Errorf("%w: %w: accepting ResourceSlices needs it", ErrInvalidConfig, ErrNoEndpoint)
	}
	if accept && len(p.endpoint.CA) == 0 {
		return fmt.Errorf("%w: accepting ResourceSlices needs the endpoint's CA", ErrInvalidConfig)
	}
	return nil
}

// sliceNamespaces returns the namespaces consumerID's slices may use.
func (p *Provider) sliceNamespaces(consumerID string) []string {
	if p.opts.SliceNamespaces == nil {
		return []string{clusterid.TenantNamespace(consumerID)}
	}
	return p.opts.SliceNamespaces(consumerID)
}

// bindSlices binds group consumerID to the slice ClusterRoles, which must
// be installed (requireRoles).
func (p *Provider) bindSlices(ctx context.Context, consumerID string) error {
	for _, b := range rbac.ResourceSliceRoleBindings(consumerID, rbac.VirtualKubeletClusterRoleName, p.sliceNamespaces(consumerID)) {
		if err := p.ports.RBAC.ApplyRoleBinding(ctx, b); err != nil {
			return err
		}
	}
	return p.ports.ClusterRBAC.ApplyClusterRoleBinding(ctx, rbac.ResourceSliceClusterRoleBinding(consumerID))
}

// ForgetSlice removes what the provider holds for the slice
// namespace/name: its cached certificate and, when no other slice of its
// consumer in namespace may still need them (one not being deleted and not
// denied), the slice bindings of the consumer. The slice itself is not
// deleted. Certificates already issued are not revoked: they lose their
// permissions with the bindings. Forgetting an unknown slice succeeds.
func (p *Provider) ForgetSlice(ctx context.Context, namespace, name string) error {
	if err := p.sliceConfig(false); err != nil {
		return stepError(StepSliceForgot, err)
	}
	consumerID, err := resourceslice.ConsumerOf(namespace)
	if err != nil {
		return stepError(StepSliceForgot, err)
	}
	if err := p.release(ctx, namespace, consumerID, name, false); err != nil {
		return stepError(StepSliceForgot, err)
	}
	p.step(ctx, Step{Name: StepSliceForgot})
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
	if !all {
		need, err := p.othersNeedBindings(ctx, namespace, name)
		if err != nil || need {
			return err
		}
	}
	for _, ns := range p.sliceNamespaces(consumerID) {
		if err := p.ports.RBAC.DeleteRoleBinding(ctx, ns, rbac.BindingName(rbac.VirtualKubeletClusterRoleName)); err != nil {
			return err
		}
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
	return p.bindSlices(ctx, consumerID)
}

// othersNeedBindings reports whether a slice in namespace other than name
// may need the consumer's slice bindings: one not being deleted whose
// conditions are not Denied (accepted, or not judged yet).
func (p *Provider) othersNeedBindings(ctx context.Context, namespace, name string) (bool, error) {
	others, err := p.ports.Slices.List(ctx, namespace)
	if err != nil {
		return false, err
	}
	for _, o := range others {
		if o.Name == name || o.DeletionTimestamp != nil {
			continue
		}
		denied := false
		for _, c := range o.Status.Conditions {
			denied = denied || c.Status == authv1beta1.ResourceSliceConditionDenied
		}
		if !denied {
			return true, nil
		}
	}
	return false, nil
}

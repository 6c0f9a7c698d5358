package consumer

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

var (
	// ErrSlicePending reports a slice the provider has not answered yet,
	// or accepted without credentials (its Resources are Denied).
	ErrSlicePending = errors.New("resource slice has no credentials yet")
	// ErrSliceDenied reports a slice whose Authentication the provider
	// denied.
	ErrSliceDenied = errors.New("provider denied the resource slice")
)

// SliceOptions tunes Consumer.Slice. The zero value, like a nil pointer,
// asks for class "default" and no resources.
type SliceOptions struct {
	Class     authv1beta1.ResourceSliceClass
	Resources corev1.ResourceList
}

// Slice ensures the consumer's tenant namespace for providerID and returns
// the ResourceSlice name to create there: replication labels, both cluster
// IDs, class, resources and the CSR of the slice identity. The CSR is for
// the cluster key, as Liqo's, unless the consumer is Strict: then for a
// fresh key of the slice identity, stored in Ports.IdentityKeys
// under identity.ResourceSliceKeyName(providerID, name) before the CSR is
// built.
func (c *Consumer) Slice(ctx context.Context, providerID, name string, opts *SliceOptions) (*authv1beta1.ResourceSlice, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, stepError(step.SliceBuilt, err)
	}
	if err := resourceslice.ValidateName(name); err != nil {
		return nil, stepError(step.SliceBuilt, err)
	}
	if err := c.ports.Namespaces.Ensure(ctx, tenant.Namespace(providerID)); err != nil {
		return nil, stepError(step.ConsumerNamespace, err)
	}
	key, err := c.sliceKey(ctx, providerID, name, true)
	if err != nil {
		return nil, stepError(step.SliceBuilt, err)
	}
	var b *resourceslice.BuildOptions
	if opts != nil {
		b = &resourceslice.BuildOptions{Class: opts.Class, Resources: opts.Resources}
	}
	s, err := resourceslice.Build(c.opts.Rand, c.id, providerID, name, key, b)
	if err != nil {
		return nil, stepError(step.SliceBuilt, err)
	}
	c.step(ctx, step.Done{Name: step.SliceBuilt})
	return s, nil
}

// CompleteSlice returns a copy of the local slice s with what a slice made
// by hand lacks: spec.consumerClusterID, spec.providerClusterID (from the
// tenant namespace) and, when spec.csr is empty, the CSR, as Slice makes
// them. It refuses (resourceslice.ErrMalformed) a slice outside a tenant
// namespace or naming another consumer or provider. It reports whether it
// changed anything.
func (c *Consumer) CompleteSlice(ctx context.Context, s *authv1beta1.ResourceSlice) (*authv1beta1.ResourceSlice, bool, error) {
	providerID, err := c.sliceProvider(s)
	if err != nil {
		return nil, false, stepError(step.SliceBuilt, err)
	}
	out := s.DeepCopy()
	changed := false
	if out.Spec.ConsumerClusterID == nil {
		id := c.id
		out.Spec.ConsumerClusterID, changed = &id, true
	}
	if out.Spec.ProviderClusterID == nil {
		out.Spec.ProviderClusterID, changed = &providerID, true
	}
	if len(out.Spec.CSR) == 0 {
		key, err := c.sliceKey(ctx, providerID, s.Name, true)
		if err != nil {
			return nil, false, stepError(step.SliceBuilt, err)
		}
		if out.Spec.CSR, err = csr.Create(c.opts.Rand, key, csr.ResourceSliceSubject(c.id, s.Name)); err != nil {
			return nil, false, stepError(step.SliceBuilt, err)
		}
		changed = true
	}
	return out, changed, nil
}

// sliceProvider returns the provider of the local slice s, read from its
// namespace, checking that its spec names this consumer and that provider.
func (c *Consumer) sliceProvider(s *authv1beta1.ResourceSlice) (string, error) {
	if err := resourceslice.ValidateName(s.Name); err != nil {
		return "", err
	}
	providerID, ok := strings.CutPrefix(s.Namespace, clusterid.TenantNamespacePrefix)
	if !ok || clusterid.Validate(providerID) != nil {
		return "", fmt.Errorf("%w: slice %s/%s is not in a tenant namespace", resourceslice.ErrMalformed, s.Namespace, s.Name)
	}
	if p := s.Spec.ProviderClusterID; p != nil && *p != providerID {
		return "", fmt.Errorf("%w: slice %s/%s names provider %q in the tenant namespace of %q", resourceslice.ErrMalformed, s.Namespace, s.Name, *p, providerID)
	}
	if id := s.Spec.ConsumerClusterID; id != nil && *id != c.id {
		return "", fmt.Errorf("%w: slice %s/%s names consumer %q, this cluster is %q", resourceslice.ErrMalformed, s.Namespace, s.Name, *id, c.id)
	}
	return providerID, nil
}

// sliceKey returns the TLS key of slice name's identity with providerID:
// its own key when the consumer holds one, else the cluster key. With
// create, a Strict consumer creates it, and so does any consumer that made
// a key of its own for its ControlPlane identity with providerID
// (TenantOptions.OwnKey, ownControlPlaneKey): that provider is kubepact's,
// and it requires a fresh key of such a consumer's slices. Only keys this
// consumer attested count.
func (c *Consumer) sliceKey(ctx context.Context, providerID, name string, create bool) (*keys.PrivateKey, error) {
	if c.ports.IdentityKeys != nil {
		keyName, use := identity.ResourceSliceKeyName(providerID, name), sliceUse(providerID)
		fresh := c.opts.Strict
		if create && !fresh {
			var err error
			if fresh, err = c.ownControlPlaneKey(ctx, providerID); err != nil {
				return nil, err
			}
		}
		if fresh && create {
			// Stored before the CSR is built: a retry re-uses it.
			return c.ensureKey(ctx, keyName, use)
		}
		own, err := c.heldKey(ctx, keyName, use)
		switch {
		case own != nil:
			return own, nil
		case err != nil && (c.opts.Strict || !errors.Is(err, keys.ErrUnattested)):
			return nil, err
		case c.opts.Strict:
			return nil, fmt.Errorf("%w: key %s", keys.ErrNotFound, keyName)
		}
	}
	return c.clusterKey(ctx, false)
}

// sliceAnswered returns nil when the provider accepted s and answered it
// with credentials (status.authParams), else a *step.Error: ErrSliceDenied
// for a slice denied, whose identity it first removes, ErrSlicePending
// for one not answered yet, identity.ErrMalformed for an API server URL
// over maxAPIServerLength.
func (c *Consumer) sliceAnswered(ctx context.Context, s *authv1beta1.ResourceSlice) error {
	if cond := resourceslice.Condition(&s.Status, authv1beta1.ResourceSliceConditionTypeAuthentication); cond != nil &&
		cond.Status == authv1beta1.ResourceSliceConditionDenied {
		if err := c.removeSliceIdentity(ctx, s.Namespace, s.Name); err != nil {
			return stepError(step.SliceIdentityRemoved, err)
		}
		return stepError(step.SliceIdentityApplied, fmt.Errorf("%w: slice %s/%s: %s", ErrSliceDenied, s.Namespace, s.Name, truncated(cond.Message)))
	}
	if !resourceslice.Accepted(&s.Status, authv1beta1.ResourceSliceConditionTypeAuthentication) || s.Status.AuthParams == nil {
		return stepError(step.SliceIdentityApplied, fmt.Errorf("%w: slice %s/%s", ErrSlicePending, s.Namespace, s.Name))
	}
	if n := len(s.Status.AuthParams.APIServer); n > maxAPIServerLength {
		return stepError(step.SliceIdentityApplied, fmt.Errorf("%w: status.authParams.apiServer of slice %s/%s: %d bytes",
			identity.ErrMalformed, s.Namespace, s.Name, n))
	}
	return nil
}

// sliceIdentity is the Identity the consumer keeps for s, a slice of
// providerID that was answered: owned by s when s is stored.
func sliceIdentity(s *authv1beta1.ResourceSlice, providerID string) *authv1beta1.Identity {
	want := &authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      identity.ResourceSliceName(s.Name),
			Namespace: s.Namespace,
			Labels:    map[string]string{clusterid.Label: providerID, resourceslice.IdentityLabel: s.Name},
		},
		Spec: authv1beta1.IdentitySpec{
			ClusterID:  providerID,
			Type:       authv1beta1.ResourceSliceIdentityType,
			AuthParams: *s.Status.AuthParams.DeepCopy(),
		},
	}
	if s.UID != "" {
		controller, block := true, true
		want.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.ResourceSliceKind,
			Name: s.Name, UID: s.UID, Controller: &controller, BlockOwnerDeletion: &block,
		}}
	}
	return want
}

// ApplySliceIdentity turns the provider's answer in the status of the local
// slice s into the slice's Identity, "resourceslice-<slice>" of type
// ResourceSlice in s's namespace, owned by s (when s has a UID) and
// labelled with resourceslice.IdentityLabel, and its kubeconfig Secret.
//
// Nothing of the status is trusted: the certificate must be for the
// slice's key with CN and O of csr.ResourceSliceSubject (identity.Verify),
// and the API server and CA must be those of the consumer's ControlPlane
// Identity for the provider (ErrEndpointChanged; a slice before the
// handshake gets identity.ErrMalformed). With Ports.Reviewer the
// provider is then asked who the kubeconfig authenticates as
// (identity.ConfirmSubject). A status that fails any check writes nothing.
//
// When the provider denied the slice's Authentication, the slice's
// Identity and kubeconfig Secret are removed and the error wraps
// ErrSliceDenied; without credentials yet it wraps ErrSlicePending.
func (c *Consumer) ApplySliceIdentity(ctx context.Context, s *authv1beta1.ResourceSlice, opts *ApplyOptions) (*Authenticated, error) {
	providerID, err := c.sliceProvider(s)
	if err != nil {
		return nil, stepError(step.SliceIdentityApplied, err)
	}
	if err := c.sliceAnswered(ctx, s); err != nil {
		return nil, err
	}
	want := sliceIdentity(s, providerID)
	key, err := c.sliceKey(ctx, providerID, s.Name, false)
	if err != nil {
		return nil, stepError(step.SliceIdentityApplied, err)
	}
	subject := csr.ResourceSliceSubject(c.id, s.Name)
	verify := &identity.VerifyOptions{Subject: &subject}
	if opts != nil {
		verify.ClientCAs = opts.ClientCAs
	}
	if _, err := identity.Verify(want, c.id, key.Public(), c.opts.Clock.Now(), verify); err != nil {
		return nil, stepError(step.SliceIdentityApplied, err)
	}
	cp, err := c.heldIdentity(ctx, s.Namespace, identity.ControlPlaneName(providerID))
	if err != nil {
		return nil, stepError(step.SliceIdentityApplied, err)
	}
	if cp == nil {
		return nil, stepError(step.SliceIdentityApplied, fmt.Errorf("%w: no ControlPlane identity for provider %q to check the slice's endpoint against", identity.ErrMalformed, providerID))
	}
	if err := sameEndpoint(cp, want); err != nil {
		return nil, stepError(step.SliceIdentityApplied, err)
	}
	cfg, err := kubeconfig.FromIdentity(want, key)
	if err != nil {
		return nil, stepError(step.SliceIdentityApplied, err)
	}
	data, err := cfg.Marshal()
	if err != nil {
		return nil, stepError(step.SliceIdentityApplied, err)
	}
	if c.ports.Reviewer != nil {
		if err := identity.ConfirmSubject(ctx, c.ports.Reviewer, cfg, subject); err != nil {
			return nil, stepError(step.SliceIdentityApplied, err)
		}
	}
	stored, err := c.ports.Identities.Apply(ctx, want)
	if err != nil {
		return nil, stepError(step.SliceIdentityApplied, err)
	}
	secret := kubeconfig.Secret(stored, data)
	if err := c.ports.Secrets.Write(ctx, secret); err != nil {
		return nil, stepError(step.KubeconfigWritten, err)
	}
	stored.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secret.Name}
	if stored, err = c.ports.Identities.Apply(ctx, stored); err != nil {
		return nil, stepError(step.IdentityStatus, err)
	}
	c.step(ctx, step.Done{Name: step.SliceIdentityApplied})
	return &Authenticated{Identity: stored, Secret: secret, Kubeconfig: cfg}, nil
}

// maxAPIServerLength bounds the API server URL a provider writes in a
// slice's status, which errors and Events quote.
const maxAPIServerLength = 2048

// truncated bounds a provider-written message quoted in an error.
func truncated(s string) string {
	if len(s) > 256 {
		return s[:256] + "…"
	}
	return s
}

// removeSliceIdentity deletes the Identity of slice name in namespace and
// its kubeconfig Secret.
func (c *Consumer) removeSliceIdentity(ctx context.Context, namespace, name string) error {
	id := identity.ResourceSliceName(name)
	if err := c.ports.Secrets.Delete(ctx, namespace, kubeconfig.SecretName(id)); err != nil {
		return err
	}
	return c.ports.Identities.Delete(ctx, namespace, id)
}

// ForgetSlice removes what the consumer holds for its slice name of
// providerID: the slice Identity, its kubeconfig Secret and its own key.
// The slice itself is not deleted. Forgetting an unknown slice succeeds.
func (c *Consumer) ForgetSlice(ctx context.Context, providerID, name string) error {
	if err := clusterid.Validate(providerID); err != nil {
		return stepError(step.SliceIdentityRemoved, err)
	}
	if err := c.removeSliceIdentity(ctx, clusterid.TenantNamespace(providerID), name); err != nil {
		return stepError(step.SliceIdentityRemoved, err)
	}
	if c.ports.IdentityKeys != nil {
		if err := c.ports.IdentityKeys.Delete(ctx, identity.ResourceSliceKeyName(providerID, name)); err != nil {
			return stepError(step.SliceIdentityRemoved, err)
		}
	}
	c.step(ctx, step.Done{Name: step.SliceIdentityRemoved})
	return nil
}

// Forgotten lists what ForgetForce removed, by name, all in the consumer's
// tenant namespace for the provider. Nothing on the provider was touched.
type Forgotten struct {
	ProviderID string
	Slices     []string
	Identities []string
	Secrets    []string
	Keys       []string
}

// String says what was removed and that the provider was not contacted.
func (f *Forgotten) String() string {
	if f == nil {
		return "kubepact.Forgotten(<nil>)"
	}
	return fmt.Sprintf("removed local objects only (the provider %s was NOT contacted: its Tenant, bindings and issued certificates remain there): slices %q, identities %q, secrets %q, keys %q",
		f.ProviderID, f.Slices, f.Identities, f.Secrets, f.Keys)
}

// ForgetForce is Forget for a provider gone for good: it removes, on the
// consumer only, every ResourceSlice for providerID (with kubepact's
// finalizers, so nothing waits for the provider), every slice Identity and
// its kubeconfig Secret and key, then what Forget removes. It never
// contacts the provider: what the provider holds (the Tenant, bindings,
// certificates it issued, valid until they expire) stays there. It
// returns, and logs at level 0 to the logger in ctx, what it removed. It
// needs Ports.Slices.
func (c *Consumer) ForgetForce(ctx context.Context, providerID string) (*Forgotten, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	if c.ports.Slices == nil {
		return nil, stepError(step.ForgetForced, fmt.Errorf("%w: ForgetForce needs the Slices port", peer.ErrInvalidConfig))
	}
	namespace := clusterid.TenantNamespace(providerID)
	f := &Forgotten{ProviderID: providerID}
	held, err := c.ports.Slices.List(ctx, namespace)
	if err != nil {
		return f, stepError(step.ForgetForced, err)
	}
	for _, s := range held {
		if err := c.ports.Slices.Delete(ctx, namespace, s.Name); err != nil {
			return f, stepError(step.ForgetForced, err)
		}
		f.Slices = append(f.Slices, s.Name)
	}
	ids, err := c.ports.Identities.List(ctx, namespace)
	if err != nil {
		return f, stepError(step.ForgetForced, err)
	}
	for _, id := range ids {
		if id.Spec.Type != authv1beta1.ResourceSliceIdentityType {
			continue
		}
		if err := c.ports.Secrets.Delete(ctx, namespace, kubeconfig.SecretName(id.Name)); err != nil {
			return f, stepError(step.ForgetForced, err)
		}
		if err := c.ports.Identities.Delete(ctx, namespace, id.Name); err != nil {
			return f, stepError(step.ForgetForced, err)
		}
		f.Identities = append(f.Identities, id.Name)
		f.Secrets = append(f.Secrets, kubeconfig.SecretName(id.Name))
		if c.ports.IdentityKeys != nil {
			key := identity.ResourceSliceKeyName(providerID, strings.TrimPrefix(id.Name, identity.ResourceSliceName("")))
			if err := c.ports.IdentityKeys.Delete(ctx, key); err != nil {
				return f, stepError(step.ForgetForced, err)
			}
			f.Keys = append(f.Keys, key)
		}
	}
	for _, s := range held {
		// Keys of slices that never got an Identity.
		key := identity.ResourceSliceKeyName(providerID, s.Name)
		if c.ports.IdentityKeys != nil && !slices.Contains(f.Keys, key) {
			if err := c.ports.IdentityKeys.Delete(ctx, key); err != nil {
				return f, stepError(step.ForgetForced, err)
			}
			f.Keys = append(f.Keys, key)
		}
	}
	if err := c.Forget(ctx, providerID); err != nil {
		return f, err
	}
	cp := identity.ControlPlaneName(providerID)
	f.Identities = append(f.Identities, cp)
	f.Secrets = append(f.Secrets, kubeconfig.SecretName(cp), nonce.SignedSecretName)
	if c.ports.IdentityKeys != nil {
		f.Keys = append(f.Keys, cp)
	}
	logr.FromContextOrDiscard(ctx).Info(f.String(), "cluster", c.id, "provider", providerID)
	c.step(ctx, step.Done{Name: step.ForgetForced})
	return f, nil
}

// slicesInUse wraps ErrInUse when ResourceSlices exist in namespace
// (with Ports.Slices).
func (c *Consumer) slicesInUse(ctx context.Context, namespace string) error {
	if c.ports.Slices == nil {
		return nil
	}
	held, err := c.ports.Slices.List(ctx, namespace)
	if err != nil {
		return err
	}
	if len(held) > 0 {
		return fmt.Errorf("%w: ResourceSlice %s/%s still exists", ErrInUse, namespace, held[0].Name)
	}
	return nil
}

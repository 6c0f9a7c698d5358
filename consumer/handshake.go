package consumer

import (
	"bytes"
	"cmp"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/async"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

// TenantOptions tunes Consumer.Tenant. The zero value, like a nil pointer,
// sends no proxy URL and asks a certificate for the cluster key, unless
// the consumer is Strict.
type TenantOptions struct {
	// ProxyURL is the http(s) proxy the consumer uses to reach the provider.
	ProxyURL string
	// OwnKey asks the certificate for a TLS key of the identity's own, as a
	// Strict consumer always does, so that the cluster key only signs
	// handshakes and never lands in a kubeconfig. Only a kubepact provider
	// accepts such a Tenant (the transcript binds the key to the cluster
	// key; a Liqo provider requires the CSR to be for the cluster key): set
	// it only for a provider known to be kubepact. It needs
	// Ports.IdentityKeys (peer.ErrInvalidConfig otherwise). kubepact.Authenticate
	// always sets it: its provider is kubepact's. Without it the CSR is for
	// the cluster key, whatever keys the consumer holds: a key of its own is
	// used only when asked for.
	OwnKey bool
}

// Tenant ensures the consumer's tenant namespace for providerID and its
// cluster key, records the signed nonce in the Secret "liqo-signed-nonce"
// as Liqo consumers do, and returns the Tenant answering the provider's
// nonce n.
func (c *Consumer) Tenant(ctx context.Context, providerID string, n nonce.Nonce, opts *TenantOptions) (*authv1beta1.Tenant, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	if n.IsZero() {
		return nil, stepError(step.NonceRetrieved, fmt.Errorf("%w: zero nonce", nonce.ErrMalformed))
	}
	// The Tenant is built, from the keys of their own namespace, while
	// the tenant namespace is ensured.
	namespaced := c.ensureNamespace(ctx, providerID)
	t, err := c.buildTenant(ctx, providerID, n, opts)
	if err := namespaced(); err != nil {
		return nil, err
	}
	if err != nil {
		return nil, err
	}
	if err := c.recordSignedNonce(ctx, providerID, n, t); err != nil {
		return nil, err
	}
	c.step(ctx, step.Done{Name: step.NonceSigned})
	c.step(ctx, step.Done{Name: step.TenantGenerated})
	return t, nil
}

// ensureNamespace starts ensuring the tenant namespace for providerID and
// returns the function that waits for it: it reports step.ConsumerNamespace
// and step.NonceRetrieved, or returns the *step.Error of the first.
func (c *Consumer) ensureNamespace(ctx context.Context, providerID string) func() error {
	wait := async.StartErr(func() error { return c.ports.Namespaces.Ensure(ctx, tenant.Namespace(providerID)) })
	return sync.OnceValue(func() error {
		if err := wait(); err != nil {
			return stepError(step.ConsumerNamespace, err)
		}
		c.step(ctx, step.Done{Name: step.ConsumerNamespace})
		c.step(ctx, step.Done{Name: step.NonceRetrieved})
		return nil
	})
}

// loadKey starts reading (or making) the cluster key, which the Consumer
// keeps once read, and returns the function that waits for it and returns
// the *step.Error buildTenant would.
func (c *Consumer) loadKey(ctx context.Context) func() error {
	return async.StartErr(func() error {
		if _, err := c.clusterKey(ctx, true); err != nil {
			return stepError(step.NonceSigned, err)
		}
		return nil
	})
}

// readHeld starts reading the ControlPlane Identity held for providerID
// and returns the function that waits for it (see heldIdentity).
func (c *Consumer) readHeld(ctx context.Context, providerID string) func() (*authv1beta1.Identity, error) {
	return async.Start(func() (*authv1beta1.Identity, error) { return c.controlPlaneHeld(ctx, providerID) })
}

// recordSignedNonce writes the Secret "liqo-signed-nonce" for providerID,
// holding n and t's signature, as Liqo consumers do.
func (c *Consumer) recordSignedNonce(ctx context.Context, providerID string, n nonce.Nonce, t *authv1beta1.Tenant) error {
	if err := c.ports.Secrets.Write(ctx, nonce.SignedSecret(providerID, n, t.Spec.Signature)); err != nil {
		return stepError(step.NonceSigned, err)
	}
	return nil
}

// BuildTenant returns the Tenant answering the nonce n of provider
// providerID, as Tenant does, but writes nothing besides the keys it needs:
// it ensures the cluster key and, for a Strict consumer, the identity key of
// providerID's ControlPlane identity, neither the tenant namespace nor the
// signed-nonce Secret. A consumer's controller calls it to hand the Tenant
// to a tool that may not read the keys (contract.TenantKey).
//
// The Tenant carries only what a provider may see: the cluster's public key,
// the signature over n, the CSR and the transcript, which binds it to
// providerID and expires after Options.TranscriptLifetime. Errors
// are *step.Error values, as Tenant's.
func (c *Consumer) BuildTenant(ctx context.Context, providerID string, n nonce.Nonce, opts *TenantOptions) (*authv1beta1.Tenant, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	if n.IsZero() {
		return nil, stepError(step.NonceRetrieved, fmt.Errorf("%w: zero nonce", nonce.ErrMalformed))
	}
	return c.buildTenant(ctx, providerID, n, opts)
}

func (c *Consumer) buildTenant(ctx context.Context, providerID string, n nonce.Nonce, opts *TenantOptions) (*authv1beta1.Tenant, error) {
	key, err := c.clusterKey(ctx, true)
	if err != nil {
		return nil, stepError(step.NonceSigned, err)
	}
	build := &tenant.BuildOptions{
		Rand:       c.opts.Rand,
		ProviderID: providerID,
		Expiry:     c.opts.Clock.Now().Add(c.opts.TranscriptLifetime),
	}
	// Asked for, never inferred from what the key namespace holds.
	ownKey := c.opts.Strict
	if opts != nil {
		build.ProxyURL = opts.ProxyURL
		ownKey = ownKey || opts.OwnKey
	}
	if ownKey && c.ports.IdentityKeys == nil {
		return nil, stepError(step.TenantGenerated, fmt.Errorf("%w: TenantOptions.OwnKey needs IdentityKeys", peer.ErrInvalidConfig))
	}
	if ownKey {
		// Stored before the CSR is built: a retry after a crash re-uses it.
		build.IdentityKey, err = c.controlPlaneCSRKey(ctx, providerID)
		if err != nil {
			return nil, stepError(step.TenantGenerated, err)
		}
	}
	t, err := tenant.Build(c.id, key, n, build)
	if err != nil {
		return nil, stepError(step.TenantGenerated, err)
	}
	return t, nil
}

// Authenticated is the outcome of a completed handshake on the consumer.
type Authenticated struct {
	// Identity is the stored Identity, its status pointing at the Secret.
	Identity *authv1beta1.Identity
	// Secret is the stored kubeconfig Secret. Its data is secret.
	Secret *corev1.Secret
	// Kubeconfig is the kubeconfig held in Secret.
	Kubeconfig *kubeconfig.Config
}

// ErrEndpointChanged reports an Identity that would change the API server
// or the CA of the kubeconfig the consumer already holds for its provider,
// without ApplyOptions.ReplaceEndpoint.
var ErrEndpointChanged = errors.New("identity changes the endpoint of the kubeconfig already held")

// ApplyOptions tunes Consumer.Apply. The zero value, like a nil pointer,
// refuses an Identity that changes the endpoint of one already held and
// checks no certificate chain offline.
type ApplyOptions struct {
	// ClientCAs, when set, are the client CAs of the provider's API server
	// (its --client-ca-file), known by other means than the Identity: the
	// certificate must chain to one of them (identity.ErrUntrusted). The
	// Identity's own CA is the provider's serving CA, never taken for a
	// client CA.
	ClientCAs *x509.CertPool
	// ReplaceEndpoint allows the Identity to change the API server URL or
	// the CA of the kubeconfig already held for its provider. Without it,
	// such an Identity is refused with ErrEndpointChanged and nothing is
	// written; an Identity that keeps both (a renewed certificate) is
	// always applied.
	ReplaceEndpoint bool
}

// Apply checks the Identity id that provider providerID returned, stores it
// in the tenant namespace that Tenant ensured, writes its kubeconfig Secret
// and points the Identity's status at the Secret.
//
// providerID is the provider the caller means to trust, not one read from
// id: an Identity for another provider is refused with
// identity.ErrWrongProvider. The Identity must name an https API server
// (identity.ErrInvalidServer) and carry a valid client certificate for the
// consumer's own key and cluster ID, chaining to opts.ClientCAs when set
// (identity.Verify). Its CA may be empty: the kubeconfig then trusts the
// system roots. When the consumer already holds an Identity for providerID
// with another API server or CA, Apply refuses with ErrEndpointChanged
// unless opts.ReplaceEndpoint is set. With Ports.Reviewer, Apply
// then asks the provider who the new kubeconfig authenticates as, and
// refuses with identity.ErrRejected when the provider refuses it and
// identity.ErrWrongUser when it takes it for another user than the
// consumer's ControlPlane user (identity.Confirm).
//
// Only what the protocol defines is stored: the name, the tenant namespace,
// the label "liqo.io/remote-cluster-id" and the spec. Owner references,
// finalizers, annotations, other labels and server-set fields of id are
// dropped, so a peer cannot attach the Identity, and with it the kubeconfig
// Secret, to an object of its choosing.
//
// An Identity that fails the checks changes nothing. Applying the same
// Identity again writes nothing new.
func (c *Consumer) Apply(ctx context.Context, providerID string, id *authv1beta1.Identity, opts *ApplyOptions) (*Authenticated, error) {
	return c.apply(ctx, providerID, id, opts, func() (*authv1beta1.Identity, error) { return c.controlPlaneHeld(ctx, providerID) })
}

// verifiedKubeconfig verifies id, an Identity from providerID, against
// the key it is for (identity.Verify, with opts' client CAs), and returns
// the kubeconfig it makes, and that kubeconfig's bytes.
func (c *Consumer) verifiedKubeconfig(ctx context.Context, providerID string, id *authv1beta1.Identity, opts *ApplyOptions) (*kubeconfig.Config, []byte, error) {
	if id == nil {
		return nil, nil, fmt.Errorf("%w: no identity", identity.ErrMalformed)
	}
	if err := identity.CheckProvider(id, providerID); err != nil {
		return nil, nil, err
	}
	key, err := c.tlsKey(ctx, providerID, id)
	if err != nil {
		return nil, nil, err
	}
	var verify *identity.VerifyOptions
	if opts != nil && opts.ClientCAs != nil {
		verify = &identity.VerifyOptions{ClientCAs: opts.ClientCAs}
	}
	if _, err := identity.Verify(id, c.id, key.Public(), c.opts.Clock.Now(), verify); err != nil {
		return nil, nil, err
	}
	cfg, err := kubeconfig.FromIdentity(id, key)
	if err != nil {
		return nil, nil, err
	}
	data, err := cfg.Marshal()
	if err != nil {
		return nil, nil, err
	}
	return cfg, data, nil
}

// storeIdentity stores want, whose credentials are cfg, over current, the
// Identity held (nil when none), and returns it as stored. With a
// Reviewer, the provider confirms cfg first (identity.Confirm): credentials
// the provider refuses must not replace working ones. When the Identity
// held asks for these very credentials (a consumer's controller answering
// it, or a re-run), applying it again replaces nothing, so it goes while
// the provider is asked.
func (c *Consumer) storeIdentity(ctx context.Context, current, want *authv1beta1.Identity, cfg *kubeconfig.Config) (*authv1beta1.Identity, error) {
	if c.ports.Reviewer == nil {
		return c.ports.Identities.Apply(ctx, want)
	}
	if current != nil && equality.Semantic.DeepEqual(current.Spec, want.Spec) {
		applied := async.Start(func() (*authv1beta1.Identity, error) { return c.ports.Identities.Apply(ctx, want) })
		confirmErr := identity.Confirm(ctx, c.ports.Reviewer, cfg, c.id)
		stored, applyErr := applied()
		if err := cmp.Or(confirmErr, applyErr); err != nil {
			return nil, err
		}
		return stored, nil
	}
	if err := identity.Confirm(ctx, c.ports.Reviewer, cfg, c.id); err != nil {
		return nil, err
	}
	return c.ports.Identities.Apply(ctx, want)
}

// apply is Apply, reading the ControlPlane Identity already held with held.
func (c *Consumer) apply(ctx context.Context, providerID string, id *authv1beta1.Identity, opts *ApplyOptions,
	held func() (*authv1beta1.Identity, error)) (*Authenticated, error) {
	cfg, data, err := c.verifiedKubeconfig(ctx, providerID, id, opts)
	if err != nil {
		return nil, stepError(step.IdentityApplied, err)
	}

	want := storedIdentity(providerID, id)
	current, err := held()
	if err != nil {
		return nil, stepError(step.IdentityApplied, err)
	}
	if current != nil {
		if opts == nil || !opts.ReplaceEndpoint {
			if err := sameEndpoint(current, want); err != nil {
				return nil, stepError(step.IdentityApplied, err)
			}
		}
		// Ours, not the peer's: lets a store go straight to an update.
		want.ResourceVersion = current.ResourceVersion
	}
	stored, err := c.storeIdentity(ctx, current, want, cfg)
	if err != nil {
		return nil, stepError(step.IdentityApplied, err)
	}
	c.step(ctx, step.Done{Name: step.IdentityApplied})

	secret := kubeconfig.Secret(stored, data)
	if err := c.ports.Secrets.Write(ctx, secret); err != nil {
		return nil, stepError(step.KubeconfigWritten, err)
	}
	c.step(ctx, step.Done{Name: step.KubeconfigWritten})

	stored.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: secret.Name}
	if s, ok := c.ports.Identities.(identity.StatusApplier); ok {
		stored, err = s.ApplyStatus(ctx, stored)
	} else {
		stored, err = c.ports.Identities.Apply(ctx, stored)
	}
	if err != nil {
		return nil, stepError(step.IdentityStatus, err)
	}
	c.step(ctx, step.Done{Name: step.IdentityStatus})
	return &Authenticated{Identity: stored, Secret: secret, Kubeconfig: cfg}, nil
}

// storedIdentity returns the Identity the consumer stores for id, built from
// scratch: name, tenant namespace, provider label and spec, nothing else of
// the peer's metadata. A zero status keeps the stored one, so a re-run
// writes nothing.
func storedIdentity(providerID string, id *authv1beta1.Identity) *authv1beta1.Identity {
	return &authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      identity.ControlPlaneName(providerID),
			Namespace: clusterid.TenantNamespace(providerID),
			Labels:    map[string]string{clusterid.Label: providerID},
		},
		Spec: *id.Spec.DeepCopy(),
	}
}

// controlPlaneHeld returns the ControlPlane Identity the consumer already
// stores for providerID, or nil when there is none.
func (c *Consumer) controlPlaneHeld(ctx context.Context, providerID string) (*authv1beta1.Identity, error) {
	return c.heldIdentity(ctx, clusterid.TenantNamespace(providerID), identity.ControlPlaneName(providerID))
}

// heldIdentity returns the Identity namespace/name the consumer already
// stores, or nil when there is none.
func (c *Consumer) heldIdentity(ctx context.Context, namespace, name string) (*authv1beta1.Identity, error) {
	if g, ok := c.ports.Identities.(identity.Getter); ok {
		id, err := g.Get(ctx, namespace, name)
		if errors.Is(err, identity.ErrNotFound) {
			return nil, nil
		}
		return id, err
	}
	ids, err := c.ports.Identities.List(ctx, namespace)
	if err != nil {
		return nil, err
	}
	for i := range ids {
		if ids[i].Name == name {
			return &ids[i], nil
		}
	}
	return nil, nil
}

// sameEndpoint reports, wrapping ErrEndpointChanged, a new Identity whose API
// server or CA differs from the one held: the kubeconfig Secret holds them.
func sameEndpoint(held, next *authv1beta1.Identity) error {
	was, now := held.Spec.AuthParams, next.Spec.AuthParams
	if was.APIServer != now.APIServer {
		return fmt.Errorf("%w: identity %s/%s: API server %s, held %s", ErrEndpointChanged,
			held.Namespace, held.Name, redactedURL(now.APIServer), redactedURL(was.APIServer))
	}
	if !bytes.Equal(was.CA, now.CA) {
		return fmt.Errorf("%w: identity %s/%s: the CA of API server %s differs from the one held", ErrEndpointChanged,
			held.Namespace, held.Name, redactedURL(was.APIServer))
	}
	return nil
}

// redactedURL quotes s without user information, or says it does not parse.
func redactedURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "(unparsable URL)"
	case u.Opaque != "":
		// Redacted keeps an opaque URL ("user:password@host") whole.
		return "(URL without a host)"
	}
	return strconv.Quote(u.Redacted())
}

// Forget removes the consumer's ControlPlane Identity for providerID, its
// kubeconfig and signed-nonce Secrets and, when it has one, its own TLS key. It refuses, with
// an error wrapping ErrInUse, while ResourceSlice Identities for that
// provider exist, or (with Ports.Slices) ResourceSlices; ForgetForce
// removes those too. Forgetting an unknown provider succeeds.
func (c *Consumer) Forget(ctx context.Context, providerID string) error {
	if err := clusterid.Validate(providerID); err != nil {
		return err
	}
	namespace := clusterid.TenantNamespace(providerID)
	ids, err := c.ports.Identities.List(ctx, namespace)
	if err != nil {
		return stepError(step.ForgetIdentity, err)
	}
	for _, id := range ids {
		if id.Spec.Type == authv1beta1.ResourceSliceIdentityType {
			return stepError(step.ForgetIdentity, fmt.Errorf("%w: ResourceSlice identity %s/%s still exists", ErrInUse, namespace, id.Name))
		}
	}
	if err := c.slicesInUse(ctx, namespace); err != nil {
		return stepError(step.ForgetIdentity, err)
	}
	name := identity.ControlPlaneName(providerID)
	for _, secret := range []string{kubeconfig.SecretName(name), nonce.SignedSecretName} {
		if err := c.ports.Secrets.Delete(ctx, namespace, secret); err != nil {
			return stepError(step.ForgetIdentity, err)
		}
	}
	if err := c.ports.Identities.Delete(ctx, namespace, name); err != nil {
		return stepError(step.ForgetIdentity, err)
	}
	if c.ports.IdentityKeys != nil {
		for _, key := range []string{name, renewal.NextKeyName(name)} {
			if err := c.ports.IdentityKeys.Delete(ctx, key); err != nil {
				return stepError(step.ForgetIdentity, err)
			}
		}
	}
	c.step(ctx, step.Done{Name: step.ForgetIdentity})
	return nil
}

// String names the Identity and the Secret, never their credentials.
func (a *Authenticated) String() string {
	if a == nil || a.Identity == nil {
		return "kubepact.Authenticated(<nil>)"
	}
	secret := ""
	if a.Secret != nil {
		secret = a.Secret.Namespace + "/" + a.Secret.Name
	}
	return fmt.Sprintf("kubepact.Authenticated(identity=%s/%s secret=%s %v)", a.Identity.Namespace, a.Identity.Name, secret, a.Kubeconfig)
}

// GoString is String.
func (a *Authenticated) GoString() string { return a.String() }

// Format makes every fmt verb print String: the Secret's data is a kubeconfig.
func (a *Authenticated) Format(f fmt.State, _ rune) { io.WriteString(f, a.String()) }

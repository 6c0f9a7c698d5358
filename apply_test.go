package kubepact_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/memory"
)

// consumerState is everything a consumer cluster holds.
type consumerState struct {
	identities   []*authv1beta1.Identity
	secrets      []*corev1.Secret
	writes       int
	clusterKey   string
	identityKeys int
}

func stateOf(t *testing.T, c *memory.Cluster) consumerState {
	t.Helper()
	s := consumerState{
		identities:   c.Identities.Objects(""),
		secrets:      c.Secrets.Objects(""),
		writes:       c.Namespaces.Writes() + c.Identities.Writes() + c.Secrets.Writes(),
		identityKeys: c.IdentityKeys.Len(),
	}
	if k, err := c.Keys.Get(context.Background()); err == nil {
		s.clusterKey = keys.Fingerprint(k.Public())
	}
	return s
}

// heldKubeconfig returns the kubeconfig the consumer holds for the provider.
func heldKubeconfig(t *testing.T, p *pair) *kubeconfig.Config {
	t.Helper()
	sec, ok := p.consumerCluster.Secrets.Get(clusterid.TenantNamespace(providerID), kubeconfig.SecretName(identity.ControlPlaneName(providerID)))
	require.True(t, ok)
	cfg, err := kubeconfig.Parse(sec.Data[kubeconfig.SecretKey])
	require.NoError(t, err)
	return cfg
}

// withOtherCA returns the provider's CA bundle with another CA in front: the
// client certificate still chains, but the CA held changes.
func withOtherCA(t *testing.T, p *pair, ca []byte) []byte {
	t.Helper()
	other, err := memory.NewCluster("cl-other", &memory.ClusterOptions{Clock: p.clock})
	require.NoError(t, err)
	return append(other.Signer.CA.Certificate(), ca...)
}

// TestApplyRefusesAndChangesNothing presents Identities a consumer must not
// apply, both to a consumer that holds nothing yet and to one that holds a
// kubeconfig for the provider: each is refused with its typed error, and
// nothing is written, the held kubeconfig Secret included.
func TestApplyRefusesAndChangesNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// expect is the provider the caller expects; providerID when empty.
		expect string
		mutate func(t *testing.T, p *pair, id *authv1beta1.Identity)
		opts   *consumer.ApplyOptions
		want   error
		// heldOnly marks a refusal that needs a kubeconfig already held.
		heldOnly bool
	}{
		{name: "another provider expected", expect: "cl-other",
			mutate: func(*testing.T, *pair, *authv1beta1.Identity) {}, want: identity.ErrWrongProvider},
		{name: "spec names another provider", mutate: func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.ClusterID = "cl-evil"
		}, want: identity.ErrWrongProvider},
		{name: "Identity of another provider throughout", mutate: func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.ClusterID, id.Name, id.Namespace = "cl-evil", identity.ControlPlaneName("cl-evil"), clusterid.TenantNamespace("cl-evil")
			id.Labels[clusterid.Label] = "cl-evil"
		}, want: identity.ErrWrongProvider},
		{name: "http server", mutate: func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "http://provider.example:6443"
		}, want: identity.ErrInvalidServer},
		{name: "unix server", mutate: func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "unix:///var/run/kubernetes/apiserver.sock"
		}, want: identity.ErrInvalidServer},
		{name: "server without host", mutate: func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "https:///api"
		}, want: identity.ErrInvalidServer},
		{name: "server with port only", mutate: func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "https://:6443"
		}, want: identity.ErrInvalidServer},
		{name: "http server with ReplaceEndpoint", mutate: func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "http://provider.example:6443"
		}, opts: &consumer.ApplyOptions{ReplaceEndpoint: true}, want: identity.ErrInvalidServer},
		{name: "changed server", mutate: func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "https://attacker.example:6443"
		}, want: consumer.ErrEndpointChanged, heldOnly: true},
		{name: "changed CA", mutate: func(t *testing.T, p *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.CA = withOtherCA(t, p, id.Spec.AuthParams.CA)
		}, want: consumer.ErrEndpointChanged, heldOnly: true},
		{name: "changed server, explicit no", mutate: func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "https://provider.example:7443"
		}, opts: &consumer.ApplyOptions{}, want: consumer.ErrEndpointChanged, heldOnly: true},
	}
	for _, held := range []bool{false, true} {
		for _, tt := range tests {
			if tt.heldOnly && !held {
				continue
			}
			name := "nothing held/" + tt.name
			if held {
				name = "kubeconfig held/" + tt.name
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				p := newModePair(t, tenant.Compatible, false)
				if held {
					_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
					require.NoError(t, err)
				}
				id, err := p.provider.Accept(ctx, ourTenant(t, p))
				require.NoError(t, err)
				tt.mutate(t, p, id)
				expect := tt.expect
				if expect == "" {
					expect = providerID
				}
				before := stateOf(t, p.consumerCluster)

				_, err = p.consumer.Apply(ctx, expect, id, tt.opts)
				require.ErrorIs(t, err, tt.want)
				var se *step.Error
				require.ErrorAs(t, err, &se)
				require.Equal(t, step.IdentityApplied, se.Step)
				require.Equal(t, before, stateOf(t, p.consumerCluster), "a refused Identity changes nothing")
				if held {
					require.Equal(t, "https://provider.example:6443", heldKubeconfig(t, p).Server())
				} else {
					require.Empty(t, p.consumerCluster.Identities.Objects(""))
					require.Equal(t, []string{"liqo-signed-nonce"}, secretNames(p.consumerCluster))
				}
			})
		}
	}
}

func TestApplyReplacesEndpointWhenAsked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		mutate func(t *testing.T, p *pair, id *authv1beta1.Identity)
	}{
		{"server", func(_ *testing.T, _ *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "https://moved.example:6443"
		}},
		{"CA", func(t *testing.T, p *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.CA = withOtherCA(t, p, id.Spec.AuthParams.CA)
		}},
		{"server and CA", func(t *testing.T, p *pair, id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "https://moved.example:6443"
			id.Spec.AuthParams.CA = withOtherCA(t, p, id.Spec.AuthParams.CA)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newModePair(t, tenant.Compatible, false)
			servesMoved(t, p)
			first, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			id, err := p.provider.Accept(ctx, ourTenant(t, p))
			require.NoError(t, err)
			tt.mutate(t, p, id)

			done, err := p.consumer.Apply(ctx, providerID, id, &consumer.ApplyOptions{ReplaceEndpoint: true})
			require.NoError(t, err)
			require.Equal(t, first.Identity.UID, done.Identity.UID, "the Identity is updated in place")
			require.Equal(t, id.Spec, done.Identity.Spec)
			held := heldKubeconfig(t, p)
			require.Equal(t, id.Spec.AuthParams.APIServer, held.Server())
			require.Equal(t, id.Spec.AuthParams.CA, held.API().Clusters[held.API().CurrentContext].CertificateAuthorityData)
		})
	}
}

// servesMoved lets p's consumer reach the provider's API server at
// https://moved.example:6443 too.
func servesMoved(t *testing.T, p *pair) {
	t.Helper()
	require.NoError(t, p.consumerCluster.Reviewer.Serve("https://moved.example:6443", p.providerCluster.Signer.CA.Certificate()))
}

// TestApplyRenewsWithoutOptIn applies a new certificate for the same server
// and CA: a renewal needs no opt-in.
func TestApplyRenewsWithoutOptIn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, false)
	first, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	p.clock.Step(time.Hour)
	key, err := p.consumerCluster.Keys.Get(ctx)
	require.NoError(t, err)
	req, err := csr.Create(nil, key, csr.ControlPlaneSubject(consumerID))
	require.NoError(t, err)
	checked, err := csr.Check(req, csr.ControlPlanePolicy(consumerID, key.Public()))
	require.NoError(t, err)
	renewed := first.Identity.DeepCopy()
	renewed.Spec.AuthParams.SignedCRT, err = p.providerCluster.Signer.Sign(ctx, csr.Request{CSR: checked})
	require.NoError(t, err)
	require.NotEqual(t, first.Identity.Spec.AuthParams.SignedCRT, renewed.Spec.AuthParams.SignedCRT)

	done, err := p.consumer.Apply(ctx, providerID, renewed, nil)
	require.NoError(t, err)
	cert, err := heldKubeconfig(t, p).ClientCertificate()
	require.NoError(t, err)
	want, err := csr.ParseCertificate(renewed.Spec.AuthParams.SignedCRT)
	require.NoError(t, err)
	require.True(t, want.Equal(cert), "the kubeconfig holds the renewed certificate")
	require.Equal(t, renewed.Spec.AuthParams.SignedCRT, done.Identity.Spec.AuthParams.SignedCRT)
}

// TestAuthenticateRefusesMovedProvider runs the handshake again with a
// provider that now hands out another server: refused unless the caller
// says so.
func TestAuthenticateRefusesMovedProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, false)
	servesMoved(t, p)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	moved, err := provider.New(providerID, provider.Endpoint{Server: "https://moved.example:6443", CA: p.providerCluster.Endpoint().CA},
		p.providerCluster.ProviderPorts(), &provider.Options{Clock: p.clock})
	require.NoError(t, err)
	secret, _ := p.consumerCluster.Secrets.Get(clusterid.TenantNamespace(providerID), kubeconfig.SecretName(identity.ControlPlaneName(providerID)))
	held, _ := p.consumerCluster.Identities.Get(clusterid.TenantNamespace(providerID), identity.ControlPlaneName(providerID))

	_, err = kubepact.Authenticate(ctx, p.consumer, moved, nil)
	require.ErrorIs(t, err, consumer.ErrEndpointChanged)
	after, _ := p.consumerCluster.Secrets.Get(secret.Namespace, secret.Name)
	require.Equal(t, secret, after, "the held kubeconfig Secret is unchanged")
	heldAfter, _ := p.consumerCluster.Identities.Get(held.Namespace, held.Name)
	require.Equal(t, held, heldAfter)

	done, err := kubepact.Authenticate(ctx, p.consumer, moved, &kubepact.AuthenticateOptions{ReplaceEndpoint: true})
	require.NoError(t, err)
	require.Equal(t, "https://moved.example:6443", done.Kubeconfig.Server())
	require.Equal(t, "https://moved.example:6443", heldKubeconfig(t, p).Server())
}

// TestApplyStoresOnlyProtocolMetadata sends an Identity carrying metadata of
// the provider's choosing, among it an owner reference to a UID the consumer
// does not have, which would let the garbage collector delete the Identity
// and its kubeconfig Secret. The stored Identity keeps none of it.
func TestApplyStoresOnlyProtocolMetadata(t *testing.T) {
	t.Parallel()
	poison := func(id *authv1beta1.Identity) {
		controller := true
		id.Namespace = "kube-system"
		id.GenerateName = "evil-"
		id.UID = "peer-uid"
		id.ResourceVersion = "999"
		id.Generation = 7
		id.CreationTimestamp = metav1.NewTime(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
		id.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: "gone", UID: "00000000-0000-0000-0000-000000000000", Controller: &controller,
		}}
		id.Finalizers = []string{"evil.example/hold"}
		id.Labels = map[string]string{clusterid.Label: "cl-evil", "app.kubernetes.io/managed-by": "evil"}
		id.Annotations = map[string]string{"evil.example/note": "x", kubeconfig.RemoteTenantNamespaceAnnotation: "default"}
		id.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "evil", Operation: metav1.ManagedFieldsOperationApply}}
		id.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: "someone-elses-secret"}
	}
	for _, held := range []bool{false, true} {
		name := "first apply"
		if held {
			name = "over a held Identity"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newModePair(t, tenant.Compatible, false)
			if held {
				_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
				require.NoError(t, err)
			}
			id, err := p.provider.Accept(ctx, ourTenant(t, p))
			require.NoError(t, err)
			poison(id)

			done, err := p.consumer.Apply(ctx, providerID, id, nil)
			require.NoError(t, err)
			ids := p.consumerCluster.Identities.Objects("")
			require.Len(t, ids, 1)
			stored := ids[0]
			require.Equal(t, clusterid.TenantNamespace(providerID), stored.Namespace)
			require.Equal(t, identity.ControlPlaneName(providerID), stored.Name)
			require.Empty(t, stored.GenerateName)
			require.Equal(t, map[string]string{clusterid.Label: providerID}, stored.Labels)
			require.Empty(t, stored.Annotations)
			require.Empty(t, stored.Finalizers)
			require.Empty(t, stored.OwnerReferences)
			require.Empty(t, stored.ManagedFields)
			require.Zero(t, stored.Generation)
			require.True(t, stored.CreationTimestamp.IsZero())
			require.NotEqual(t, id.UID, stored.UID)
			require.NotEqual(t, id.ResourceVersion, stored.ResourceVersion)
			require.Equal(t, id.Spec, stored.Spec)
			require.Equal(t, "kubeconfig-controlplane-cl-provider", stored.Status.KubeconfigSecretRef.Name)
			require.Equal(t, stored, done.Identity)

			// The kubeconfig Secret is owned by the stored Identity only.
			sec, ok := p.consumerCluster.Secrets.Get(stored.Namespace, kubeconfig.SecretName(stored.Name))
			require.True(t, ok)
			require.Len(t, sec.OwnerReferences, 1)
			require.Equal(t, stored.UID, sec.OwnerReferences[0].UID)
			require.Empty(t, p.consumerCluster.Identities.Objects("kube-system"))
			require.Empty(t, p.consumerCluster.Secrets.Objects("kube-system"))
		})
	}
}

func TestApplyRefusesNilIdentity(t *testing.T) {
	t.Parallel()
	p := newModePair(t, tenant.Compatible, false)
	_, err := p.consumer.Apply(context.Background(), providerID, nil, nil)
	require.ErrorIs(t, err, identity.ErrMalformed)
}

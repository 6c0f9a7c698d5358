package kubepact_test

import (
	"context"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/tenant"
)

// k3sPair is a pair whose provider's API server trusts a second client CA,
// not its serving CA, for client certificates, as k3s and RKE2 do.
type k3sPair struct {
	*pair
	clientCA *csr.LocalCA
	// offline is a consumer of the same cluster without a Reviewer.
	offline *kubepact.Consumer
}

func newK3sPair(t *testing.T) *k3sPair {
	t.Helper()
	p := newModePair(t, tenant.Compatible, false)
	caPEM, caKey, err := csr.GenerateCA(nil, "provider-client-ca", p.clock.Now(), 10*365*24*time.Hour)
	require.NoError(t, err)
	clientCA, err := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: p.clock})
	require.NoError(t, err)
	bundle := append(p.providerCluster.Signer.CA.Certificate(), caPEM...)
	require.NoError(t, p.consumerCluster.Reviewer.Serve(p.providerCluster.Server, bundle))
	ports := p.consumerCluster.ConsumerPorts()
	ports.Reviewer = nil
	offline, err := consumer.New(consumerID, ports, &consumer.Options{Clock: p.clock})
	require.NoError(t, err)
	return &k3sPair{pair: p, clientCA: clientCA, offline: offline}
}

// identity returns an Identity the provider accepted for the consumer, its
// certificate re-issued by the client CA and its CA set to ca.
func (p *k3sPair) identity(t *testing.T, ca []byte) *authv1beta1.Identity {
	t.Helper()
	ctx := context.Background()
	tn := ourTenant(t, p.pair)
	id, err := p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	checked, err := csr.Check(tn.Spec.CSR, csr.ControlPlanePolicy(consumerID, mustIdentityKey(t, p.pair).Public()))
	require.NoError(t, err)
	id.Spec.AuthParams.SignedCRT, err = p.clientCA.Sign(ctx, csr.Request{CSR: checked})
	require.NoError(t, err)
	id.Spec.AuthParams.CA = ca
	return id
}

func (p *k3sPair) clientCAs(t *testing.T) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(p.clientCA.Certificate()))
	return pool
}

// TestApplyLiqoIdentities applies, offline and online, the Identities Liqo
// providers hand out whose certificate does not chain to
// spec.authParams.ca: signed by a client CA that is not the serving CA, or
// with an empty CA.
func TestApplyLiqoIdentities(t *testing.T) {
	t.Parallel()
	cas := map[string]func(p *k3sPair) []byte{
		"serving CA": func(p *k3sPair) []byte { return p.providerCluster.Signer.CA.Certificate() },
		"empty CA":   func(*k3sPair) []byte { return nil },
	}
	for name, ca := range cas {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for mode, apply := range map[string]func(p *k3sPair, id *authv1beta1.Identity) (*consumer.Authenticated, error){
				"offline": func(p *k3sPair, id *authv1beta1.Identity) (*consumer.Authenticated, error) {
					return p.offline.Apply(context.Background(), providerID, id, nil)
				},
				"offline with the client CA": func(p *k3sPair, id *authv1beta1.Identity) (*consumer.Authenticated, error) {
					return p.offline.Apply(context.Background(), providerID, id, &consumer.ApplyOptions{ClientCAs: p.clientCAs(t)})
				},
				"online": func(p *k3sPair, id *authv1beta1.Identity) (*consumer.Authenticated, error) {
					return p.consumer.Apply(context.Background(), providerID, id, nil)
				},
				"online with the client CA": func(p *k3sPair, id *authv1beta1.Identity) (*consumer.Authenticated, error) {
					return p.consumer.Apply(context.Background(), providerID, id, &consumer.ApplyOptions{ClientCAs: p.clientCAs(t)})
				},
			} {
				p := newK3sPair(t)
				id := p.identity(t, ca(p))
				reviews := p.consumerCluster.Reviewer.Reviews()
				done, err := apply(p, id)
				require.NoError(t, err, mode)
				require.Equal(t, id.Spec, done.Identity.Spec, mode)
				cfg := heldKubeconfig(t, p.pair)
				require.Equal(t, id.Spec.AuthParams.CA, cfg.API().Clusters[cfg.API().CurrentContext].CertificateAuthorityData, mode)
				if mode == "online" || mode == "online with the client CA" {
					require.Equal(t, reviews+1, p.consumerCluster.Reviewer.Reviews(), mode)
				} else {
					require.Equal(t, reviews, p.consumerCluster.Reviewer.Reviews(), "%s: an offline consumer asks no one", mode)
				}
			}
		})
	}
}

// rewrite is a Reviewer that asks next, then changes the answer.
type rewrite struct {
	next identity.Reviewer
	edit func(user string, groups []string) (string, []string)
}

func (r rewrite) Review(ctx context.Context, cfg *kubeconfig.Config) (string, []string, error) {
	user, groups, err := r.next.Review(ctx, cfg)
	if err != nil {
		return "", nil, err
	}
	user, groups = r.edit(user, groups)
	return user, groups, nil
}

// TestApplyRefusedOnline presents Identities that pass every offline check
// to a consumer whose provider refuses them, or takes them for another user
// or groups: each is refused with its typed error, and nothing is written,
// neither on a consumer holding nothing nor on one holding a kubeconfig.
func TestApplyRefusedOnline(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// untrusted serves the provider's API server without the second
		// client CA, which signs the Identity's certificate.
		untrusted bool
		edit      func(user string, groups []string) (string, []string)
		want      error
	}{
		{name: "signed by a CA the provider does not trust", untrusted: true, want: identity.ErrRejected},
		{name: "another user", edit: func(_ string, groups []string) (string, []string) { return "cl-other", groups }, want: identity.ErrWrongUser},
		{name: "without liqo.io", edit: func(user string, _ []string) (string, []string) {
			return user, []string{"system:authenticated"}
		}, want: identity.ErrWrongUser},
		{name: "anonymous", edit: func(string, []string) (string, []string) {
			return "system:anonymous", []string{"system:unauthenticated"}
		}, want: identity.ErrWrongUser},
	}
	for _, tt := range tests {
		for _, held := range []bool{false, true} {
			name := tt.name + ", nothing held, empty CA"
			if held {
				name = tt.name + ", a kubeconfig held"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				ctx := context.Background()
				p := newK3sPair(t)
				if held {
					_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
					require.NoError(t, err)
				}
				if tt.untrusted {
					require.NoError(t, p.consumerCluster.Reach(p.providerCluster)) // its client CA only
				}
				var r identity.Reviewer = p.consumerCluster.Reviewer
				if tt.edit != nil {
					r = rewrite{next: r, edit: tt.edit}
				}
				ports := p.consumerCluster.ConsumerPorts()
				ports.Reviewer = r
				c, err := consumer.New(consumerID, ports, &consumer.Options{Clock: p.clock})
				require.NoError(t, err)
				var ca []byte
				if held {
					ca = p.providerCluster.Signer.CA.Certificate() // the same endpoint
				}
				id := p.identity(t, ca)
				// Offline, it passes.
				_, err = identity.Verify(id, consumerID, mustIdentityKey(t, p.pair).Public(), p.clock.Now(), &identity.VerifyOptions{ClientCAs: p.clientCAs(t)})
				require.NoError(t, err)

				namespace := clusterid.TenantNamespace(providerID)
				secretName := kubeconfig.SecretName(identity.ControlPlaneName(providerID))
				secretBefore, hadSecret := p.consumerCluster.Secrets.Get(namespace, secretName)
				idBefore, hadID := p.consumerCluster.Identities.Get(namespace, identity.ControlPlaneName(providerID))
				writes := p.consumerCluster.Identities.Writes() + p.consumerCluster.Secrets.Writes()

				_, err = c.Apply(ctx, providerID, id, &consumer.ApplyOptions{ClientCAs: p.clientCAs(t)})
				require.ErrorIs(t, err, tt.want)
				require.Equal(t, writes, p.consumerCluster.Identities.Writes()+p.consumerCluster.Secrets.Writes(), "a refused Identity writes nothing")
				require.Equal(t, held, hadSecret)
				require.Equal(t, held, hadID)
				secretAfter, hasSecret := p.consumerCluster.Secrets.Get(namespace, secretName)
				idAfter, hasID := p.consumerCluster.Identities.Get(namespace, identity.ControlPlaneName(providerID))
				require.Equal(t, hadSecret, hasSecret)
				require.Equal(t, hadID, hasID)
				require.Equal(t, secretBefore, secretAfter)
				require.Equal(t, idBefore, idAfter)
			})
		}
	}
}

// TestApplyUnreachableProvider refuses an Identity whose provider cannot be
// reached by an online consumer, and writes nothing.
func TestApplyUnreachableProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newK3sPair(t)
	id := p.identity(t, nil)
	id.Spec.AuthParams.APIServer = "https://elsewhere.example:6443"
	before := p.consumerCluster.Identities.Writes() + p.consumerCluster.Secrets.Writes()
	_, err := p.consumer.Apply(ctx, providerID, id, nil)
	require.ErrorIs(t, err, fake.ErrUnreachable)
	require.NotErrorIs(t, err, identity.ErrRejected)
	require.Equal(t, before, p.consumerCluster.Identities.Writes()+p.consumerCluster.Secrets.Writes())
	_, ok := p.consumerCluster.Identities.Get(clusterid.TenantNamespace(providerID), identity.ControlPlaneName(providerID))
	require.False(t, ok)
}

// mustClusterKey returns the consumer's cluster key.
func mustClusterKey(t *testing.T, p *pair) *keys.PrivateKey {
	t.Helper()
	key, err := p.consumerCluster.Keys.Get(context.Background())
	require.NoError(t, err)
	return key
}

// mustIdentityKey returns the TLS key of the consumer's ControlPlane
// identity: its own key where it holds one (Authenticate gives it one), else
// the cluster key.
func mustIdentityKey(t *testing.T, p *pair) *keys.PrivateKey {
	t.Helper()
	key, err := p.consumerCluster.IdentityKeys.Get(context.Background(), identity.ControlPlaneName(providerID))
	if errors.Is(err, keys.ErrNotFound) {
		return mustClusterKey(t, p)
	}
	require.NoError(t, err)
	return key.Key
}

// TestApplyWrongClientCA refuses, offline, an Identity whose certificate
// does not chain to the client CA the caller supplies.
func TestApplyWrongClientCA(t *testing.T) {
	t.Parallel()
	p := newK3sPair(t)
	id := p.identity(t, p.providerCluster.Signer.CA.Certificate())
	serving := x509.NewCertPool()
	require.True(t, serving.AppendCertsFromPEM(p.providerCluster.Signer.CA.Certificate()))
	before := p.consumerCluster.Identities.Writes() + p.consumerCluster.Secrets.Writes()
	_, err := p.offline.Apply(context.Background(), providerID, id, &consumer.ApplyOptions{ClientCAs: serving})
	require.ErrorIs(t, err, identity.ErrUntrusted)
	require.Equal(t, before, p.consumerCluster.Identities.Writes()+p.consumerCluster.Secrets.Writes())
}

// An Identity the consumer already holds, applied again (as its controller
// does) and refused now by the provider, leaves the kubeconfig Secret and
// the Identity as they were: the Identity may be re-applied while the
// provider is asked, since it asks for the credentials already held, but
// the kubeconfig waits for the answer.
func TestApplyHeldIdentityRefusedOnline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newK3sPair(t)
	a, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)

	ports := p.consumerCluster.ConsumerPorts()
	ports.Reviewer = rewrite{next: p.consumerCluster.Reviewer, edit: func(_ string, groups []string) (string, []string) { return "cl-other", groups }}
	c, err := consumer.New(consumerID, ports, &consumer.Options{Clock: p.clock})
	require.NoError(t, err)
	namespace := clusterid.TenantNamespace(providerID)
	secretName := kubeconfig.SecretName(identity.ControlPlaneName(providerID))
	secretBefore, _ := p.consumerCluster.Secrets.Get(namespace, secretName)
	secretWrites := p.consumerCluster.Secrets.Writes()

	_, err = c.Apply(ctx, providerID, a.Identity.DeepCopy(), nil)
	require.ErrorIs(t, err, identity.ErrWrongUser)
	require.Equal(t, secretWrites, p.consumerCluster.Secrets.Writes(), "no kubeconfig written")
	secretAfter, _ := p.consumerCluster.Secrets.Get(namespace, secretName)
	require.Equal(t, secretBefore, secretAfter)
	idAfter, ok := p.consumerCluster.Identities.Get(namespace, identity.ControlPlaneName(providerID))
	require.True(t, ok)
	require.Equal(t, a.Identity.Spec, idAfter.Spec)
	require.Equal(t, a.Identity.Status, idAfter.Status)
}

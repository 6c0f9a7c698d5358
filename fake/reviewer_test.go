package fake_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/identity/identitytest"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/wire/memory"
)

func TestReviewerConformance(t *testing.T) {
	t.Parallel()
	const server = "https://provider.invalid:6443"
	caPEM, caKey, err := csr.GenerateCA(nil, "client-ca", time.Now().Add(-time.Hour), 24*time.Hour)
	require.NoError(t, err)
	r := &fake.Reviewer{}
	require.NoError(t, r.Serve(server, caPEM))
	identitytest.RunReviewer(t, identitytest.ReviewerHarness{
		New:         func(*testing.T) identity.Reviewer { return r },
		Server:      server,
		ClientCA:    caPEM,
		ClientCAKey: caKey,
		Parallel:    true,
	})
}

// TestReviewerPlaysProviders checks what a Cluster's Reviewer answers once
// the cluster reaches a provider: the provider's signer is trusted, other
// servers are unreachable, and a kubeconfig whose key is not the
// certificate's is refused as a TLS handshake would be.
func TestReviewerPlaysProviders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	pc, err := memory.NewCluster("cl-provider", &memory.ClusterOptions{Clock: clk})
	require.NoError(t, err)
	cc, err := memory.NewCluster("cl-consumer", &memory.ClusterOptions{Clock: clk})
	require.NoError(t, err)
	require.Nil(t, cc.ConsumerPorts().Reviewer, "offline until it reaches a provider")
	require.NoError(t, cc.Reach(pc))
	require.NotNil(t, cc.ConsumerPorts().Reviewer)

	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	other, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	req, err := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))
	require.NoError(t, err)
	checked, err := csr.Check(req, csr.ControlPlanePolicy("cl-consumer", key.Public()))
	require.NoError(t, err)
	cert, err := pc.Signer.Sign(ctx, csr.Request{CSR: checked, Lifetime: time.Hour})
	require.NoError(t, err)
	build := func(server string, k *keys.PrivateKey) *kubeconfig.Config {
		cfg, err := kubeconfig.Build(kubeconfig.Params{Name: "p", Server: server, Certificate: cert, Key: k})
		require.NoError(t, err)
		return cfg
	}

	user, groups, err := cc.Reviewer.Review(ctx, build(pc.Server, key))
	require.NoError(t, err)
	require.Equal(t, "cl-consumer", user)
	require.Equal(t, []string{"liqo.io", "system:authenticated"}, groups)

	_, _, err = cc.Reviewer.Review(ctx, build(pc.Server, other))
	require.ErrorIs(t, err, identity.ErrRejected)
	_, _, err = cc.Reviewer.Review(ctx, build("https://elsewhere.invalid", key))
	require.ErrorIs(t, err, fake.ErrUnreachable)
	clk.Step(2 * time.Hour)
	_, _, err = cc.Reviewer.Review(ctx, build(pc.Server, key))
	require.ErrorIs(t, err, identity.ErrRejected, "expired")
	require.Equal(t, 3, cc.Reviewer.Reviews())
	require.Error(t, (&fake.Reviewer{}).Serve(pc.Server, []byte("not PEM")))
}

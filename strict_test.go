package kubepact_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/memory"
)

// newModePair returns a provider with policy and a consumer, strict or not,
// over in-memory clusters sharing one fake clock.
func newModePair(t *testing.T, policy tenant.Policy, strictConsumer bool) *pair {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	pc, err := memory.NewCluster(providerID, &memory.ClusterOptions{Clock: clk, Server: "https://provider.example:6443"})
	require.NoError(t, err)
	cc, err := memory.NewCluster(consumerID, &memory.ClusterOptions{Clock: clk})
	require.NoError(t, err)
	require.NoError(t, cc.Reach(pc)) // the consumer confirms Identities online
	p := &pair{clock: clk, providerCluster: pc, consumerCluster: cc}
	p.provider, err = provider.New(providerID, pc.Endpoint(), pc.ProviderPorts(), &provider.Options{Clock: clk, Policy: policy, SliceNamespaces: offloaded})
	require.NoError(t, err)
	p.consumer, err = consumer.New(consumerID, cc.ConsumerPorts(), &consumer.Options{
		Clock: clk, Strict: strictConsumer, TranscriptLifetime: 2 * time.Minute,
	})
	require.NoError(t, err)
	return p
}

func TestModesEndToEnd(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		policy tenant.Policy
		strict bool
	}{
		{"compatible provider, compatible consumer", tenant.Compatible, false},
		{"strict provider, compatible consumer", tenant.Strict, false},
		{"compatible provider, strict consumer", tenant.Compatible, true},
		{"strict provider, strict consumer", tenant.Strict, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newModePair(t, tt.policy, tt.strict)
			done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)

			clusterKey, err := p.consumerCluster.Keys.Get(ctx)
			require.NoError(t, err)
			cert, err := done.Kubeconfig.ClientCertificate()
			require.NoError(t, err)
			clusterKeyPEM, err := keys.MarshalPrivateKey(clusterKey)
			require.NoError(t, err)
			secretData := done.Secret.Data[kubeconfig.SecretKey]
			// The TLS key is the identity's own, strict or not: the provider
			// is kubepact's (Authenticate); the cluster key never lands in the
			// kubeconfig Secret.
			idKey, err := p.consumerCluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(providerID))
			require.NoError(t, err)
			require.True(t, keys.Equal(idKey.Key.Public(), cert.PublicKey))
			require.False(t, keys.Equal(clusterKey.Public(), cert.PublicKey))
			require.False(t, bytes.Contains(secretData, clusterKeyPEM), "the cluster key must not be in the kubeconfig")
			require.False(t, bytes.Contains(secretData, []byte(b64(clusterKeyPEM))), "the cluster key must not be in the kubeconfig")

			require.NoError(t, kubepact.Unauthenticate(ctx, p.consumer, p.provider))
			require.Zero(t, p.consumerCluster.IdentityKeys.Len(), "forgetting an identity removes its key")
		})
	}
}

// liqoTenant builds a Tenant as a Liqo consumer does: no transcript.
func liqoTenant(t *testing.T, p *pair) *authv1beta1.Tenant {
	t.Helper()
	ctx := context.Background()
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	key, err := keys.Ensure(ctx, p.consumerCluster.Keys, nil, keys.Ed25519)
	require.NoError(t, err)
	tn, err := tenant.Build(consumerID, key, n, nil)
	require.NoError(t, err)
	return tn
}

func TestCompatibleProviderAcceptsLiqoTenant(t *testing.T) {
	t.Parallel()
	p := newModePair(t, tenant.Compatible, false)
	id, err := p.provider.Accept(context.Background(), liqoTenant(t, p))
	require.NoError(t, err)
	_, err = p.consumer.Apply(context.Background(), providerID, id, nil)
	require.NoError(t, err)
}

func TestStrictProviderRefusesTenantWithoutTranscript(t *testing.T) {
	t.Parallel()
	p := newModePair(t, tenant.Strict, false)
	tn := liqoTenant(t, p)
	before := p.writes()
	_, err := p.provider.Accept(context.Background(), tn)
	require.ErrorIs(t, err, tenant.ErrTranscriptMissing)
	require.Equal(t, before, p.writes())
}

func TestTranscriptRejections(t *testing.T) {
	t.Parallel()
	for _, policy := range []tenant.Policy{tenant.Compatible, tenant.Strict} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			tests := []struct {
				name string
				// build returns the Tenant presented to the provider.
				build func(t *testing.T, p *pair) *authv1beta1.Tenant
				want  error
			}{
				{"replayed to another provider", func(t *testing.T, p *pair) *authv1beta1.Tenant {
					// A malicious provider relays this provider's nonce to the
					// consumer as its own; the consumer's transcript names the
					// malicious provider.
					n, err := p.provider.IssueNonce(context.Background(), consumerID)
					require.NoError(t, err)
					tn, err := p.consumer.Tenant(context.Background(), "cl-evil", n, nil)
					require.NoError(t, err)
					return tn
				}, tenant.ErrTranscriptMismatch},
				{"with another CSR", func(t *testing.T, p *pair) *authv1beta1.Tenant {
					tn := ourTenant(t, p)
					key, err := p.consumerCluster.Keys.Get(context.Background())
					require.NoError(t, err)
					tn.Spec.CSR, err = csr.Create(nil, key, csr.ControlPlaneSubject(consumerID))
					require.NoError(t, err)
					tn.Spec.CSR = append(tn.Spec.CSR, '\n') // same request, other bytes
					return tn
				}, tenant.ErrTranscriptMismatch},
				{"after expiry", func(t *testing.T, p *pair) *authv1beta1.Tenant {
					tn := ourTenant(t, p)
					p.clock.Step(3 * time.Minute) // transcripts live 2 minutes here
					return tn
				}, tenant.ErrTranscriptExpired},
				{"with a forged expiry", func(t *testing.T, p *pair) *authv1beta1.Tenant {
					tn := ourTenant(t, p)
					tn.Annotations[tenant.TranscriptExpiryAnnotation] = "4102444800" // 2100
					return tn
				}, tenant.ErrTranscriptMismatch},
				{"with a truncated signature", func(t *testing.T, p *pair) *authv1beta1.Tenant {
					tn := ourTenant(t, p)
					tn.Annotations[tenant.TranscriptSignatureAnnotation] = tn.Annotations[tenant.TranscriptSignatureAnnotation][:20]
					return tn
				}, tenant.ErrTranscriptMismatch},
				{"with a non-base64 signature", func(t *testing.T, p *pair) *authv1beta1.Tenant {
					tn := ourTenant(t, p)
					tn.Annotations[tenant.TranscriptSignatureAnnotation] = "!!not base64!!"
					return tn
				}, tenant.ErrTranscriptMismatch},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					p := newModePair(t, policy, false)
					tn := tt.build(t, p)
					tenantsBefore, signedBefore := p.providerCluster.Tenants.Writes(), p.providerCluster.Signer.Signed()
					_, err := p.provider.Accept(context.Background(), tn)
					require.ErrorIs(t, err, tt.want)
					var fe *tenant.FieldError
					require.ErrorAs(t, err, &fe)
					require.Equal(t, "metadata.annotations["+tenant.TranscriptSignatureAnnotation+"]", fe.Field)
					require.Equal(t, tenantsBefore, p.providerCluster.Tenants.Writes())
					require.Equal(t, signedBefore, p.providerCluster.Signer.Signed())
				})
			}
		})
	}
}

// ourTenant returns a kubepact consumer's Tenant answering a fresh nonce,
// asking a key of the identity's own, as Authenticate does.
func ourTenant(t *testing.T, p *pair) *authv1beta1.Tenant {
	t.Helper()
	ctx := context.Background()
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, &consumer.TenantOptions{OwnKey: true})
	require.NoError(t, err)
	return tn
}

// TestStrictConsumerKeepsPendingKey checks that a handshake that fails after
// the CSR left, then runs again, ends with the key persisted before the
// first attempt, not a new one.
func TestStrictConsumerKeepsPendingKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Strict, true)
	denied := true
	p.providerCluster.Approver.Decide = func(name string, _ *csr.Checked) error {
		if denied {
			return &csr.DeniedError{Name: name, Reason: "NotYet"}
		}
		return nil
	}
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	var de *csr.DeniedError
	require.ErrorAs(t, err, &de)
	pending, err := p.consumerCluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(providerID))
	require.NoError(t, err, "the identity key is stored before its CSR leaves")

	denied = false
	done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	cert, err := done.Kubeconfig.ClientCertificate()
	require.NoError(t, err)
	require.True(t, keys.Equal(pending.Key.Public(), cert.PublicKey), "the retry re-uses the pending key")
	require.Equal(t, 1, p.consumerCluster.IdentityKeys.Len())
}

func TestStrictConsumerNeedsIdentityKeys(t *testing.T) {
	t.Parallel()
	cc, err := memory.NewCluster(consumerID, nil)
	require.NoError(t, err)
	ports := cc.ConsumerPorts()
	ports.IdentityKeys = nil
	_, err = consumer.New(consumerID, ports, &consumer.Options{Strict: true})
	require.ErrorIs(t, err, peer.ErrInvalidConfig)
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// TestAcceptLiqoTenantTwice checks that a Liqo consumer's Tenant, which may
// leave the defaulted fields empty, is served again like any other.
func TestAcceptLiqoTenantTwice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Compatible, false)
	tn := liqoTenant(t, p)
	tn.Spec.AuthzPolicy, tn.Spec.TenantCondition = "", ""
	first, err := p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	// The stored Tenant has its defaults, as an API server would fill them.
	stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	stored.Spec.AuthzPolicy, stored.Spec.TenantCondition = authv1beta1.KeysExchange, authv1beta1.TenantConditionActive
	_, err = p.providerCluster.Tenants.Apply(ctx, stored)
	require.NoError(t, err)

	again, err := p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	require.Equal(t, first, again)
}

package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// controllerTenant applies nothing it has not checked: the Tenant that the
// consumer's controller wrote must answer this nonce for this provider, be
// signed with the cluster key the controller publishes, come from this
// consumer with this proxy URL, and, when a key of the identity's own was
// asked for, ask a certificate for one.
func TestControllerTenant(t *testing.T) {
	t.Parallel()
	const consumerID, providerID, proxy = "cl-consumer", "cl-provider", "http://proxy.example.com:3128"
	now := time.Now()
	n := newNonce(t)
	clusterKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	identityKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	// The key of someone who may write Secrets in the consumer's tenant
	// namespace, and signs a Tenant of the consumer's ID with it.
	foreignKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	want := func(proxyURL string, ownKey bool) tenantWant {
		return tenantWant{consumerID: consumerID, providerID: providerID, clusterKey: clusterKey.Public(), proxyURL: proxyURL, ownKey: ownKey}
	}
	buildWith := func(t *testing.T, key *keys.PrivateKey, o tenant.BuildOptions, id string, answers nonce.Nonce) []byte {
		t.Helper()
		if o.ProviderID == "" {
			o.ProviderID = providerID
		}
		if o.Expiry.IsZero() {
			o.Expiry = now.Add(tenant.DefaultTranscriptLifetime)
		}
		tn, err := tenant.Build(id, key, answers, &o)
		require.NoError(t, err)
		data, err := yaml.Marshal(tn)
		require.NoError(t, err)
		return data
	}
	build := func(t *testing.T, o tenant.BuildOptions, id string, answers nonce.Nonce) []byte {
		t.Helper()
		return buildWith(t, clusterKey, o, id, answers)
	}
	secretOf := func(data []byte) *corev1.Secret {
		return &corev1.Secret{Data: map[string][]byte{contract.TenantKey: data}}
	}

	t.Run("accepted", func(t *testing.T) {
		t.Parallel()
		got, err := controllerTenant(secretOf(build(t, tenant.BuildOptions{ProxyURL: proxy}, consumerID, n)), n, want(proxy, false), now)
		require.NoError(t, err)
		assert.Equal(t, consumerID, got.Spec.ClusterID)
		got, err = controllerTenant(secretOf(build(t, tenant.BuildOptions{IdentityKey: identityKey}, consumerID, n)), n, want("", true), now)
		require.NoError(t, err, "a key of the identity's own: the CSR is for the identity key")
		assert.Equal(t, consumerID, got.Spec.ClusterID)
	})

	tests := []struct {
		name   string
		data   func(t *testing.T) []byte
		ownKey bool
		// noKey: the CLI knows no cluster key to check with.
		noKey bool
		want  error
		field bool // a *tenant.FieldError
	}{
		{name: "no Tenant", data: func(*testing.T) []byte { return nil }, want: tenant.ErrMalformed},
		{name: "not a Tenant", data: func(*testing.T) []byte { return []byte("kind: Secret\n") }, want: tenant.ErrMalformed},
		{name: "another nonce", data: func(t *testing.T) []byte { return build(t, tenant.BuildOptions{}, consumerID, newNonce(t)) },
			want: keys.ErrBadSignature, field: true},
		{name: "another provider", data: func(t *testing.T) []byte {
			return build(t, tenant.BuildOptions{ProviderID: "cl-elsewhere"}, consumerID, n)
		},
			want: tenant.ErrTranscriptMismatch, field: true},
		{name: "transcript run down", data: func(t *testing.T) []byte {
			return build(t, tenant.BuildOptions{Expiry: now.Add(-time.Second)}, consumerID, n)
		},
			want: tenant.ErrTranscriptExpired, field: true},
		{name: "another consumer", data: func(t *testing.T) []byte { return build(t, tenant.BuildOptions{}, "cl-someone-else", n) },
			want: errTenantMismatch},
		{name: "another proxy URL", data: func(t *testing.T) []byte {
			return build(t, tenant.BuildOptions{ProxyURL: "http://other.example.com"}, consumerID, n)
		},
			want: errTenantMismatch},
		{name: "own key asked, CSR for the cluster key", data: func(t *testing.T) []byte { return build(t, tenant.BuildOptions{}, consumerID, n) },
			ownKey: true, want: errNotStrict},
		// A Secret writer's Tenant: its signature verifies, with its own
		// key, for the consumer's ID and this nonce and provider.
		{name: "signed with a foreign key", data: func(t *testing.T) []byte {
			return buildWith(t, foreignKey, tenant.BuildOptions{}, consumerID, n)
		},
			want: errUntrustedTenant},
		{name: "signed with a foreign key, CSR for another key", data: func(t *testing.T) []byte {
			return buildWith(t, foreignKey, tenant.BuildOptions{IdentityKey: identityKey}, consumerID, n)
		},
			ownKey: true, want: errUntrustedTenant},
		{name: "no cluster key to check with", data: func(t *testing.T) []byte { return build(t, tenant.BuildOptions{}, consumerID, n) },
			noKey: true, want: errUntrustedTenant},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := want("", tt.ownKey)
			if tt.noKey {
				w.clusterKey = nil
			}
			got, err := controllerTenant(secretOf(tt.data(t)), n, w, now)
			require.ErrorIs(t, err, tt.want)
			assert.Nil(t, got)
			if tt.field {
				var field *tenant.FieldError
				require.ErrorAs(t, err, &field)
			}
		})
	}
}

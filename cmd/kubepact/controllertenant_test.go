package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// controllerTenant applies nothing it has not checked: the Tenant that the
// consumer's controller wrote must answer this nonce for this provider,
// come from this consumer with this proxy URL, and, with --strict, ask a
// certificate for a key of its own.
func TestControllerTenant(t *testing.T) {
	t.Parallel()
	const consumerID, providerID, proxy = "cl-consumer", "cl-provider", "http://proxy.example.com:3128"
	now := time.Now()
	n := newNonce(t)
	clusterKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	identityKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	build := func(t *testing.T, o tenant.BuildOptions, id string, answers nonce.Nonce) []byte {
		t.Helper()
		if o.ProviderID == "" {
			o.ProviderID = providerID
		}
		if o.Expiry.IsZero() {
			o.Expiry = now.Add(tenant.DefaultTranscriptLifetime)
		}
		tn, err := tenant.Build(id, clusterKey, answers, &o)
		require.NoError(t, err)
		data, err := yaml.Marshal(tn)
		require.NoError(t, err)
		return data
	}
	secretOf := func(data []byte) *corev1.Secret {
		return &corev1.Secret{Data: map[string][]byte{controllers.TenantKey: data}}
	}

	t.Run("accepted", func(t *testing.T) {
		t.Parallel()
		got, err := controllerTenant(secretOf(build(t, tenant.BuildOptions{ProxyURL: proxy}, consumerID, n)), n, consumerID, providerID, proxy, false, now)
		require.NoError(t, err)
		assert.Equal(t, consumerID, got.Spec.ClusterID)
		got, err = controllerTenant(secretOf(build(t, tenant.BuildOptions{IdentityKey: identityKey}, consumerID, n)), n, consumerID, providerID, "", true, now)
		require.NoError(t, err, "--strict: the CSR is for the identity key")
		assert.Equal(t, consumerID, got.Spec.ClusterID)
	})

	tests := []struct {
		name   string
		data   func(t *testing.T) []byte
		strict bool
		want   error
		field  bool // a *tenant.FieldError
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
		{name: "strict, CSR for the cluster key", data: func(t *testing.T) []byte { return build(t, tenant.BuildOptions{}, consumerID, n) },
			strict: true, want: errNotStrict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			wantProxy := ""
			got, err := controllerTenant(secretOf(tt.data(t)), n, consumerID, providerID, wantProxy, tt.strict, now)
			require.ErrorIs(t, err, tt.want)
			assert.Nil(t, got)
			if tt.field {
				var field *tenant.FieldError
				require.ErrorAs(t, err, &field)
			}
		})
	}
}

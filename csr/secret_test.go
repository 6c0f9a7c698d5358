package csr_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/csr"
)

func TestCacheSecret(t *testing.T) {
	t.Parallel()
	e := csr.CacheEntry{CSR: []byte("csr pem"), Certificate: []byte("certificate pem")}
	secret := func(name string) *corev1.Secret {
		return &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      name,
				Namespace: "liqo-tenant-cl-consumer",
				Labels:    map[string]string{"liqo.io/remote-cluster-id": consumerID},
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"csr": []byte("csr pem"), "certificate": []byte("certificate pem")},
		}
	}
	tests := []struct {
		name string
		key  csr.CacheKey
		want *corev1.Secret
	}{
		{name: "ControlPlane", key: csr.CacheKey{ConsumerID: consumerID}, want: secret("liqo-remote-certificate")},
		{name: "ResourceSlice", key: csr.CacheKey{ConsumerID: consumerID, Slice: sliceName}, want: secret("liqo-remote-certificate-slice-a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, "liqo-tenant-cl-consumer", tt.key.Namespace())
			s := csr.CacheSecret(tt.key, e)
			if diff := cmp.Diff(tt.want, s); diff != "" {
				t.Fatalf("CacheSecret() mismatch (-want +got):\n%s", diff)
			}
			require.Equal(t, e, csr.CacheEntryFromSecret(s))
		})
	}
}

func TestCacheEntryFromEmptySecret(t *testing.T) {
	t.Parallel()
	require.Equal(t, csr.CacheEntry{}, csr.CacheEntryFromSecret(&corev1.Secret{}))
}

package keys_test

import (
	"crypto/x509"
	"encoding/pem"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
)

func TestSecret(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			k := testkeys.Generate(t, alg)
			s, err := keys.Secret("liqo", k)
			require.NoError(t, err)

			priv, err := keys.MarshalPrivateKey(k)
			require.NoError(t, err)
			pub, err := keys.MarshalPublicKey(k.Public())
			require.NoError(t, err)
			want := &corev1.Secret{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
				ObjectMeta: metav1.ObjectMeta{Name: "authentication-keys", Namespace: "liqo"},
				Type:       corev1.SecretTypeOpaque,
				Data:       map[string][]byte{"privateKey": priv, "publicKey": pub},
			}
			if diff := cmp.Diff(want, s); diff != "" {
				t.Fatalf("Secret() mismatch (-want +got):\n%s", diff)
			}

			// Liqo's format: PKCS#8 "PRIVATE KEY" and PKIX "PUBLIC KEY".
			block, _ := pem.Decode(s.Data["privateKey"])
			require.Equal(t, "PRIVATE KEY", block.Type)
			_, err = x509.ParsePKCS8PrivateKey(block.Bytes)
			require.NoError(t, err)
			block, _ = pem.Decode(s.Data["publicKey"])
			require.Equal(t, "PUBLIC KEY", block.Type)
			_, err = x509.ParsePKIXPublicKey(block.Bytes)
			require.NoError(t, err)

			got, err := keys.FromSecret(s)
			require.NoError(t, err)
			require.True(t, keys.Equal(k.Public(), got.Public()))
			require.Equal(t, alg, got.Algorithm())
		})
	}
}

func TestFromSecretErrors(t *testing.T) {
	t.Parallel()
	pub, err := keys.MarshalPublicKey(testkeys.Generate(t, keys.Ed25519).Public())
	require.NoError(t, err)
	meta := metav1.ObjectMeta{Name: "authentication-keys", Namespace: "liqo"}
	tests := []struct {
		name string
		data map[string][]byte
		want error
	}{
		{name: "no data", data: nil, want: keys.ErrMalformed},
		{name: "only a public key", data: map[string][]byte{"publicKey": pub}, want: keys.ErrMalformed},
		{name: "public key under privateKey", data: map[string][]byte{"privateKey": pub}, want: keys.ErrMalformed},
		{name: "RSA 1024", data: map[string][]byte{"privateKey": pkcs8PEM(t, testkeys.WeakRSA(t))}, want: keys.ErrWeak},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, err := keys.FromSecret(&corev1.Secret{ObjectMeta: meta, Data: tt.data})
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, k)
		})
	}
}

func TestFromSecretRejectsMismatchedPublicKey(t *testing.T) {
	t.Parallel()
	a, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	b, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	sa, err := keys.Secret("liqo", a)
	require.NoError(t, err)
	sb, err := keys.Secret("liqo", b)
	require.NoError(t, err)
	sa.Data[keys.PublicKeySecretKey] = sb.Data[keys.PublicKeySecretKey]
	_, err = keys.FromSecret(sa)
	require.ErrorIs(t, err, keys.ErrMalformed)
}

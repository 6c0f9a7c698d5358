package nonce_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/nonce"
)

func TestSecret(t *testing.T) {
	t.Parallel()
	n, err := nonce.Parse(countingText)
	require.NoError(t, err)
	issued := time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("CET", 3600))
	s := nonce.Secret(consumer, nonce.Entry{Nonce: n, IssuedAt: issued})
	want := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "liqo-nonce",
			Namespace: "liqo-tenant-cl-consumer",
			Labels:    map[string]string{"liqo.io/nonce": "true", "liqo.io/remote-cluster-id": consumer},
			Annotations: map[string]string{
				"kubepact.io/nonce-issued-at": "2026-01-02T02:04:05.123456789Z",
			},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{"nonce": []byte(countingText)},
	}
	if diff := cmp.Diff(want, s); diff != "" {
		t.Fatalf("Secret() mismatch (-want +got):\n%s", diff)
	}

	e, err := nonce.FromSecret(s)
	require.NoError(t, err)
	require.True(t, n.Equal(e.Nonce))
	require.True(t, issued.Equal(e.IssuedAt), "IssuedAt survives to the nanosecond")
}

func TestSecretRoundTripsTheTTL(t *testing.T) {
	t.Parallel()
	n, err := nonce.Parse(countingText)
	require.NoError(t, err)
	issued := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := nonce.Secret(consumer, nonce.Entry{Nonce: n, IssuedAt: issued, TTL: 90*time.Second + time.Nanosecond})
	require.Equal(t, "1m30.000000001s", s.Annotations["kubepact.io/nonce-ttl"])
	e, err := nonce.FromSecret(s)
	require.NoError(t, err)
	require.Equal(t, 90*time.Second+time.Nanosecond, e.TTL)

	// A redemption keeps it.
	e.Redemption = &nonce.Redemption{By: []byte{1}, At: issued}
	again, err := nonce.FromSecret(nonce.Secret(consumer, e))
	require.NoError(t, err)
	require.Equal(t, e.TTL, again.TTL)
}

func TestSecretRoundTripsARedemption(t *testing.T) {
	t.Parallel()
	n, err := nonce.Parse(countingText)
	require.NoError(t, err)
	issued := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &nonce.Redemption{By: []byte{1, 2, 3}, Key: "SHA256:abc", At: issued.Add(time.Minute + time.Nanosecond), Unpeered: "SHA256:def"}
	s := nonce.Secret(consumer, nonce.Entry{Nonce: n, IssuedAt: issued, Redemption: r})
	require.Equal(t, "AQID", s.Annotations[nonce.RedeemedByAnnotation])
	require.Equal(t, "SHA256:abc", s.Annotations[nonce.RedeemedKeyAnnotation])
	require.Equal(t, "SHA256:def", s.Annotations[nonce.UnpeeredAnnotation])
	e, err := nonce.FromSecret(s)
	require.NoError(t, err)
	require.Equal(t, r.By, e.Redemption.By)
	require.Equal(t, r.Key, e.Redemption.Key)
	require.Equal(t, r.Unpeered, e.Redemption.Unpeered)
	require.True(t, r.At.Equal(e.Redemption.At))

	r.Unpeered = ""
	s = nonce.Secret(consumer, nonce.Entry{Nonce: n, IssuedAt: issued, Redemption: r})
	require.NotContains(t, s.Annotations, nonce.UnpeeredAnnotation)
}

func TestFromSecretWrittenByLiqo(t *testing.T) {
	t.Parallel()
	// Liqo writes no issue time: the nonce was issued when the Secret was created.
	created := metav1.NewTime(time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC))
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: "liqo-nonce", Namespace: "liqo-tenant-cl-consumer", CreationTimestamp: created,
			Labels: map[string]string{"liqo.io/nonce": "true", "liqo.io/remote-cluster-id": consumer},
		},
		Data: map[string][]byte{"nonce": []byte(countingText)},
	}
	e, err := nonce.FromSecret(s)
	require.NoError(t, err)
	require.Equal(t, countingText, e.Nonce.Text())
	require.True(t, created.Time.Equal(e.IssuedAt))
	require.Zero(t, e.TTL, "no TTL recorded: the reader's applies")
	_, hasTTL := nonce.Secret(consumer, e).Annotations[nonce.TTLAnnotation]
	require.False(t, hasTTL, "no TTL is invented when the Secret is written back")
}

func TestFromSecretErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		data        map[string][]byte
		annotations map[string]string
	}{
		{name: "no data", data: nil},
		{name: "empty nonce", data: map[string][]byte{"nonce": nil}},
		{name: "decoded bytes instead of text", data: map[string][]byte{"nonce": make([]byte, nonce.Size)}},
		{name: "nonce under another key", data: map[string][]byte{"signedNonce": []byte(countingText)}},
		{
			name:        "bad issue time",
			data:        map[string][]byte{"nonce": []byte(countingText)},
			annotations: map[string]string{"kubepact.io/nonce-issued-at": "yesterday"},
		},
		{name: "TTL not a duration", data: map[string][]byte{"nonce": []byte(countingText)}, annotations: map[string]string{"kubepact.io/nonce-ttl": "soon"}},
		{name: "TTL without a unit", data: map[string][]byte{"nonce": []byte(countingText)}, annotations: map[string]string{"kubepact.io/nonce-ttl": "600"}},
		{name: "TTL empty", data: map[string][]byte{"nonce": []byte(countingText)}, annotations: map[string]string{"kubepact.io/nonce-ttl": ""}},
		{name: "TTL zero", data: map[string][]byte{"nonce": []byte(countingText)}, annotations: map[string]string{"kubepact.io/nonce-ttl": "0s"}},
		{name: "TTL negative", data: map[string][]byte{"nonce": []byte(countingText)}, annotations: map[string]string{"kubepact.io/nonce-ttl": "-10m"}},
		{
			name:        "redeemer not base64",
			data:        map[string][]byte{"nonce": []byte(countingText)},
			annotations: map[string]string{nonce.RedeemedByAnnotation: "!!", nonce.RedeemedAtAnnotation: "2026-01-02T03:04:05Z"},
		},
		{
			name:        "redeemer too long",
			data:        map[string][]byte{"nonce": []byte(countingText)},
			annotations: map[string]string{nonce.RedeemedByAnnotation: base64.StdEncoding.EncodeToString(make([]byte, nonce.MaxRedeemerSize+1)), nonce.RedeemedAtAnnotation: "2026-01-02T03:04:05Z"},
		},
		{
			name: "redeeming key too long",
			data: map[string][]byte{"nonce": []byte(countingText)},
			annotations: map[string]string{nonce.RedeemedByAnnotation: "AAAA", nonce.RedeemedAtAnnotation: "2026-01-02T03:04:05Z",
				nonce.RedeemedKeyAnnotation: strings.Repeat("k", nonce.MaxRedeemerSize+1)},
		},
		{
			name: "unpeered mark too long",
			data: map[string][]byte{"nonce": []byte(countingText)},
			annotations: map[string]string{nonce.RedeemedByAnnotation: "AAAA", nonce.RedeemedAtAnnotation: "2026-01-02T03:04:05Z",
				nonce.RedeemedKeyAnnotation: "SHA256:abc", nonce.UnpeeredAnnotation: strings.Repeat("k", nonce.MaxRedeemerSize+1)},
		},
		{
			name: "unpeered mark without a redeeming key",
			data: map[string][]byte{"nonce": []byte(countingText)},
			annotations: map[string]string{nonce.RedeemedByAnnotation: "AAAA", nonce.RedeemedAtAnnotation: "2026-01-02T03:04:05Z",
				nonce.UnpeeredAnnotation: "SHA256:def"},
		},
		{
			name:        "redemption without a time",
			data:        map[string][]byte{"nonce": []byte(countingText)},
			annotations: map[string]string{nonce.RedeemedByAnnotation: "AAAA"},
		},
		{
			name:        "redemption without a redeemer",
			data:        map[string][]byte{"nonce": []byte(countingText)},
			annotations: map[string]string{nonce.RedeemedAtAnnotation: "2026-01-02T03:04:05Z"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "liqo-nonce", Namespace: "liqo-tenant-cl-consumer", Annotations: tt.annotations},
				Data:       tt.data,
			}
			e, err := nonce.FromSecret(s)
			require.ErrorIs(t, err, nonce.ErrMalformed)
			require.True(t, e.Nonce.IsZero())
		})
	}
}

func TestSignedSecret(t *testing.T) {
	t.Parallel()
	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	sig := []byte("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef")
	s := nonce.SignedSecret("cl-provider", n, sig)
	require.Equal(t, "liqo-signed-nonce", s.Name)
	require.Equal(t, "liqo-tenant-cl-provider", s.Namespace)
	require.Equal(t, map[string]string{"liqo.io/signed-nonce": "true", "liqo.io/remote-cluster-id": "cl-provider"}, s.Labels)
	require.Equal(t, []byte(n.Text()), s.Data["nonce"])
	require.Equal(t, sig, s.Data["signedNonce"])

	got, gotSig, err := nonce.FromSignedSecret(s)
	require.NoError(t, err)
	require.True(t, got.Equal(n))
	require.Equal(t, sig, gotSig)

	delete(s.Data, "signedNonce")
	_, _, err = nonce.FromSignedSecret(s)
	require.ErrorIs(t, err, nonce.ErrMalformed)
	s.Data["nonce"] = []byte("short")
	_, _, err = nonce.FromSignedSecret(s)
	require.ErrorIs(t, err, nonce.ErrMalformed)
}

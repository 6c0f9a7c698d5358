package tenant_test

import (
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/internal/weakkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// A Tenant whose key has small order "signs" everything without a private
// key. It is refused in both forms of the key, under both policies, before
// any signature is looked at, with the field and the cause named.
func TestVerifyRefusesSmallOrderKeys(t *testing.T) {
	t.Parallel()
	n, err := nonce.Generate(nil) // a nonce the forger never saw
	require.NoError(t, err)
	now := time.Now()
	points, _ := weakkeys.SmallOrder()
	for _, pub := range points {
		forged, err := weakkeys.ForgedTenant("cl-victim", "cl-provider", pub, nonce.Nonce{}, now.Add(time.Minute))
		require.NoError(t, err)
		for form, tn := range map[string]*authv1beta1.Tenant{"PEM": forged, "raw": weakkeys.RawForm(forged, pub)} {
			_, err := tenant.Validate(tn)
			requireWeakKey(t, err, form)
			for _, policy := range []tenant.Policy{tenant.Compatible, tenant.Strict} {
				v, err := tenant.Verify(tn, n, &tenant.VerifyOptions{ProviderID: "cl-provider", Policy: policy, Now: now})
				require.Nil(t, v)
				requireWeakKey(t, err, form)
			}
		}
	}
}

// The forgery is real: with the check out of the way (the key compared by
// hand), the neutral point's forged signature verifies over the nonce.
func TestForgedSignatureVerifiesWithoutTheCheck(t *testing.T) {
	t.Parallel()
	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	points, _ := weakkeys.SmallOrder()
	forged, err := weakkeys.ForgedTenant("cl-victim", "cl-provider", points[0], n, time.Now().Add(time.Minute))
	require.NoError(t, err)
	require.True(t, ed25519.Verify(points[0], []byte(n.Text()), forged.Spec.Signature))
}

func requireWeakKey(t *testing.T, err error, form string) {
	t.Helper()
	require.ErrorIs(t, err, keys.ErrWeakKey, form)
	var fe *tenant.FieldError
	require.ErrorAs(t, err, &fe, form)
	require.Equal(t, "spec.publicKey", fe.Field, form)
}

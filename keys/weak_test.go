package keys_test

import (
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"math/big"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/internal/weakkeys"
	"github.com/kubepact/kubepact/keys"
)

// weakForms returns the raw and PEM forms of an Ed25519 key's encoding.
func weakForms(t *testing.T, enc []byte) map[string][]byte {
	der, err := x509.MarshalPKIXPublicKey(ed25519.PublicKey(enc))
	require.NoError(t, err)
	return map[string][]byte{"raw": enc, "PEM": pemOf("PUBLIC KEY", der)}
}

func TestSmallOrderKeysRefused(t *testing.T) {
	t.Parallel()
	points, orders := weakkeys.SmallOrder()
	require.Len(t, points, 8)
	seen := map[int]int{}
	for i, enc := range points {
		seen[orders[i]]++
		forger := weakkeys.NewSigner(enc)
		msg := []byte("any message at all")
		for form, b := range weakForms(t, enc) {
			t.Run(hex.EncodeToString(enc)+"/"+form, func(t *testing.T) {
				pub, err := keys.ParsePublicKey(b)
				require.ErrorIs(t, err, keys.ErrWeakKey)
				require.Nil(t, pub)
			})
		}
		require.ErrorIs(t, keys.Check(ed25519.PublicKey(enc)), keys.ErrWeakKey)
		_, err := keys.MarshalPublicKey(ed25519.PublicKey(enc))
		require.ErrorIs(t, err, keys.ErrWeakKey)
		sig, err := forger.Sign(nil, msg, nil)
		require.NoError(t, err)
		require.ErrorIs(t, keys.VerifyMessage(ed25519.PublicKey(enc), msg, sig), keys.ErrWeakKey)
	}
	// One point of order 1 and 2, two of order 4, four of order 8.
	require.Equal(t, map[int]int{1: 1, 2: 1, 4: 2, 8: 4}, seen)

	// Without the check the neutral point forges every message.
	neutral := points[0]
	sig, _ := weakkeys.NewSigner(neutral).Sign(nil, nil, nil)
	require.True(t, ed25519.Verify(neutral, []byte("never signed"), sig))
}

func TestNonCanonicalKeysRefused(t *testing.T) {
	t.Parallel()
	encodings, small := weakkeys.NonCanonical()
	require.NotEmpty(t, encodings)
	nSmall := 0
	for i, enc := range encodings {
		if small[i] {
			nSmall++
		}
		for form, b := range weakForms(t, enc) {
			t.Run(hex.EncodeToString(enc)+"/"+form, func(t *testing.T) {
				_, err := keys.ParsePublicKey(b)
				require.ErrorIs(t, err, keys.ErrWeakKey)
			})
		}
	}
	// y = 0 and y = 1 written as y + p, with either sign bit, and the
	// neutral point and the point of order 2 with the sign bit set.
	require.Equal(t, 6, nSmall)
}

func TestEd25519NotOnCurveRefused(t *testing.T) {
	t.Parallel()
	// y = 2 has no x on the curve.
	enc := make([]byte, 32)
	enc[0] = 2
	_, err := keys.ParsePublicKey(enc)
	require.ErrorIs(t, err, keys.ErrMalformed)
}

func TestGeneratedEd25519KeysPass(t *testing.T) {
	t.Parallel()
	for range 64 {
		k := testkeys.Generate(t, keys.Ed25519)
		require.NoError(t, keys.Check(k.Public()))
	}
}

func TestRSALimits(t *testing.T) {
	t.Parallel()
	real := testkeys.Generate(t, keys.RSA2048).Public().(*rsa.PublicKey)
	huge := new(big.Int).Lsh(big.NewInt(1), 45000-1)
	huge.Or(huge, big.NewInt(1))
	justOver := new(big.Int).Lsh(big.NewInt(1), keys.MaxRSABits)
	justOver.Or(justOver, big.NewInt(1))
	largest := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), keys.MaxRSABits), big.NewInt(1))
	for _, tc := range []struct {
		name string
		pub  *rsa.PublicKey
		want error
	}{
		{"45000 bits", &rsa.PublicKey{N: huge, E: keys.RSAExponent}, keys.ErrUnsupported},
		{"4097 bits", &rsa.PublicKey{N: justOver, E: keys.RSAExponent}, keys.ErrUnsupported},
		{"exponent 3", &rsa.PublicKey{N: real.N, E: 3}, keys.ErrUnsupported},
		{"exponent 2^31-1", &rsa.PublicKey{N: real.N, E: 1<<31 - 1}, keys.ErrUnsupported},
		{"4096 bits", &rsa.PublicKey{N: largest, E: keys.RSAExponent}, nil},
		{"2048 bits", real, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := keys.Check(tc.pub)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			der, merr := x509.MarshalPKIXPublicKey(tc.pub)
			require.NoError(t, merr)
			pub, err := keys.ParsePublicKey(pemOf("PUBLIC KEY", der))
			require.Nil(t, pub)
			require.True(t, errors.Is(err, tc.want) || errors.Is(err, keys.ErrMalformed), "%v", err)
			require.ErrorIs(t, keys.VerifyMessage(tc.pub, []byte("m"), make([]byte, 256)), tc.want)
		})
	}
}

// BenchmarkCheckEd25519 is the cost of the small-order and canonical
// encoding check that every Ed25519 key goes through.
func BenchmarkCheckEd25519(b *testing.B) {
	k, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(b, err)
	pub := k.Public()
	for b.Loop() {
		if err := keys.Check(pub); err != nil {
			b.Fatal(err)
		}
	}
}

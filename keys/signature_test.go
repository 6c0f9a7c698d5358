package keys_test

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
)

var message = []byte("TWVzc2FnZSB0aGF0IGEgcHJvdmlkZXIgd291bGQgc2VuZCBhcyBpdHMgbm9uY2UgdGV4dC4uLi4uLi4uLi4uLi4uLi4uLi4uLi4uLg==")

// TestSignMessageWireFormat checks each signature with the standard library
// directly, the way a Liqo peer checks it.
func TestSignMessageWireFormat(t *testing.T) {
	t.Parallel()
	sum := sha256.Sum256(message)
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			k := testkeys.Generate(t, alg)
			sig, err := keys.SignMessage(nil, k, message)
			require.NoError(t, err)
			switch pub := k.Public().(type) {
			case ed25519.PublicKey:
				require.True(t, ed25519.Verify(pub, message, sig), "pure Ed25519 over the message")
			case *rsa.PublicKey:
				require.NoError(t, rsa.VerifyPKCS1v15(pub, crypto.SHA256, sum[:], sig), "PKCS#1 v1.5 over SHA-256")
			case *ecdsa.PublicKey:
				require.True(t, ecdsa.VerifyASN1(pub, sum[:], sig), "ASN.1 ECDSA over SHA-256")
			default:
				t.Fatalf("public key of type %T", pub)
			}
		})
	}
}

func TestSignAndVerifyMessage(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			k := testkeys.Generate(t, alg)
			sig, err := keys.SignMessage(seeded(3), k, message)
			require.NoError(t, err)
			require.NoError(t, keys.VerifyMessage(k.Public(), message, sig))

			// A signature made by the unwrapped standard-library key verifies too.
			std, err := keys.ParsePrivateKey(mustMarshal(t, k))
			require.NoError(t, err)
			sig2, err := keys.SignMessage(nil, std, message)
			require.NoError(t, err)
			require.NoError(t, keys.VerifyMessage(k.Public(), message, sig2))
		})
	}
}

func mustMarshal(t *testing.T, k *keys.PrivateKey) []byte {
	t.Helper()
	b, err := keys.MarshalPrivateKey(k)
	require.NoError(t, err)
	return b
}

func TestVerifyMessageRejects(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			k := testkeys.Generate(t, alg)
			sig, err := keys.SignMessage(nil, k, message)
			require.NoError(t, err)
			others := map[string]crypto.PublicKey{
				"other Ed25519": testkeys.Generate(t, keys.Ed25519).Public(),
				"other ECDSA":   testkeys.Generate(t, keys.ECDSAP256).Public(),
			}
			if alg != keys.RSA2048 {
				others["RSA"] = testkeys.Generate(t, keys.RSA2048).Public()
			}

			tampered := bytes.Clone(message)
			tampered[0] ^= 1
			flipped := bytes.Clone(sig)
			flipped[len(flipped)/2] ^= 1

			tests := []struct {
				name string
				pub  crypto.PublicKey
				msg  []byte
				sig  []byte
			}{
				{name: "tampered message", pub: k.Public(), msg: tampered, sig: sig},
				{name: "truncated message", pub: k.Public(), msg: message[:len(message)-1], sig: sig},
				{name: "flipped signature bit", pub: k.Public(), msg: message, sig: flipped},
				{name: "truncated signature", pub: k.Public(), msg: message, sig: sig[:len(sig)-1]},
				{name: "empty signature", pub: k.Public(), msg: message, sig: nil},
			}
			for name, pub := range others {
				if keys.Equal(pub, k.Public()) {
					continue
				}
				tests = append(tests, struct {
					name string
					pub  crypto.PublicKey
					msg  []byte
					sig  []byte
				}{name: name, pub: pub, msg: message, sig: sig})
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					require.ErrorIs(t, keys.VerifyMessage(tt.pub, tt.msg, tt.sig), keys.ErrBadSignature)
				})
			}
		})
	}
}

func TestVerifyMessageRejectsUnacceptedKeys(t *testing.T) {
	t.Parallel()
	weak := testkeys.WeakRSA(t)
	sum := sha256.Sum256(message)
	weakSig, err := rsa.SignPKCS1v15(nil, weak, crypto.SHA256, sum[:])
	require.NoError(t, err)
	p521 := testkeys.ECDSA(t, elliptic.P521())
	p521Sig, err := ecdsa.SignASN1(rand.Reader, p521, sum[:])
	require.NoError(t, err)

	tests := []struct {
		name string
		pub  crypto.PublicKey
		sig  []byte
		want error
	}{
		{name: "RSA 1024 with a valid signature", pub: &weak.PublicKey, sig: weakSig, want: keys.ErrWeak},
		{name: "ECDSA P-521 with a valid signature", pub: &p521.PublicKey, sig: p521Sig, want: keys.ErrUnsupported},
		{name: "not a key", pub: "key", sig: weakSig, want: keys.ErrUnsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, keys.VerifyMessage(tt.pub, message, tt.sig), tt.want)
		})
	}
}

type opaqueSigner struct{}

func (opaqueSigner) Public() crypto.PublicKey { return "opaque" }

func (opaqueSigner) Sign(io.Reader, []byte, crypto.SignerOpts) ([]byte, error) {
	return []byte("sig"), nil
}

func TestSignMessageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		s    crypto.Signer
	}{
		{name: "nil signer", s: nil},
		{name: "unknown key type", s: opaqueSigner{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sig, err := keys.SignMessage(nil, tt.s, message)
			require.ErrorIs(t, err, keys.ErrUnsupported)
			require.Nil(t, sig)
		})
	}
}

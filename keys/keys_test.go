package keys_test

import (
	"bytes"
	"crypto"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	mathrand "math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
)

var algorithms = []keys.Algorithm{keys.Ed25519, keys.ECDSAP256, keys.RSA2048}

// seeded returns a deterministic source of randomness.
func seeded(seed byte) *mathrand.ChaCha8 {
	var s [32]byte
	for i := range s {
		s[i] = seed
	}
	return mathrand.NewChaCha8(s)
}

func pemOf(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkcs8PEM(t *testing.T, k any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	require.NoError(t, err)
	return pemOf("PRIVATE KEY", der)
}

func pkixPEM(t *testing.T, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return pemOf("PUBLIC KEY", der)
}

// oversized returns valid followed by padding, longer than keys.MaxPEMSize.
func oversized(valid []byte) []byte {
	return append(bytes.Clone(valid), bytes.Repeat([]byte("\n"), keys.MaxPEMSize)...)
}

func TestAlgorithmString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		alg  keys.Algorithm
		want string
	}{
		{keys.Ed25519, "Ed25519"},
		{keys.ECDSAP256, "ECDSA-P256"},
		{keys.RSA2048, "RSA-2048"},
		{keys.Algorithm(42), "Algorithm(42)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.alg.String())
		})
	}
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			k := testkeys.Generate(t, alg)
			require.Equal(t, alg, k.Algorithm())
			require.NoError(t, keys.Check(k.Public()))
			switch pub := k.Public().(type) {
			case ed25519.PublicKey:
				require.Equal(t, keys.Ed25519, alg)
				require.Len(t, pub, ed25519.PublicKeySize)
			case *ecdsa.PublicKey:
				require.Equal(t, keys.ECDSAP256, alg)
				require.Equal(t, elliptic.P256(), pub.Curve)
			case *rsa.PublicKey:
				require.Equal(t, keys.RSA2048, alg)
				require.Equal(t, 2048, pub.N.BitLen())
			default:
				t.Fatalf("public key of type %T", pub)
			}
		})
	}
}

func TestGenerateEd25519IsDeterministicInItsReader(t *testing.T) {
	t.Parallel()
	a, err := keys.Generate(seeded(1), keys.Ed25519)
	require.NoError(t, err)
	b, err := keys.Generate(seeded(1), keys.Ed25519)
	require.NoError(t, err)
	c, err := keys.Generate(seeded(2), keys.Ed25519)
	require.NoError(t, err)
	require.True(t, keys.Equal(a.Public(), b.Public()))
	require.False(t, keys.Equal(a.Public(), c.Public()))
}

func TestGenerateErrors(t *testing.T) {
	t.Parallel()
	errRead := errors.New("entropy exhausted")
	tests := []struct {
		name string
		r    io.Reader
		alg  keys.Algorithm
		want error
	}{
		{name: "unknown algorithm", alg: keys.Algorithm(42), want: keys.ErrUnsupported},
		{name: "negative algorithm", alg: keys.Algorithm(-1), want: keys.ErrUnsupported},
		{name: "reader fails", r: failingReader{err: errRead}, alg: keys.Ed25519, want: errRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, err := keys.Generate(tt.r, tt.alg)
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, k)
		})
	}
}

type failingReader struct{ err error }

func (r failingReader) Read([]byte) (int, error) { return 0, r.err }

func TestPrivateKeyRoundTrip(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			k := testkeys.Generate(t, alg)
			b, err := keys.MarshalPrivateKey(k)
			require.NoError(t, err)
			block, rest := pem.Decode(b)
			require.NotNil(t, block)
			require.Equal(t, "PRIVATE KEY", block.Type)
			require.Empty(t, rest)
			_, err = x509.ParsePKCS8PrivateKey(block.Bytes)
			require.NoError(t, err, "MarshalPrivateKey must write PKCS#8")

			got, err := keys.ParsePrivateKey(b)
			require.NoError(t, err)
			require.Equal(t, alg, got.Algorithm())
			require.True(t, keys.Equal(k.Public(), got.Public()))
			again, err := keys.MarshalPrivateKey(got)
			require.NoError(t, err)
			require.Equal(t, b, again)
		})
	}
}

func TestParsePrivateKeyAcceptsP384(t *testing.T) {
	t.Parallel()
	k := testkeys.ECDSA(t, elliptic.P384())
	got, err := keys.ParsePrivateKey(pkcs8PEM(t, k))
	require.NoError(t, err)
	require.True(t, keys.Equal(&k.PublicKey, got.Public()))
}

func TestParsePrivateKeyErrors(t *testing.T) {
	t.Parallel()
	valid, err := keys.MarshalPrivateKey(testkeys.Generate(t, keys.Ed25519))
	require.NoError(t, err)
	p256 := testkeys.ECDSA(t, elliptic.P256())
	ecDER, err := x509.MarshalECPrivateKey(p256)
	require.NoError(t, err)
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	require.NoError(t, err)

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{name: "nil", in: nil, want: keys.ErrMalformed},
		{name: "garbage", in: []byte("not a key at all"), want: keys.ErrMalformed},
		{name: "raw DER without PEM", in: func() []byte { b, _ := pem.Decode(valid); return b.Bytes }(), want: keys.ErrMalformed},
		{name: "public key PEM", in: pkixPEM(t, &p256.PublicKey), want: keys.ErrMalformed},
		{name: "SEC1 EC PRIVATE KEY", in: pemOf("EC PRIVATE KEY", ecDER), want: keys.ErrMalformed},
		{name: "PKCS#1 RSA PRIVATE KEY", in: pemOf("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(testkeys.WeakRSA(t))), want: keys.ErrMalformed},
		{name: "PRIVATE KEY holding garbage", in: pemOf("PRIVATE KEY", []byte("garbage")), want: keys.ErrMalformed},
		{name: "SEC1 bytes labelled PRIVATE KEY", in: pemOf("PRIVATE KEY", ecDER), want: keys.ErrMalformed},
		{name: "oversized", in: oversized(valid), want: keys.ErrMalformed},
		{name: "ECDSA P-224", in: pkcs8PEM(t, testkeys.ECDSA(t, elliptic.P224())), want: keys.ErrUnsupported},
		{name: "ECDSA P-521", in: pkcs8PEM(t, testkeys.ECDSA(t, elliptic.P521())), want: keys.ErrUnsupported},
		{name: "X25519 cannot sign", in: pkcs8PEM(t, x25519), want: keys.ErrUnsupported},
		{name: "RSA 1024", in: pkcs8PEM(t, testkeys.WeakRSA(t)), want: keys.ErrWeak},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			k, err := keys.ParsePrivateKey(tt.in)
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, k)
		})
	}
}

func TestPublicKeyRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pub  crypto.PublicKey
	}{
		{name: "Ed25519", pub: testkeys.Generate(t, keys.Ed25519).Public()},
		{name: "ECDSA P-256", pub: testkeys.Generate(t, keys.ECDSAP256).Public()},
		{name: "ECDSA P-384", pub: &testkeys.ECDSA(t, elliptic.P384()).PublicKey},
		{name: "RSA-2048", pub: testkeys.Generate(t, keys.RSA2048).Public()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := keys.MarshalPublicKey(tt.pub)
			require.NoError(t, err)
			block, rest := pem.Decode(b)
			require.NotNil(t, block)
			require.Equal(t, "PUBLIC KEY", block.Type)
			require.Empty(t, rest)
			std, err := x509.ParsePKIXPublicKey(block.Bytes)
			require.NoError(t, err, "MarshalPublicKey must write PKIX")
			require.True(t, keys.Equal(tt.pub, std))

			got, err := keys.ParsePublicKey(b)
			require.NoError(t, err)
			require.True(t, keys.Equal(tt.pub, got))
		})
	}
}

func TestParsePublicKeyRawEd25519(t *testing.T) {
	t.Parallel()
	pub := testkeys.Generate(t, keys.Ed25519).Public().(ed25519.PublicKey)
	raw := bytes.Clone([]byte(pub))

	got, err := keys.ParsePublicKey(raw)
	require.NoError(t, err)
	require.IsType(t, ed25519.PublicKey{}, got)
	require.True(t, keys.Equal(pub, got))

	raw[0] ^= 0xff
	require.True(t, keys.Equal(pub, got), "the parsed key must not alias its input")
}

func TestParsePublicKeyErrors(t *testing.T) {
	t.Parallel()
	ed := testkeys.Generate(t, keys.Ed25519).Public().(ed25519.PublicKey)
	valid, err := keys.MarshalPublicKey(ed)
	require.NoError(t, err)
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	require.NoError(t, err)
	privPEM, err := keys.MarshalPrivateKey(testkeys.Generate(t, keys.Ed25519))
	require.NoError(t, err)

	tests := []struct {
		name string
		in   []byte
		want error
	}{
		{name: "nil", in: nil, want: keys.ErrMalformed},
		{name: "garbage", in: []byte("not a key at all"), want: keys.ErrMalformed},
		{name: "raw 31 bytes", in: []byte(ed)[:31], want: keys.ErrMalformed},
		{name: "raw 33 bytes", in: append(bytes.Clone([]byte(ed)), 0), want: keys.ErrMalformed},
		{name: "raw 64-byte Ed25519 private key", in: bytes.Repeat([]byte{7}, ed25519.PrivateKeySize), want: keys.ErrMalformed},
		{name: "private key PEM", in: privPEM, want: keys.ErrMalformed},
		{name: "PKCS#1 RSA PUBLIC KEY", in: pemOf("RSA PUBLIC KEY", x509.MarshalPKCS1PublicKey(testkeys.Generate(t, keys.RSA2048).Public().(*rsa.PublicKey))), want: keys.ErrMalformed},
		{name: "PUBLIC KEY holding garbage", in: pemOf("PUBLIC KEY", []byte("garbage")), want: keys.ErrMalformed},
		{name: "oversized", in: oversized(valid), want: keys.ErrMalformed},
		{name: "ECDSA P-224", in: pkixPEM(t, &testkeys.ECDSA(t, elliptic.P224()).PublicKey), want: keys.ErrUnsupported},
		{name: "ECDSA P-521", in: pkixPEM(t, &testkeys.ECDSA(t, elliptic.P521()).PublicKey), want: keys.ErrUnsupported},
		{name: "X25519", in: pkixPEM(t, x25519.PublicKey()), want: keys.ErrUnsupported},
		{name: "RSA 1024", in: pkixPEM(t, &testkeys.WeakRSA(t).PublicKey), want: keys.ErrWeak},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pub, err := keys.ParsePublicKey(tt.in)
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, pub)
		})
	}
}

func TestCheckAndMarshalPublicKeyErrors(t *testing.T) {
	t.Parallel()
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	require.NoError(t, err)
	ed := testkeys.Generate(t, keys.Ed25519).Public().(ed25519.PublicKey)

	tests := []struct {
		name string
		pub  crypto.PublicKey
		want error
	}{
		{name: "nil", pub: nil, want: keys.ErrUnsupported},
		{name: "short Ed25519", pub: ed[:31], want: keys.ErrMalformed},
		{name: "ECDSA P-224", pub: &testkeys.ECDSA(t, elliptic.P224()).PublicKey, want: keys.ErrUnsupported},
		{name: "ECDSA P-521", pub: &testkeys.ECDSA(t, elliptic.P521()).PublicKey, want: keys.ErrUnsupported},
		{name: "X25519", pub: x25519.PublicKey(), want: keys.ErrUnsupported},
		{name: "Ed25519 private key", pub: ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize)), want: keys.ErrUnsupported},
		{name: "RSA 1024", pub: &testkeys.WeakRSA(t).PublicKey, want: keys.ErrWeak},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.ErrorIs(t, keys.Check(tt.pub), tt.want)
			b, err := keys.MarshalPublicKey(tt.pub)
			require.ErrorIs(t, err, tt.want)
			require.Nil(t, b)
		})
	}
}

func TestEqual(t *testing.T) {
	t.Parallel()
	ed := testkeys.Generate(t, keys.Ed25519).Public()
	edAgain, err := keys.ParsePublicKey([]byte(ed.(ed25519.PublicKey)))
	require.NoError(t, err)
	otherEd := testkeys.Generate(t, keys.Ed25519).Public()
	ec := testkeys.Generate(t, keys.ECDSAP256).Public()
	rs := testkeys.Generate(t, keys.RSA2048).Public()
	rsAgain, err := keys.ParsePublicKey(pkixPEM(t, rs))
	require.NoError(t, err)

	tests := []struct {
		name string
		a, b crypto.PublicKey
		want bool
	}{
		{name: "same Ed25519", a: ed, b: edAgain, want: true},
		{name: "same RSA", a: rs, b: rsAgain, want: true},
		{name: "same ECDSA", a: ec, b: ec, want: true},
		{name: "other Ed25519", a: ed, b: otherEd},
		{name: "Ed25519 and ECDSA", a: ed, b: ec},
		{name: "RSA and ECDSA", a: rs, b: ec},
		{name: "nil and key", a: nil, b: ed},
		{name: "key and nil", a: ed, b: nil},
		{name: "nil and nil", a: nil, b: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, keys.Equal(tt.a, tt.b))
		})
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			pub := testkeys.Generate(t, alg).Public()
			der, err := x509.MarshalPKIXPublicKey(pub)
			require.NoError(t, err)
			sum := sha256.Sum256(der)
			want := "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
			require.Equal(t, want, keys.Fingerprint(pub))
			require.Len(t, want, len("SHA256:")+43)
		})
	}
	t.Run("not a key", func(t *testing.T) {
		t.Parallel()
		require.Equal(t, "SHA256:?", keys.Fingerprint("not a key"))
	})
}

// secretForms returns the encodings of k's secret that must never be printed:
// every line of the PEM body, the whole body, and the raw private scalar or
// seed in raw, hex and base64 form.
func secretForms(t *testing.T, k *keys.PrivateKey) []string {
	t.Helper()
	b, err := keys.MarshalPrivateKey(k)
	require.NoError(t, err)
	block, _ := pem.Decode(b)
	require.NotNil(t, block)
	var forms []string
	body := base64.StdEncoding.EncodeToString(block.Bytes)
	forms = append(forms, body)
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "-----") {
			forms = append(forms, line)
		}
	}
	std, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	require.NoError(t, err)
	var raw [][]byte
	switch s := std.(type) {
	case ed25519.PrivateKey:
		raw = append(raw, s.Seed(), s)
	case *ecdsa.PrivateKey:
		d, err := s.Bytes()
		require.NoError(t, err)
		raw = append(raw, d)
	case *rsa.PrivateKey:
		raw = append(raw, s.D.Bytes(), s.Primes[0].Bytes(), s.Primes[1].Bytes())
	default:
		t.Fatalf("private key of type %T", std)
	}
	for _, r := range raw {
		forms = append(forms, string(r), hex.EncodeToString(r), base64.StdEncoding.EncodeToString(r), fmt.Sprint([]byte(r)))
	}
	return forms
}

func TestPrivateKeyPrintsRedacted(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			k := testkeys.Generate(t, alg)
			forms := secretForms(t, k)
			want := fmt.Sprintf("keys.PrivateKey(%v, %s)", alg, keys.Fingerprint(k.Public()))
			type holder struct {
				Key *keys.PrivateKey
				key *keys.PrivateKey
			}
			printed := []string{
				k.String(), k.GoString(),
				fmt.Sprintf("%v", k), fmt.Sprintf("%+v", k), fmt.Sprintf("%#v", k),
				fmt.Sprintf("%s", k), fmt.Sprintf("%q", k), fmt.Sprintf("%x", k), fmt.Sprintf("%X", k),
				fmt.Sprintf("%d", k), fmt.Sprint(k), fmt.Sprintln(k),
				fmt.Sprintf("%v", []*keys.PrivateKey{k}),
				fmt.Sprintf("%+v", holder{Key: k, key: k}), fmt.Sprintf("%#v", holder{Key: k, key: k}),
				fmt.Errorf("wrapped: %v", k).Error(),
			}
			for _, p := range printed {
				for _, f := range forms {
					require.NotContains(t, p, f)
				}
			}
			require.Equal(t, want, fmt.Sprintf("%v", k))
			require.Equal(t, want, fmt.Sprintf("%#v", k))
			require.Equal(t, want, fmt.Sprintf("%x", k))
		})
	}
	t.Run("nil", func(t *testing.T) {
		t.Parallel()
		var k *keys.PrivateKey
		require.Equal(t, "<nil>", fmt.Sprintf("%v", k))
		require.Equal(t, "keys.PrivateKey(<nil>)", keys.PrivateKey{}.String())
	})
}

func TestDereferencedKeyPrintsRedacted(t *testing.T) {
	t.Parallel()
	k, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%x", "%d"} {
		require.Equal(t, k.String(), fmt.Sprintf(verb, *k), verb)
		require.Equal(t, k.String(), fmt.Sprintf(verb, k), verb)
	}
}

func TestP384KeysReportTheirAlgorithm(t *testing.T) {
	t.Parallel()
	k, err := keys.Generate(nil, keys.ECDSAP384)
	require.NoError(t, err)
	pemBytes, err := keys.MarshalPrivateKey(k)
	require.NoError(t, err)
	parsed, err := keys.ParsePrivateKey(pemBytes)
	require.NoError(t, err)
	require.Equal(t, keys.ECDSAP384, parsed.Algorithm())
}

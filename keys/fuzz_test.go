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
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"strings"
	"sync"
	"testing"

	"filippo.io/edwards25519"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/internal/weakkeys"
	"github.com/kubepact/kubepact/keys"
)

// The fuzz targets below run their seeds as ordinary tests under go test.
// Keys that a property depends on are derived from fixed seeds, so every
// fuzzing worker process holds the same keys as the coordinator.

// fuzzRand returns a deterministic source of randomness.
func fuzzRand(seed byte) *mathrand.ChaCha8 {
	var s [32]byte
	for i := range s {
		s[i] = seed
	}
	return mathrand.NewChaCha8(s)
}

// fuzzEd25519 is the fixed Ed25519 key of the fuzz targets.
var fuzzEd25519 = sync.OnceValues(func() (*keys.PrivateKey, error) {
	return keys.Generate(fuzzRand(1), keys.Ed25519)
})

// fuzzP256 is a fixed ECDSA P-256 key: ECDSA generation ignores its reader,
// so the scalar is fixed instead.
var fuzzP256 = sync.OnceValues(func() (*keys.PrivateKey, error) {
	k, err := ecdsa.ParseRawPrivateKey(elliptic.P256(), bytes.Repeat([]byte{0x42}, 32))
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		return nil, err
	}
	return keys.ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
})

// fuzzRSA is an RSA-2048 key. It differs between processes, so no property
// depends on it being the same in the coordinator and the workers.
var fuzzRSA = sync.OnceValues(func() (*keys.PrivateKey, error) {
	return keys.Generate(nil, keys.RSA2048)
})

func fuzzKey(f *testing.F, get func() (*keys.PrivateKey, error)) *keys.PrivateKey {
	f.Helper()
	k, err := get()
	if err != nil {
		f.Fatal(err)
	}
	return k
}

// fuzzKeyMaterial is a set of encoded keys of every type the parsers meet:
// accepted, unsupported and weak.
type fuzzKeyMaterial struct {
	private [][]byte // PKCS#8 PEM
	public  [][]byte // PKIX PEM or raw Ed25519
}

var fuzzMaterial = sync.OnceValues(func() (fuzzKeyMaterial, error) {
	var m fuzzKeyMaterial
	accepted := []func() (*keys.PrivateKey, error){fuzzEd25519, fuzzP256, fuzzRSA,
		func() (*keys.PrivateKey, error) { return keys.Generate(nil, keys.ECDSAP384) }}
	for _, get := range accepted {
		k, err := get()
		if err != nil {
			return m, err
		}
		priv, err := keys.MarshalPrivateKey(k)
		if err != nil {
			return m, err
		}
		pub, err := keys.MarshalPublicKey(k.Public())
		if err != nil {
			return m, err
		}
		m.private = append(m.private, priv)
		m.public = append(m.public, pub)
	}
	ed, _ := fuzzEd25519()
	m.public = append(m.public, []byte(ed.Public().(ed25519.PublicKey)))

	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		return m, err
	}
	x25519, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return m, err
	}
	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		return m, err
	}
	for _, k := range []any{p224, x25519, weak} {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			return m, err
		}
		m.private = append(m.private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
		pubDER, err := x509.MarshalPKIXPublicKey(k.(interface{ Public() crypto.PublicKey }).Public())
		if err != nil {
			return m, err
		}
		m.public = append(m.public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}))
	}
	return m, nil
})

// fuzzVariants returns valid and damaged forms of a PEM or raw encoding.
func fuzzVariants(valid []byte) [][]byte {
	out := [][]byte{valid, valid[:len(valid)/2], valid[:len(valid)-1]}
	flipped := bytes.Clone(valid)
	flipped[len(flipped)/2] ^= 0x01
	out = append(out, flipped)
	if block, _ := pem.Decode(valid); block != nil {
		out = append(out,
			block.Bytes, // DER without armour
			pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: block.Bytes[:len(block.Bytes)-3]}),
			pem.EncodeToMemory(&pem.Block{Type: "RSA " + block.Type, Bytes: block.Bytes}),
			pem.EncodeToMemory(&pem.Block{Type: block.Type, Headers: map[string]string{"Proc-Type": "4,ENCRYPTED"}, Bytes: block.Bytes}),
			bytes.ReplaceAll(valid, []byte("\n"), []byte("\r\n")),
			append(bytes.Clone(valid), "trailing garbage\n"...),
			append(bytes.Clone(valid), valid...),
		)
	}
	return out
}

// wantsSentinel fails t unless err wraps one of the sentinels.
func wantsSentinel(t *testing.T, err error, sentinels ...error) {
	t.Helper()
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return
		}
	}
	t.Fatalf("error %q wraps none of %q", err, sentinels)
}

// pemSecrets returns the forms in which the secret body of every PEM-like
// block of data could leak into a message: each base64 line of more than 16
// characters, the whole body, and the decoded bytes as text and hex.
func pemSecrets(data []byte) []string {
	var out []string
	add := func(s string) {
		if len(s) > 16 {
			out = append(out, s)
		}
	}
	isBase64 := func(s string) bool {
		return strings.Trim(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") == ""
	}
	text := string(data)
	for {
		begin := strings.Index(text, "-----BEGIN")
		if begin < 0 {
			break
		}
		text = text[begin:]
		nl := strings.IndexByte(text, '\n')
		if nl < 0 {
			break
		}
		text = text[nl+1:]
		body := text
		if end := strings.Index(body, "-----END"); end >= 0 {
			body = body[:end]
		}
		var joined strings.Builder
		for _, line := range strings.Split(body, "\n") {
			line = strings.TrimSpace(line)
			if isBase64(line) {
				add(line)
				joined.WriteString(line)
			}
		}
		add(joined.String())
	}
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		add(string(block.Bytes))
		add(hex.EncodeToString(block.Bytes))
		add(base64.StdEncoding.EncodeToString(block.Bytes))
	}
	return out
}

func FuzzParsePublicKey(f *testing.F) {
	m, err := fuzzMaterial()
	if err != nil {
		f.Fatal(err)
	}
	for _, pub := range m.public {
		for _, v := range fuzzVariants(pub) {
			f.Add(v)
		}
	}
	f.Add(m.private[0])
	f.Add([]byte{})
	f.Add([]byte("-----" + strings.Repeat("A", 27))) // 32 bytes, PEM-looking
	f.Add(bytes.Repeat([]byte{0}, ed25519.PublicKeySize))
	f.Add(bytes.Repeat([]byte{0xff}, ed25519.PrivateKeySize))
	f.Add(append(bytes.Clone(m.public[0]), bytes.Repeat([]byte("\n"), keys.MaxPEMSize)...))
	points, _ := weakkeys.SmallOrder()
	encodings, _ := weakkeys.NonCanonical()
	for _, enc := range append(points, encodings...) {
		f.Add(enc)
		if der, err := x509.MarshalPKIXPublicKey(ed25519.PublicKey(enc)); err == nil {
			f.Add(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
		}
	}

	f.Fuzz(func(t *testing.T, input []byte) {
		data := bytes.Clone(input) // the engine's input must not be modified
		pub, err := keys.ParsePublicKey(data)
		if err != nil {
			if pub != nil {
				t.Fatalf("ParsePublicKey returned a key and error %q", err)
			}
			wantsSentinel(t, err, keys.ErrMalformed, keys.ErrUnsupported, keys.ErrWeak, keys.ErrWeakKey)
			return
		}
		if err := keys.Check(pub); err != nil {
			t.Fatalf("parsed key fails Check: %v", err)
		}
		if ed, ok := pub.(ed25519.PublicKey); ok && weakEd25519(ed) {
			t.Fatalf("accepted Ed25519 key %x of small order or in a non-canonical encoding", []byte(ed))
		}
		if fp := keys.Fingerprint(pub); fp == "SHA256:?" {
			t.Fatalf("parsed key has no fingerprint")
		}
		if !keys.Equal(pub, pub) {
			t.Fatalf("parsed key %T is not Equal to itself", pub)
		}
		enc, err := keys.MarshalPublicKey(pub)
		if err != nil {
			t.Fatalf("MarshalPublicKey of a parsed key: %v", err)
		}
		again, err := keys.ParsePublicKey(enc)
		if err != nil {
			t.Fatalf("re-parsing a marshalled key: %v", err)
		}
		if !keys.Equal(pub, again) {
			t.Fatalf("public key changed in a marshal round trip")
		}
		// The parsed key must not alias its input.
		for i := range data {
			data[i] ^= 0xff
		}
		if !keys.Equal(pub, again) {
			t.Fatalf("parsed key aliases its input %x", input)
		}
	})
}

func FuzzParsePrivateKey(f *testing.F) {
	m, err := fuzzMaterial()
	if err != nil {
		f.Fatal(err)
	}
	for _, priv := range m.private {
		for _, v := range fuzzVariants(priv) {
			f.Add(v)
		}
	}
	f.Add(m.public[0])
	f.Add([]byte{})
	f.Add([]byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n"))
	f.Add(append(bytes.Clone(m.private[0]), bytes.Repeat([]byte("\n"), keys.MaxPEMSize)...))

	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := keys.ParsePrivateKey(data)
		if err != nil {
			if k != nil {
				t.Fatalf("ParsePrivateKey returned a key and error %q", err)
			}
			wantsSentinel(t, err, keys.ErrMalformed, keys.ErrUnsupported, keys.ErrWeak)
			msg := err.Error()
			for _, s := range pemSecrets(data) {
				if strings.Contains(msg, s) {
					t.Fatalf("error %q quotes the input's key material %q", msg, s)
				}
			}
			return
		}
		if err := keys.Check(k.Public()); err != nil {
			t.Fatalf("parsed key fails Check: %v", err)
		}
		enc, err := keys.MarshalPrivateKey(k)
		if err != nil {
			t.Fatalf("MarshalPrivateKey of a parsed key: %v", err)
		}
		again, err := keys.ParsePrivateKey(enc)
		if err != nil {
			t.Fatalf("re-parsing a marshalled key: %v", err)
		}
		if !keys.Equal(k.Public(), again.Public()) || k.Algorithm() != again.Algorithm() {
			t.Fatalf("key changed in a marshal round trip: %v, then %v", k, again)
		}
		printed := fmt.Sprintf("%v %+v %#v %s %q %x %v %#v", k, k, k, k, k, k, *k, *k)
		for _, s := range append(pemSecrets(data), pemSecrets(enc)...) {
			if strings.Contains(printed, s) {
				t.Fatalf("a printed private key shows its key material %q", s)
			}
		}
		sig, err := keys.SignMessage(nil, k, data)
		if err != nil {
			t.Fatalf("a parsed key cannot sign: %v", err)
		}
		if err := keys.VerifyMessage(again.Public(), data, sig); err != nil {
			t.Fatalf("signature of a parsed key does not verify: %v", err)
		}
	})
}

// fuzzMessages are the only messages the fuzz targets sign.
var fuzzMessages = [][]byte{
	[]byte("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw=="),
	{},
	[]byte("kubepact"),
}

func FuzzVerifyMessage(f *testing.F) {
	signers := []*keys.PrivateKey{fuzzKey(f, fuzzEd25519), fuzzKey(f, fuzzP256), fuzzKey(f, fuzzRSA)}
	for i, k := range signers {
		for _, msg := range fuzzMessages {
			sig, err := keys.SignMessage(nil, k, msg)
			if err != nil {
				f.Fatal(err)
			}
			alg := uint8(i)
			f.Add(alg, msg, sig)
			f.Add(alg, append(bytes.Clone(msg), 0), sig)
			f.Add(alg, msg, sig[:len(sig)-1])
			f.Add(alg, msg, append(bytes.Clone(sig), 0))
			flipped := bytes.Clone(sig)
			flipped[0] ^= 0x80
			f.Add(alg, msg, flipped)
			f.Add(alg, msg, []byte{})
		}
	}

	f.Fuzz(func(t *testing.T, alg uint8, msg, sig []byte) {
		k := signers[int(alg)%len(signers)]
		err := keys.VerifyMessage(k.Public(), msg, sig)
		if err != nil {
			if !errors.Is(err, keys.ErrBadSignature) {
				t.Fatalf("VerifyMessage with an accepted key: %v, want ErrBadSignature", err)
			}
			if k.Algorithm() == keys.Ed25519 {
				// Ed25519 is deterministic: the real signature must verify.
				real, _ := keys.SignMessage(nil, k, msg)
				if err := keys.VerifyMessage(k.Public(), msg, real); err != nil {
					t.Fatalf("the real signature does not verify: %v", err)
				}
			}
			return
		}
		known := false
		for _, m := range fuzzMessages {
			known = known || bytes.Equal(m, msg)
		}
		if !known {
			t.Fatalf("%v signature %x verifies over message %q, which was never signed", k.Algorithm(), sig, msg)
		}
		if a := k.Algorithm(); a == keys.Ed25519 || a == keys.RSA2048 {
			// Deterministic schemes: only the real signature verifies.
			real, _ := keys.SignMessage(nil, k, msg)
			if !bytes.Equal(real, sig) {
				t.Fatalf("%v: signature %x verifies, but the real one is %x", a, sig, real)
			}
		}
	})
}

// weakEd25519 reports, independently of package keys, whether enc is a
// point of small order or a non-canonical encoding.
func weakEd25519(enc []byte) bool {
	p, err := new(edwards25519.Point).SetBytes(enc)
	if err != nil {
		return false
	}
	return !bytes.Equal(p.Bytes(), enc) ||
		new(edwards25519.Point).MultByCofactor(p).Equal(edwards25519.NewIdentityPoint()) == 1
}

// FuzzVerifyMessageAnyEd25519Key verifies arbitrary signatures under
// arbitrary 32-byte Ed25519 keys: whatever verifies, the key is neither of
// small order nor non-canonical, so no signature was forged without a
// private key.
func FuzzVerifyMessageAnyEd25519Key(f *testing.F) {
	points, _ := weakkeys.SmallOrder()
	encodings, _ := weakkeys.NonCanonical()
	real := fuzzKey(f, fuzzEd25519)
	for _, enc := range append(append(points, encodings...), real.Public().(ed25519.PublicKey)) {
		forged, _ := weakkeys.NewSigner(enc).Sign(nil, nil, nil)
		for _, msg := range fuzzMessages {
			f.Add(enc, msg, forged)
			sig, _ := keys.SignMessage(nil, real, msg)
			f.Add(enc, msg, sig)
		}
	}

	f.Fuzz(func(t *testing.T, pub, msg, sig []byte) {
		if len(pub) != ed25519.PublicKeySize {
			return
		}
		err := keys.VerifyMessage(ed25519.PublicKey(pub), msg, sig)
		if err == nil && weakEd25519(pub) {
			t.Fatalf("signature %x over %q verifies under weak key %x", sig, msg, pub)
		}
		if err != nil {
			wantsSentinel(t, err, keys.ErrBadSignature, keys.ErrMalformed, keys.ErrWeakKey)
		}
		if weakEd25519(pub) && !errors.Is(err, keys.ErrWeakKey) {
			t.Fatalf("weak key %x: error %v, want ErrWeakKey", pub, err)
		}
	})
}

func FuzzFromSecret(f *testing.F) {
	m, err := fuzzMaterial()
	if err != nil {
		f.Fatal(err)
	}
	for i, priv := range m.private {
		f.Add(priv, []byte(nil), false)
		f.Add(priv, m.public[i], true)
		f.Add(priv, m.public[(i+1)%len(m.public)], true)
		f.Add(priv[:len(priv)/2], m.public[i], true)
	}
	f.Add([]byte(nil), []byte(nil), true)

	f.Fuzz(func(t *testing.T, priv, pub []byte, hasPub bool) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: keys.SecretName, Namespace: keys.DefaultNamespace},
			Data:       map[string][]byte{keys.PrivateKeySecretKey: priv},
		}
		if hasPub {
			s.Data[keys.PublicKeySecretKey] = pub
		}
		k, err := keys.FromSecret(s)
		if err != nil {
			wantsSentinel(t, err, keys.ErrMalformed, keys.ErrUnsupported, keys.ErrWeak)
			for _, secret := range pemSecrets(priv) {
				if strings.Contains(err.Error(), secret) {
					t.Fatalf("error %q quotes the private key material %q", err, secret)
				}
			}
			return
		}
		if hasPub {
			want, err := keys.ParsePublicKey(pub)
			if err != nil || !keys.Equal(want, k.Public()) {
				t.Fatalf("FromSecret accepted a public key that is not the private key's (%v)", err)
			}
		}
		again, err := keys.Secret(keys.DefaultNamespace, k)
		if err != nil {
			t.Fatalf("Secret of a key read from a Secret: %v", err)
		}
		k2, err := keys.FromSecret(again)
		if err != nil || !keys.Equal(k.Public(), k2.Public()) {
			t.Fatalf("key changed in a Secret round trip (%v)", err)
		}
	})
}

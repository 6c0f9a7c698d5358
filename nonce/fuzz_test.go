package nonce_test

import (
	"bytes"
	"encoding/base64"
	"errors"
	mathrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
)

// The fuzz targets below run their seeds as ordinary tests under go test.
// Their key and nonces come from fixed seeds, so every fuzzing worker process
// holds the same ones as the coordinator.

func fuzzRand(seed byte) *mathrand.ChaCha8 {
	var s [32]byte
	for i := range s {
		s[i] = seed
	}
	return mathrand.NewChaCha8(s)
}

func fuzzNonce(f *testing.F, seed byte) nonce.Nonce {
	f.Helper()
	n, err := nonce.Generate(fuzzRand(seed))
	if err != nil {
		f.Fatal(err)
	}
	return n
}

// fuzzTextVariants returns a valid nonce text and damaged forms of it.
func fuzzTextVariants(text string) []string {
	last := text[nonce.TextSize-3] // the last character before "=="
	return []string{
		text,
		text[:nonce.TextSize-1],
		text + "=",
		text[:nonce.TextSize-2] + "AA", // padding replaced
		text[:nonce.TextSize-3] + string(last^1) + "==", // non-zero trailing bits
		base64.URLEncoding.EncodeToString(make([]byte, nonce.Size)),
		base64.RawStdEncoding.EncodeToString(make([]byte, nonce.Size+2)),
		strings.Replace(text, text[:2], "\r\n", 1),
		strings.Repeat("A", nonce.TextSize),
		" " + text[1:],
		"",
	}
}

func FuzzParse(f *testing.F) {
	for seed := range byte(3) {
		for _, v := range fuzzTextVariants(fuzzNonce(f, seed).Text()) {
			f.Add(v)
		}
	}

	f.Fuzz(func(t *testing.T, text string) {
		n, err := nonce.Parse(text)
		if err != nil {
			if !errors.Is(err, nonce.ErrMalformed) {
				t.Fatalf("Parse error %q does not wrap ErrMalformed", err)
			}
			if !n.IsZero() {
				t.Fatalf("Parse returned a nonce and error %q", err)
			}
			return
		}
		if n.Text() != text || len(n.Text()) != nonce.TextSize || n.IsZero() {
			t.Fatalf("Parse(%q) = %q", text, n.Text())
		}
		raw, err := base64.StdEncoding.DecodeString(text)
		if err != nil || len(raw) != nonce.Size || base64.StdEncoding.EncodeToString(raw) != text {
			t.Fatalf("Parse accepted %q, which is not the canonical base64 of %d bytes", text, nonce.Size)
		}
		again, err := nonce.Parse(n.Text())
		if err != nil || !again.Equal(n) {
			t.Fatalf("re-parsing %q: %v", text, err)
		}
		if strings.Contains(n.String(), text) || strings.Contains(n.GoString(), text) {
			t.Fatalf("nonce prints unredacted: %s", n.String())
		}
	})
}

func FuzzVerify(f *testing.F) {
	key, err := keys.Generate(fuzzRand(1), keys.Ed25519)
	if err != nil {
		f.Fatal(err)
	}
	pub := key.Public()
	for seed := range byte(3) {
		n := fuzzNonce(f, seed)
		sig, err := nonce.Sign(nil, key, n)
		if err != nil {
			f.Fatal(err)
		}
		other := fuzzNonce(f, seed+10)
		f.Add(n.Text(), sig)
		f.Add(other.Text(), sig)
		f.Add(n.Text(), sig[:len(sig)-1])
		f.Add(n.Text(), append(bytes.Clone(sig), 0))
		flipped := bytes.Clone(sig)
		flipped[len(flipped)-1] ^= 0x10
		f.Add(n.Text(), flipped)
		f.Add(n.Text(), []byte{})
	}
	f.Add("", []byte{})

	f.Fuzz(func(t *testing.T, text string, sig []byte) {
		n, err := nonce.Parse(text)
		if err != nil {
			// A nonce that does not parse is the zero Nonce, which never
			// verifies.
			if err := nonce.Verify(pub, n, sig); !errors.Is(err, nonce.ErrMalformed) {
				t.Fatalf("Verify of the zero nonce: %v, want ErrMalformed", err)
			}
			return
		}
		real, err := nonce.Sign(nil, key, n)
		if err != nil {
			t.Fatalf("Sign: %v", err)
		}
		err = nonce.Verify(pub, n, sig)
		switch {
		case err == nil && !bytes.Equal(sig, real):
			t.Fatalf("signature %x verifies over %q, but the real one is %x", sig, text, real)
		case err != nil && bytes.Equal(sig, real):
			t.Fatalf("the real signature does not verify: %v", err)
		case err != nil && !errors.Is(err, keys.ErrBadSignature):
			t.Fatalf("Verify error %q does not wrap keys.ErrBadSignature", err)
		}
	})
}

func FuzzFromSecret(f *testing.F) {
	n := fuzzNonce(f, 0)
	issued := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	s := nonce.Secret("cl-consumer", nonce.Entry{Nonce: n, IssuedAt: issued})
	annotation := s.Annotations[nonce.IssuedAtAnnotation]
	for _, text := range fuzzTextVariants(n.Text()) {
		f.Add([]byte(text), annotation, true)
	}
	for _, a := range []string{
		"", "2026-01-02T03:04:05Z", "2026-01-02T03:04:05+01:00", "2026-01-02 03:04:05",
		"0000-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00", "2026-01-02T03:04:05.123456789123Z",
	} {
		f.Add([]byte(n.Text()), a, true)
	}
	f.Add([]byte(n.Text()), "", false)

	created := metav1.NewTime(time.Date(2025, 6, 7, 8, 9, 10, 0, time.UTC))
	f.Fuzz(func(t *testing.T, data []byte, annotation string, hasAnnotation bool) {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{
				Name:              nonce.SecretName,
				Namespace:         "liqo-tenant-cl-consumer",
				CreationTimestamp: created,
			},
			Data: map[string][]byte{nonce.SecretKey: data},
		}
		if hasAnnotation {
			s.Annotations = map[string]string{nonce.IssuedAtAnnotation: annotation}
		}
		e, err := nonce.FromSecret(s)
		if err != nil {
			if !errors.Is(err, nonce.ErrMalformed) {
				t.Fatalf("FromSecret error %q does not wrap ErrMalformed", err)
			}
			return
		}
		if e.Nonce.Text() != string(data) {
			t.Fatalf("FromSecret read nonce %q from %q", e.Nonce.Text(), data)
		}
		if !hasAnnotation && !e.IssuedAt.Equal(created.Time) {
			t.Fatalf("IssuedAt = %v, want the creation time %v", e.IssuedAt, created.Time)
		}
		// What FromSecret read, Secret must write back readably.
		again, err := nonce.FromSecret(nonce.Secret("cl-consumer", e))
		if err != nil {
			t.Fatalf("FromSecret cannot read the Secret written for its own entry (issued %q): %v", annotation, err)
		}
		if !again.Nonce.Equal(e.Nonce) || !again.IssuedAt.Equal(e.IssuedAt) {
			t.Fatalf("entry changed in a Secret round trip: issued %v, then %v", e.IssuedAt, again.IssuedAt)
		}
	})
}

// FuzzFromSecretTTL checks that a TTL annotation FromSecret accepts is a
// positive duration that Secret writes back as it was read.
func FuzzFromSecretTTL(f *testing.F) {
	n := fuzzNonce(f, 0)
	for _, v := range []string{"10m0s", "1m30.000000001s", "1.5h", "+5m", "0s", "-1m", "600", "", "9223372036854775807ns", "2562047h47m16.854775807s", "1e3s"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, ttl string) {
		s := nonce.Secret("cl-consumer", nonce.Entry{Nonce: n, IssuedAt: time.Unix(0, 0)})
		s.Annotations[nonce.TTLAnnotation] = ttl
		e, err := nonce.FromSecret(s)
		if err != nil {
			if !errors.Is(err, nonce.ErrMalformed) {
				t.Fatalf("FromSecret error %q does not wrap ErrMalformed", err)
			}
			return
		}
		if e.TTL <= 0 {
			t.Fatalf("TTL annotation %q read as %v", ttl, e.TTL)
		}
		again, err := nonce.FromSecret(nonce.Secret("cl-consumer", e))
		if err != nil || again.TTL != e.TTL {
			t.Fatalf("TTL %v (from %q) changed in a Secret round trip: %v, %v", e.TTL, ttl, again.TTL, err)
		}
	})
}

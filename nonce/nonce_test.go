package nonce_test

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
)

// counting returns the 64 bytes 0, 1, …, 63.
func counting() io.Reader {
	b := make([]byte, nonce.Size)
	for i := range b {
		b[i] = byte(i)
	}
	return bytes.NewReader(b)
}

// countingText is the standard base64 of counting's bytes.
const countingText = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw=="

func generate(t *testing.T) nonce.Nonce {
	t.Helper()
	n, err := nonce.Generate(nil)
	require.NoError(t, err)
	return n
}

func TestSizes(t *testing.T) {
	t.Parallel()
	require.Equal(t, 64, nonce.Size)
	require.Equal(t, 88, nonce.TextSize)
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	n, err := nonce.Generate(counting())
	require.NoError(t, err)
	require.Equal(t, countingText, n.Text())
	require.Len(t, n.Text(), nonce.TextSize)
	require.False(t, n.IsZero())

	a, b := generate(t), generate(t)
	require.Len(t, a.Text(), nonce.TextSize)
	require.False(t, a.Equal(b), "two nonces from crypto/rand")
}

func TestGenerateShortReader(t *testing.T) {
	t.Parallel()
	errRead := errors.New("entropy exhausted")
	tests := []struct {
		name string
		r    io.Reader
		want error
	}{
		{name: "63 bytes", r: bytes.NewReader(make([]byte, nonce.Size-1)), want: io.ErrUnexpectedEOF},
		{name: "empty", r: bytes.NewReader(nil), want: io.EOF},
		{name: "failing", r: io.MultiReader(bytes.NewReader(make([]byte, 10)), errReader{errRead}), want: errRead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, err := nonce.Generate(tt.r)
			require.ErrorIs(t, err, tt.want)
			require.True(t, n.IsZero())
		})
	}
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

func TestParse(t *testing.T) {
	t.Parallel()
	n, err := nonce.Parse(countingText)
	require.NoError(t, err)
	require.Equal(t, countingText, n.Text())
	want, err := nonce.Generate(counting())
	require.NoError(t, err)
	require.True(t, want.Equal(n))

	g := generate(t)
	again, err := nonce.Parse(g.Text())
	require.NoError(t, err)
	require.True(t, g.Equal(again))
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	body := countingText[:86] // the 86 data characters before "=="
	tests := []struct {
		name string
		text string
	}{
		{name: "empty", text: ""},
		{name: "87 characters", text: countingText[:87]},
		{name: "89 characters", text: countingText + "="},
		{name: "unpadded", text: body},
		{name: "88 data characters, no padding", text: body + "AA"},
		{name: "single padding", text: body + "A="},
		{name: "padding in the middle", text: "AA==" + countingText[4:]},
		{name: "triple padding", text: body[:85] + "==="},
		{name: "non-zero trailing bits", text: body[:85] + "x=="},
		{name: "URL-safe alphabet", text: strings.NewReplacer("+", "-", "/", "_").Replace(countingText)},
		{name: "invalid character", text: "!" + countingText[1:]},
		{name: "space", text: " " + countingText[1:]},
		{name: "newline", text: "\n" + countingText[1:]},
		{name: "carriage return", text: countingText[:40] + "\r" + countingText[41:]},
		{name: "non-ASCII", text: "é" + countingText[2:]},
		{name: "decoded bytes", text: string(bytes.Repeat([]byte{0xff}, nonce.TextSize))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			n, err := nonce.Parse(tt.text)
			require.ErrorIs(t, err, nonce.ErrMalformed)
			require.True(t, n.IsZero())
		})
	}
}

func TestEqual(t *testing.T) {
	t.Parallel()
	a, err := nonce.Parse(countingText)
	require.NoError(t, err)
	b, err := nonce.Generate(counting())
	require.NoError(t, err)
	c := generate(t)
	tests := []struct {
		name string
		x, y nonce.Nonce
		want bool
	}{
		{name: "same text", x: a, y: b, want: true},
		{name: "different text", x: a, y: c},
		{name: "zero and nonce", x: nonce.Nonce{}, y: a},
		{name: "zero and zero", x: nonce.Nonce{}, y: nonce.Nonce{}, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, tt.x.Equal(tt.y))
			require.Equal(t, tt.want, tt.y.Equal(tt.x))
		})
	}
}

func TestPrintsRedacted(t *testing.T) {
	t.Parallel()
	n, err := nonce.Parse(countingText)
	require.NoError(t, err)
	e := nonce.Entry{Nonce: n, IssuedAt: time.Unix(0, 0)}
	printed := []string{
		n.String(), n.GoString(),
		fmt.Sprintf("%v", n), fmt.Sprintf("%+v", n), fmt.Sprintf("%#v", n),
		fmt.Sprintf("%s", n), fmt.Sprintf("%q", n), fmt.Sprintf("%x", n), fmt.Sprintf("%X", n),
		fmt.Sprint(n), fmt.Sprintf("%v", &n),
		fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e),
		fmt.Sprintf("%v", []nonce.Nonce{n}),
		fmt.Errorf("wrapped: %v", n).Error(),
	}
	// Only a short prefix may appear: never enough to replay the nonce.
	secret := []string{countingText[:8], countingText[40:48], countingText[80:], hex.EncodeToString([]byte(countingText[:8]))}
	for _, p := range printed {
		for _, s := range secret {
			require.NotContains(t, p, s)
		}
	}
	require.Equal(t, "nonce(AAEC…)", n.String())
	require.Equal(t, "nonce(<zero>)", nonce.Nonce{}.String())
}

var algorithms = []keys.Algorithm{keys.Ed25519, keys.ECDSAP256, keys.RSA2048}

func TestSignVerify(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			k := testkeys.Generate(t, alg)
			n := generate(t)
			sig, err := nonce.Sign(nil, k, n)
			require.NoError(t, err)
			require.NoError(t, nonce.Verify(k.Public(), n, sig))

			// What is signed is the base64 text, as Liqo signs it.
			require.NoError(t, keys.VerifyMessage(k.Public(), []byte(n.Text()), sig))
			if pub, ok := k.Public().(ed25519.PublicKey); ok {
				require.True(t, ed25519.Verify(pub, []byte(n.Text()), sig))
			}
		})
	}
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	for _, alg := range algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			k := testkeys.Generate(t, alg)
			n := generate(t)
			sig, err := nonce.Sign(nil, k, n)
			require.NoError(t, err)
			other := testkeys.Generate(t, keys.Ed25519)
			if alg == keys.Ed25519 {
				other = testkeys.Generate(t, keys.ECDSAP256)
			}

			tests := []struct {
				name string
				pub  crypto.PublicKey
				n    nonce.Nonce
				sig  []byte
			}{
				{name: "wrong nonce", pub: k.Public(), n: generate(t), sig: sig},
				{name: "another key", pub: other.Public(), n: n, sig: sig},
				{name: "another key of the same algorithm", pub: sameAlgorithmOther(t, alg), n: n, sig: sig},
				{name: "truncated signature", pub: k.Public(), n: n, sig: sig[:len(sig)-1]},
				{name: "no signature", pub: k.Public(), n: n, sig: nil},
			}
			for _, tt := range tests {
				if tt.pub == nil {
					continue
				}
				t.Run(tt.name, func(t *testing.T) {
					t.Parallel()
					require.ErrorIs(t, nonce.Verify(tt.pub, tt.n, tt.sig), keys.ErrBadSignature)
				})
			}
		})
	}
}

// sameAlgorithmOther returns another public key of alg, or nil for RSA, whose
// keys are too slow to generate twice.
func sameAlgorithmOther(t *testing.T, alg keys.Algorithm) crypto.PublicKey {
	t.Helper()
	if alg == keys.RSA2048 {
		return nil
	}
	return testkeys.Generate(t, alg).Public()
}

func TestVerifyRejectsSignatureOverDecodedBytes(t *testing.T) {
	t.Parallel()
	k := testkeys.Generate(t, keys.Ed25519)
	n, err := nonce.Generate(counting())
	require.NoError(t, err)
	raw, err := io.ReadAll(counting())
	require.NoError(t, err)
	sig, err := keys.SignMessage(nil, k, raw)
	require.NoError(t, err)
	require.ErrorIs(t, nonce.Verify(k.Public(), n, sig), keys.ErrBadSignature)
}

func TestZeroNonce(t *testing.T) {
	t.Parallel()
	k := testkeys.Generate(t, keys.Ed25519)
	sig, err := nonce.Sign(nil, k, nonce.Nonce{})
	require.ErrorIs(t, err, nonce.ErrMalformed)
	require.Nil(t, sig)

	// Even a valid signature over the empty text does not verify a zero nonce.
	empty, err := keys.SignMessage(nil, k, nil)
	require.NoError(t, err)
	require.ErrorIs(t, nonce.Verify(k.Public(), nonce.Nonce{}, empty), nonce.ErrMalformed)
	require.True(t, nonce.Nonce{}.IsZero())
}

func TestSignErrors(t *testing.T) {
	t.Parallel()
	sig, err := nonce.Sign(nil, nil, generate(t))
	require.ErrorIs(t, err, keys.ErrUnsupported)
	require.Nil(t, sig)
}

func TestEntryExpired(t *testing.T) {
	t.Parallel()
	issued := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := nonce.Entry{Nonce: generate(t), IssuedAt: issued}
	const ttl = time.Minute
	tests := []struct {
		name string
		now  time.Time
		want bool
	}{
		{name: "before issue, within the TTL", now: issued.Add(-30 * time.Second)},
		{name: "issued further ahead than the TTL", now: issued.Add(-time.Hour), want: true},
		{name: "at issue", now: issued},
		{name: "just before TTL", now: issued.Add(ttl - time.Nanosecond)},
		{name: "at TTL", now: issued.Add(ttl), want: true},
		{name: "after TTL", now: issued.Add(ttl + time.Hour), want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, e.Expired(tt.now, ttl))
		})
	}
}

func TestEntryIssuedInTheFarFutureIsExpired(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	require.True(t, nonce.Entry{IssuedAt: now.Add(11 * time.Minute)}.Expired(now, 10*time.Minute))
	require.False(t, nonce.Entry{IssuedAt: now.Add(time.Minute)}.Expired(now, 10*time.Minute), "a little clock skew is tolerated")
	require.False(t, nonce.Entry{IssuedAt: now.Add(-time.Minute)}.Expired(now, 10*time.Minute))
}

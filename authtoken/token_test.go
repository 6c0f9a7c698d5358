package authtoken_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/fake"
)

func TestGenerate(t *testing.T) {
	r := bytes.NewReader(bytes.Repeat([]byte{0xab}, authtoken.Size))
	tok, err := authtoken.Generate(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Reveal(); got != strings.Repeat("ab", authtoken.Size) {
		t.Fatalf("text %q", got)
	}
	if _, err := authtoken.Generate(bytes.NewReader(make([]byte, authtoken.Size-1))); err == nil {
		t.Fatal("Generate from a short reader succeeded")
	}
}

func TestParse(t *testing.T) {
	valid := strings.Repeat("0123456789abcdef", 8)
	if _, err := authtoken.Parse(valid); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{
		"Empty":     "",
		"Short":     valid[1:],
		"Long":      valid + "0",
		"Huge":      strings.Repeat("a", 1<<20),
		"Uppercase": strings.ToUpper(valid),
		"NotHex":    valid[:127] + "g",
		"Space":     valid[:127] + " ",
		"Unicode":   valid[:126] + "é",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := authtoken.Parse(s)
			if !errors.Is(err, authtoken.ErrMalformed) {
				t.Fatalf("Parse: %v, want ErrMalformed", err)
			}
			if s != "" && strings.Contains(err.Error(), s) {
				t.Fatal("the error quotes the input")
			}
		})
	}
}

func TestEqual(t *testing.T) {
	a, _ := authtoken.Generate(rand.Reader)
	b, _ := authtoken.Generate(rand.Reader)
	a2, _ := authtoken.Parse(a.Reveal())
	for _, tc := range []struct {
		x, y authtoken.Token
		want bool
	}{{a, a2, true}, {a, b, false}, {a, authtoken.Token{}, false}, {authtoken.Token{}, authtoken.Token{}, false}} {
		if got := tc.x.Equal(tc.y); got != tc.want {
			t.Errorf("Equal = %t, want %t", got, tc.want)
		}
	}
}

func TestRedacted(t *testing.T) {
	tok, _ := authtoken.Generate(rand.Reader)
	out := fmt.Sprintf("%v %+v %#v %s %q %x %X %d", tok, tok, tok, tok, tok, tok, tok, tok) +
		fmt.Sprint(authtoken.Remote{ProviderID: "p", Token: tok}) + fmt.Sprintf("%#v", &authtoken.Remote{Token: tok})
	if strings.Contains(out, tok.Reveal()[:16]) {
		t.Fatalf("formatting shows the token: %s", out)
	}
	store := &fake.TokenStore{}
	if err := store.Create(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %#v", store, store); strings.Contains(s, tok.Reveal()[:16]) {
		t.Fatalf("the fake store shows the token: %s", s)
	}
}

// TestEnsure: Ensure creates a token once and never overwrites a valid one;
// Rotate replaces it.
func TestEnsure(t *testing.T) {
	ctx := context.Background()
	s := &fake.TokenStore{}
	first, err := authtoken.Ensure(ctx, s, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	again, err := authtoken.Ensure(ctx, s, rand.Reader)
	if err != nil || !again.Equal(first) {
		t.Fatalf("second Ensure: equal=%t, %v", again.Equal(first), err)
	}
	if s.Writes() != 1 {
		t.Fatalf("%d writes, want 1", s.Writes())
	}
	next, err := authtoken.Rotate(ctx, s, rand.Reader)
	if err != nil || next.Equal(first) {
		t.Fatalf("Rotate: %v", err)
	}
	if got, _ := s.Get(ctx); !got.Equal(next) {
		t.Fatal("Rotate did not store the new token")
	}
	if _, err := authtoken.Ensure(ctx, s, bytes.NewReader(nil)); err != nil {
		t.Fatalf("Ensure with a valid token read randomness: %v", err)
	}
}

func TestRemoteSecret(t *testing.T) {
	tok, _ := authtoken.Generate(rand.Reader)
	sec := authtoken.RemoteSecret("liqo", authtoken.Remote{ProviderID: "provider-a", Token: tok, Status: authtoken.StatusPending})
	if sec.Name != "remote-token-provider-a" || sec.Namespace != "liqo" {
		t.Fatalf("Secret %s/%s", sec.Namespace, sec.Name)
	}
	if v, ok := sec.Labels["discovery.liqo.io/auth-token"]; !ok || v != "" || sec.Labels["discovery.liqo.io/cluster-id"] != "provider-a" {
		t.Fatalf("labels %v", sec.Labels)
	}
	r, err := authtoken.ParseRemoteSecret(sec)
	if err != nil || !r.Token.Equal(tok) || r.Status != authtoken.StatusPending {
		t.Fatalf("ParseRemoteSecret: %+v, %v", r, err)
	}
	empty := authtoken.RemoteSecret("liqo", authtoken.Remote{ProviderID: "provider-b"})
	if r, err := authtoken.ParseRemoteSecret(empty); err != nil || !r.Token.IsZero() || r.Status != authtoken.StatusNone {
		t.Fatalf("empty token: %+v, %v", r, err)
	}
	bad := &corev1.Secret{Data: map[string][]byte{"token": []byte("nope")}}
	if _, err := authtoken.ParseRemoteSecret(bad); !errors.Is(err, authtoken.ErrMalformed) {
		t.Fatalf("malformed: %v", err)
	}
	if _, err := authtoken.FromSecret(&corev1.Secret{}); !errors.Is(err, authtoken.ErrMalformed) {
		t.Fatalf("FromSecret of an empty Secret: %v", err)
	}
}

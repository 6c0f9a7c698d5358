// Package authtokentest is the conformance suite of authtoken's ports: every
// authtoken.Store and authtoken.Secrets, in memory or over an API server,
// passes it.
package authtokentest

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubepact/kubepact/authtoken"
)

// RunStore checks the contract of authtoken.Store on fresh, empty stores
// made by newStore. Stores from one call of newStore must share nothing with
// those of another.
func RunStore(t *testing.T, newStore func(t *testing.T) authtoken.Store) {
	ctx := context.Background()
	gen := func(t *testing.T) authtoken.Token {
		tok, err := authtoken.Generate(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}

	t.Run("GetEmpty", func(t *testing.T) {
		s := newStore(t)
		if _, err := s.Get(ctx); !errors.Is(err, authtoken.ErrNotFound) {
			t.Fatalf("Get on an empty store: %v, want ErrNotFound", err)
		}
	})
	t.Run("CreateGet", func(t *testing.T) {
		s := newStore(t)
		tok := gen(t)
		if err := s.Create(ctx, tok); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx)
		if err != nil || !got.Equal(tok) {
			t.Fatalf("Get after Create: equal=%t, %v", got.Equal(tok), err)
		}
	})
	t.Run("CreateTwice", func(t *testing.T) {
		s := newStore(t)
		first := gen(t)
		if err := s.Create(ctx, first); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx, gen(t)); !errors.Is(err, authtoken.ErrExists) {
			t.Fatalf("second Create: %v, want ErrExists", err)
		}
		if got, err := s.Get(ctx); err != nil || !got.Equal(first) {
			t.Fatalf("a refused Create changed the token: %v", err)
		}
	})
	t.Run("Replace", func(t *testing.T) {
		s := newStore(t)
		if err := s.Create(ctx, gen(t)); err != nil {
			t.Fatal(err)
		}
		next := gen(t)
		if err := s.Replace(ctx, next); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx); err != nil || !got.Equal(next) {
			t.Fatalf("Get after Replace: %v", err)
		}
	})
	t.Run("ReplaceEmpty", func(t *testing.T) {
		s := newStore(t)
		tok := gen(t)
		if err := s.Replace(ctx, tok); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Get(ctx); err != nil || !got.Equal(tok) {
			t.Fatalf("Get after Replace on an empty store: %v", err)
		}
	})
	t.Run("EnsureConcurrent", func(t *testing.T) {
		s := newStore(t)
		const n = 8
		toks := make([]authtoken.Token, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				toks[i], errs[i] = authtoken.Ensure(ctx, s, rand.Reader)
			}()
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("Ensure %d: %v", i, errs[i])
			}
			if !toks[i].Equal(toks[0]) {
				t.Fatalf("Ensure %d returned another token than Ensure 0", i)
			}
		}
		if got, err := s.Get(ctx); err != nil || !got.Equal(toks[0]) {
			t.Fatalf("stored token is not the one Ensure returned: %v", err)
		}
	})
	t.Run("Cancelled", func(t *testing.T) {
		s := newStore(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Create(cctx, gen(t)); err == nil {
			t.Fatal("Create with a cancelled context succeeded")
		}
	})
}

// RunSecrets checks the contract of authtoken.Secrets. newSecrets returns a
// fresh store and a namespace, unique to the call, in which Apply may write.
func RunSecrets(t *testing.T, newSecrets func(t *testing.T) (authtoken.Secrets, string)) {
	ctx := context.Background()
	tok, err := authtoken.Generate(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("GetMissing", func(t *testing.T) {
		s, ns := newSecrets(t)
		if _, err := s.Get(ctx, ns, "missing"); !errors.Is(err, authtoken.ErrNotFound) {
			t.Fatalf("Get of a missing Secret: %v, want ErrNotFound", err)
		}
	})
	t.Run("ApplyGet", func(t *testing.T) {
		s, ns := newSecrets(t)
		want := authtoken.RemoteSecret(ns, authtoken.Remote{ProviderID: "provider-a", Token: tok, Status: authtoken.StatusPending})
		if err := s.Apply(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, ns, want.Name)
		if err != nil {
			t.Fatal(err)
		}
		r, err := authtoken.ParseRemoteSecret(got)
		if err != nil {
			t.Fatal(err)
		}
		if r.ProviderID != "provider-a" || !r.Token.Equal(tok) || r.Status != authtoken.StatusPending {
			t.Fatalf("read back %+v", r)
		}
		if _, ok := got.Labels[authtoken.AuthTokenLabel]; !ok {
			t.Fatalf("label %s lost: %v", authtoken.AuthTokenLabel, got.Labels)
		}
	})
	t.Run("ApplyUpdates", func(t *testing.T) {
		s, ns := newSecrets(t)
		r := authtoken.Remote{ProviderID: "provider-b", Token: tok, Status: authtoken.StatusPending}
		if err := s.Apply(ctx, authtoken.RemoteSecret(ns, r)); err != nil {
			t.Fatal(err)
		}
		r.Status = authtoken.StatusEstablished
		if err := s.Apply(ctx, authtoken.RemoteSecret(ns, r)); err != nil {
			t.Fatal(err)
		}
		got, err := s.Get(ctx, ns, authtoken.RemoteSecretName("provider-b"))
		if err != nil {
			t.Fatal(err)
		}
		if got.Annotations[authtoken.StatusAnnotation] != string(authtoken.StatusEstablished) {
			t.Fatalf("status %q after the second Apply", got.Annotations[authtoken.StatusAnnotation])
		}
	})
	t.Run("ReturnsCopies", func(t *testing.T) {
		s, ns := newSecrets(t)
		sec := &corev1.Secret{}
		sec.Name, sec.Namespace, sec.Type = "copy", ns, corev1.SecretTypeOpaque
		sec.Data = map[string][]byte{"k": []byte("v")}
		if err := s.Apply(ctx, sec); err != nil {
			t.Fatal(err)
		}
		sec.Data["k"][0] = 'x'
		got, err := s.Get(ctx, ns, "copy")
		if err != nil {
			t.Fatal(err)
		}
		got.Data["k"] = []byte("changed")
		again, err := s.Get(ctx, ns, "copy")
		if err != nil {
			t.Fatal(err)
		}
		if string(again.Data["k"]) != "v" {
			t.Fatalf("stored data %q changed through a caller's copy", again.Data["k"])
		}
	})
}

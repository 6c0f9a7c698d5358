package kube_test

import (
	"context"
	"crypto/rand"
	"errors"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/authtoken/authtokentest"
	"github.com/kubepact/kubepact/kube"
)

var tokenNamespaces atomic.Int64

// tokenNamespace returns a fresh namespace name for one conformance case.
func tokenNamespace(t *testing.T) string {
	return shortName(t.Name(), int(tokenNamespaces.Add(1)))
}

func TestTokenStoreConformance(t *testing.T) {
	authtokentest.RunStore(t, func(t *testing.T) authtoken.Store {
		return kube.NewTokenStore(providerEnv.client, "tok-"+tokenNamespace(t))
	})
}

func TestTokenSecretsConformance(t *testing.T) {
	authtokentest.RunSecrets(t, func(t *testing.T) (authtoken.Secrets, string) {
		ns := "sec-" + tokenNamespace(t)
		_, err := consumerEnv.client.CoreV1().Namespaces().Create(context.Background(),
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return kube.NewSecrets(consumerEnv.client), ns
	})
}

// TestTokenStoreKeepsOthersFields shows that Replace, a server-side apply,
// keeps what another manager set on the Secret, and that a Secret whose
// token another writer broke is reported as ErrMalformed, then repaired by
// Ensure.
func TestTokenStoreKeepsOthersFields(t *testing.T) {
	ctx := context.Background()
	ns := "tok-" + tokenNamespace(t)
	s := kube.NewTokenStore(providerEnv.client, ns)
	first, err := authtoken.Ensure(ctx, s, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sec, err := providerEnv.client.CoreV1().Secrets(ns).Get(ctx, authtoken.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec.Labels = map[string]string{"team": "platform"}
	sec.Data["token"] = []byte("not-a-token")
	if _, err := providerEnv.client.CoreV1().Secrets(ns).Update(ctx, sec, metav1.UpdateOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx); !errors.Is(err, authtoken.ErrMalformed) {
		t.Fatalf("Get of a broken token: %v, want ErrMalformed", err)
	}
	repaired, err := authtoken.Ensure(ctx, s, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if repaired.Equal(first) {
		t.Fatal("Ensure returned the token that was overwritten")
	}
	got, err := providerEnv.client.CoreV1().Secrets(ns).Get(ctx, authtoken.SecretName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["team"] != "platform" {
		t.Fatalf("Replace removed another manager's label: %v", got.Labels)
	}
	if tok, err := authtoken.FromSecret(got); err != nil || !tok.Equal(repaired) {
		t.Fatalf("stored token is not the repaired one: %v", err)
	}
}

package saidentity_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/tenant"
)

// TestRefreshRealCluster runs a Refresher on the real consumer against the
// real provider, with a fake clock for its deadlines: nothing happens
// before 70% of the lifetime; by 90% a new token, asked for with the old
// one, is stored, and the old one kept working until then. After Revoke, a
// refresh fails with ErrRevoked and the stored kubeconfig stays as it was.
func TestRefreshRealCluster(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	consumerID, providerID := uniqueID(t.Name(), 0), uniqueID(t.Name(), 1)
	ports := realProvider()
	id, err := saidentity.Issue(ctx, ports, endpoint(), consumerID, &saidentity.IssueOptions{Expiration: saidentity.MinExpiration, ProviderID: providerID})
	if err != nil {
		t.Fatal(err)
	}
	// What "kubepact apply serviceaccount-identity" does on the consumer.
	if err := kube.NewNamespaces(consumer.client).Ensure(ctx, tenant.Namespace(providerID)); err != nil {
		t.Fatal(err)
	}
	secret, err := saidentity.SecretFor(providerID, id.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	secrets := kube.NewKubeconfigSecrets(consumer.client)
	if err := secrets.Write(ctx, secret); err != nil {
		t.Fatal(err)
	}
	stored := func() []byte {
		s, err := consumer.client.CoreV1().Secrets(secret.Namespace).Get(ctx, secret.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return s.Data[kubeconfig.SecretKey]
	}

	reviewer, err := kube.NewIdentityReviewer(nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(id.Token.IssuedAt())
	refreshed := make(chan *saidentity.Token, 1)
	var retried atomic.Int32
	r, err := saidentity.NewRefresher(saidentity.ConsumerPorts{
		Tokens:   kube.TokenRequester{},
		Reviewer: reviewer,
		Secrets:  secrets,
	}, providerID, &saidentity.RefresherOptions{
		Clock:     clk,
		OnRefresh: func(tok *saidentity.Token) { refreshed <- tok },
		OnError:   func(error) { retried.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()

	lifetime := id.Token.Lifetime()
	waitFor(ctx, t, "the refresher to wait", clk.HasWaiters)
	clk.Step(lifetime * 69 / 100)
	select {
	case tok := <-refreshed:
		t.Fatalf("refreshed at 69%% of the lifetime: %v", tok)
	case <-time.After(200 * time.Millisecond):
	}
	before := stored()
	// The old kubeconfig works right up to the refresh.
	if _, _, err := reviewer.Review(ctx, id.Kubeconfig); err != nil {
		t.Fatalf("old token before the refresh: %v", err)
	}
	clk.Step(lifetime * 22 / 100)
	var next *saidentity.Token
	select {
	case next = <-refreshed:
	case err := <-done:
		t.Fatalf("Run ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("no refresh by 91% of the lifetime")
	}
	after := stored()
	if bytes.Equal(before, after) {
		t.Fatal("the stored kubeconfig did not change")
	}
	cfg, err := kubeconfig.Parse(after)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := saidentity.ParseToken(cfg.BearerToken(), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !tok.Equal(next) || tok.Equal(id.Token) {
		t.Fatal("the stored token is not the new one")
	}
	if tok.Lifetime() != lifetime {
		t.Fatalf("new lifetime %s, want %s", tok.Lifetime(), lifetime)
	}
	if ns, name, uid := tok.ServiceAccount(); ns != "liqo-tenant-"+consumerID || name != saidentity.Name(consumerID) || uid == "" {
		t.Fatalf("new token for %s/%s (%s)", ns, name, uid)
	}
	for what, c := range map[string]*kubeconfig.Config{"new": cfg, "old": id.Kubeconfig} {
		if user, _, err := reviewer.Review(ctx, c); err != nil || user != saidentity.UserName(consumerID) {
			t.Fatalf("%s token after the refresh: %q, %v", what, user, err)
		}
	}
	if cfg.Server() != id.Kubeconfig.Server() || cfg.Namespace() != id.Kubeconfig.Namespace() {
		t.Fatalf("refreshed kubeconfig %v, want the server and namespace of %v", cfg, id.Kubeconfig)
	}

	// Revoked: the next refresh fails cleanly and stores nothing.
	if err := saidentity.Revoke(ctx, ports, consumerID); err != nil {
		t.Fatal(err)
	}
	_, err = r.Refresh(ctx)
	if !errors.Is(err, saidentity.ErrRevoked) || !errors.Is(err, identity.ErrRejected) {
		t.Fatalf("Refresh after Revoke: %v, want ErrRevoked", err)
	}
	if !bytes.Equal(stored(), after) {
		t.Fatal("a refused refresh changed the stored kubeconfig")
	}
	// The refreshed token is bound to the deleted ServiceAccount too: 401
	// once the API server's token cache forgets it.
	waitCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	waitFor(waitCtx, t, "the refreshed token to be refused", func() bool {
		_, _, err := reviewer.Review(ctx, cfg)
		return apierrors.IsUnauthorized(err)
	})
	// Run stops at its next deadline with the same error.
	waitFor(ctx, t, "the refresher to wait", clk.HasWaiters)
	clk.Step(lifetime)
	select {
	case err := <-done:
		if !errors.Is(err, saidentity.ErrRevoked) {
			t.Fatalf("Run after Revoke: %v, want ErrRevoked", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not end after Revoke")
	}
	if !bytes.Equal(stored(), after) || retried.Load() != 0 {
		t.Fatalf("after Revoke: stored kubeconfig changed=%v, retries=%d", !bytes.Equal(stored(), after), retried.Load())
	}
}

// TestRefreshWithoutSecretRealCluster checks that a Refresher with no
// kubeconfig Secret fails with ErrNotFound and writes nothing.
func TestRefreshWithoutSecretRealCluster(t *testing.T) {
	t.Parallel()
	providerID := uniqueID(t.Name(), 0)
	reviewer, err := kube.NewIdentityReviewer(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := saidentity.NewRefresher(saidentity.ConsumerPorts{
		Tokens: kube.TokenRequester{}, Reviewer: reviewer, Secrets: kube.NewKubeconfigSecrets(consumer.client),
	}, providerID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Refresh(t.Context()); !errors.Is(err, saidentity.ErrNotFound) {
		t.Fatalf("Refresh: %v, want ErrNotFound", err)
	}
	_, err = consumer.client.CoreV1().Secrets("liqo-tenant-"+providerID).Get(t.Context(), saidentity.SecretName(providerID), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("Secret: %v, want NotFound", err)
	}
}

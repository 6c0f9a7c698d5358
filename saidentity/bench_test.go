package saidentity_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/tenant"
)

// BenchmarkIssueRealCluster measures Issue for a new consumer on the real
// provider: the privilege checks (13 SubjectAccessReviews, twice), the
// namespace, ServiceAccount, RBAC and admission policy, and the
// TokenRequest.
func BenchmarkIssueRealCluster(b *testing.B) {
	ports, ep := realProvider(), endpoint()
	n := 0
	for b.Loop() {
		n++
		if _, err := saidentity.Issue(b.Context(), ports, ep, fmt.Sprintf("bench-%d-%d", time.Now().UnixNano()%1e6, n), nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRefreshRealCluster measures one Refresh on the real consumer
// against the real provider: reading the Secret, the TokenRequest made
// with the current token, the SelfSubjectReview of the new one, and the
// apply of the Secret.
func BenchmarkRefreshRealCluster(b *testing.B) {
	ctx := b.Context()
	consumerID, providerID := fmt.Sprintf("bench-r-%d", time.Now().UnixNano()%1e6), "bench-provider"
	id, err := saidentity.Issue(ctx, realProvider(), endpoint(), consumerID, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := kube.NewNamespaces(consumer.client).Ensure(ctx, tenant.Namespace(providerID)); err != nil {
		b.Fatal(err)
	}
	s, err := saidentity.SecretFor(providerID, id.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	secrets := kube.NewKubeconfigSecrets(consumer.client)
	if err := secrets.Write(ctx, s); err != nil {
		b.Fatal(err)
	}
	reviewer, err := kube.NewIdentityReviewer(nil)
	if err != nil {
		b.Fatal(err)
	}
	r, err := saidentity.NewRefresher(saidentity.ConsumerPorts{Tokens: kube.TokenRequester{}, Reviewer: reviewer, Secrets: secrets}, providerID, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := r.Refresh(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

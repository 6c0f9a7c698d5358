package authserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/tenant"
)

// serviceAccountIdentity issues consumerID a ServiceAccount identity on the
// provider cluster, stores its kubeconfig on the consumer cluster as
// "kubepact apply serviceaccount-identity" does, and returns the consumer's
// Refresher of it.
func serviceAccountIdentity(t *testing.T, providerID, consumerID string) *saidentity.Refresher {
	t.Helper()
	ctx := t.Context()
	ports := saidentity.ProviderPorts{
		Namespaces:      kube.NewNamespaces(providerCluster.client),
		ServiceAccounts: kube.NewServiceAccounts(providerCluster.client),
		RBAC:            kube.NewServiceAccountRBAC(providerCluster.client),
	}
	endpoint := saidentity.Endpoint{Server: providerCluster.cluster.Host(), CA: providerCluster.cluster.CA()}
	id, err := saidentity.Issue(ctx, ports, endpoint, consumerID, &saidentity.IssueOptions{Expiration: saidentity.MinExpiration, ProviderID: providerID})
	if err != nil {
		t.Fatal(err)
	}
	if err := kube.NewNamespaces(consumerCluster.client).Ensure(ctx, tenant.Namespace(providerID)); err != nil {
		t.Fatal(err)
	}
	secret, err := saidentity.SecretFor(providerID, id.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	secrets := kube.NewKubeconfigSecrets(consumerCluster.client)
	if err := secrets.Write(ctx, secret); err != nil {
		t.Fatal(err)
	}
	reviewer, err := kube.NewIdentityReviewer(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := saidentity.NewRefresher(saidentity.ConsumerPorts{Tokens: kube.TokenRequester{}, Reviewer: reviewer, Secrets: secrets}, providerID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Refresh(ctx); err != nil {
		t.Fatalf("refreshing the new identity: %v", err)
	}
	return r
}

// requireRefreshRefused waits until refreshing r fails with
// saidentity.ErrRevoked (RBAC takes effect within moments) and checks that
// the bindings of consumerID's identity are gone.
func requireRefreshRefused(t *testing.T, r *saidentity.Refresher, consumerID string) {
	t.Helper()
	ctx := t.Context()
	var err error
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, err = r.Refresh(ctx); err != nil {
			break
		}
	}
	if !errors.Is(err, saidentity.ErrRevoked) || !errors.Is(err, identity.ErrRejected) {
		t.Fatalf("refreshing the identity of %s: %v, want saidentity.ErrRevoked", consumerID, err)
	}
	_, err = providerCluster.client.RbacV1().RoleBindings(clusterid.TenantNamespace(consumerID)).Get(ctx, saidentity.Name(consumerID), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("RoleBinding of the identity of %s: %v, want it gone", consumerID, err)
	}
	_, err = providerCluster.client.RbacV1().ClusterRoleBindings().Get(ctx, saidentity.ClusterName(consumerID), metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("ClusterRoleBinding of the identity of %s: %v, want it gone", consumerID, err)
	}
}

// TestClusterDrainAndRevokeTakeBackEveryFlow: on a real provider, a
// consumer that holds a token server identity and a ServiceAccount
// identity under the same cluster ID is drained: the ControlPlane binding
// and both bindings of its ServiceAccount identity are gone, the token
// server refuses it, and refreshing its ServiceAccount token, which it
// does on the API server itself, fails with saidentity.ErrRevoked. A
// consumer that holds only a ServiceAccount identity and is revoked
// (kubepact unauthenticate --revoke) loses it the same way.
func TestClusterDrainAndRevokeTakeBackEveryFlow(t *testing.T) {
	ctx := context.Background()
	p := newRealProvider(t, "provider-takeback", nil)
	const drained, revoked = "consumer-takeback-drained", "consumer-takeback-revoked"
	c, ports := realConsumer(t, drained)
	if _, err := authserver.Authenticate(ctx, c, ports, p.remote(p.token), nil); err != nil {
		t.Fatal(err)
	}
	drainedSA := serviceAccountIdentity(t, p.id, drained)
	// Another provider ID on the consumer's side: each consumer keeps its
	// kubeconfig Secret, named after the provider, in its own cluster.
	revokedSA := serviceAccountIdentity(t, p.id+"-2", revoked)

	prov, _ := adminProvider(t, p.id)
	if err := prov.Drain(ctx, drained); err != nil {
		t.Fatalf("drain: %v", err)
	}
	_, err := providerCluster.client.RbacV1().RoleBindings(clusterid.TenantNamespace(drained)).Get(ctx, bindingName, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("ControlPlane binding of the drained consumer: %v, want it gone", err)
	}
	requireRefreshRefused(t, drainedSA, drained)
	// The same key posting again, as a consumer that lost the answer does.
	key, err := c.IdentityKey(ctx, p.id)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.ca)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	res, err := hc.Post(p.url+authserver.CertificatePath, "application/json",
		bytes.NewReader(requestFor(t, key, drained, p.token.Reveal(), csr.ControlPlaneSubject(drained), nil)))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("the token server to the drained consumer: %d, want 403", res.StatusCode)
	}

	if err := prov.Revoke(ctx, revoked); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	requireRefreshRefused(t, revokedSA, revoked)
}

package authserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire"
)

// TestClusterTokenConsumerLifecycle: on a real provider, a token consumer
// has the Tenant that cordon and drain act on; once drained it is refused
// (also on the server's cache-hit path) and never bound again; once
// forgotten its revocation record keeps it refused.
func TestClusterTokenConsumerLifecycle(t *testing.T) {
	ctx := context.Background()
	p := newRealProvider(t, "provider-lifecycle", nil)
	const id = "consumer-lifecycle"
	ns := "liqo-tenant-" + id
	c, ports := realConsumer(t, id)
	if _, err := authserver.Authenticate(ctx, c, ports, p.remote(p.token), nil); err != nil {
		t.Fatal(err)
	}

	prov, pports := adminProvider(t, p.id)
	if err := prov.Cordon(ctx, id); err != nil {
		t.Fatalf("cordon tenant of a token consumer: %v", err)
	}
	tn, err := pports.Tenants.Get(ctx, ns, id)
	if err != nil || tn.Spec.TenantCondition != authv1beta1.TenantConditionCordoned || lifecycle.FlowOf(tn) != lifecycle.FlowSharedToken {
		t.Fatalf("Tenant after cordon: %v", err)
	}
	bound := func() bool {
		_, err := providerCluster.client.RbacV1().RoleBindings(ns).Get(ctx, bindingName, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	if !bound() {
		t.Fatal("no binding")
	}
	if err := prov.Drain(ctx, id); err != nil {
		t.Fatalf("drain tenant of a token consumer: %v", err)
	}
	if bound() {
		t.Fatal("drain left the binding")
	}
	// The certificate is still cached: the same key, posting again as a
	// consumer that lost the answer does, is refused anyway.
	key, err := c.IdentityKey(ctx, p.id)
	if err != nil {
		t.Fatal(err)
	}
	post := func() int {
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(p.ca)
		hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		res, err := hc.Post(p.url+authserver.CertificatePath, "application/json",
			bytes.NewReader(requestFor(t, key, id, p.token.Reveal(), csr.ControlPlaneSubject(id), nil)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if status := post(); status != http.StatusForbidden {
		t.Fatalf("drained consumer: %d, want 403", status)
	}
	if bound() {
		t.Fatal("the drained consumer was bound again")
	}

	if err := prov.Forget(ctx, id); err != nil {
		t.Fatal(err)
	}
	if status := post(); status != http.StatusForbidden {
		t.Fatalf("revoked consumer: %d, want 403", status)
	}
	if bound() {
		t.Fatal("the revoked consumer was bound again")
	}
	if _, err := prov.Revocation(ctx, id); err != nil {
		t.Fatalf("no revocation record: %v", err)
	}
}

// adminProvider returns the Provider of cluster id over the provider
// cluster's admin credentials, as an administrator's kubepact runs it, and
// its ports.
func adminProvider(t *testing.T, id string) (*kubepact.Provider, provider.Ports) {
	t.Helper()
	cfg := providerCluster.cluster.AdminConfig()
	pports, err := wire.NewProviderPorts(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	endpoint, err := wire.EndpointFromConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := provider.New(id, endpoint, pports, nil)
	if err != nil {
		t.Fatal(err)
	}
	return prov, pports
}

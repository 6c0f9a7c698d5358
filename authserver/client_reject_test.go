package authserver_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/peer"
)

// TestAuthenticateBadInput: a missing consumer or port, an invalid provider
// ID and a CA that is no PEM certificate are refused with a typed error
// before any request is sent or anything is written.
func TestAuthenticateBadInput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(c **kubepact.Consumer, p *authserver.ConsumerPorts, r *authserver.Remote)
		want   error
	}{
		{"NoConsumer", func(c **kubepact.Consumer, _ *authserver.ConsumerPorts, _ *authserver.Remote) { *c = nil }, peer.ErrInvalidConfig},
		{"NoNamespaces", func(_ **kubepact.Consumer, p *authserver.ConsumerPorts, _ *authserver.Remote) { p.Namespaces = nil }, peer.ErrInvalidConfig},
		{"NoSecrets", func(_ **kubepact.Consumer, p *authserver.ConsumerPorts, _ *authserver.Remote) { p.Secrets = nil }, peer.ErrInvalidConfig},
		{"InvalidProviderID", func(_ **kubepact.Consumer, _ *authserver.ConsumerPorts, r *authserver.Remote) {
			r.ProviderID = "Provider_X"
		}, clusterid.ErrInvalid},
		{"NoCA", func(_ **kubepact.Consumer, _ *authserver.ConsumerPorts, r *authserver.Remote) { r.CA = nil }, peer.ErrInvalidConfig},
		{"CANotPEM", func(_ **kubepact.Consumer, _ *authserver.ConsumerPorts, r *authserver.Remote) {
			r.CA = []byte("not a certificate")
		}, peer.ErrInvalidConfig},
		{"URLWithUser", func(_ **kubepact.Consumer, _ *authserver.ConsumerPorts, r *authserver.Remote) {
			r.URL = strings.Replace(r.URL, "https://", "https://user:pass@", 1)
		}, peer.ErrInvalidConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			remote := hostile(t, func(w http.ResponseWriter, _ *http.Request) {
				t.Error("a certificate was requested")
				w.WriteHeader(http.StatusInternalServerError)
			})
			c := newConsumer(t, "consumer-a")
			cons, ports := c.c, c.ports()
			tc.change(&cons, &ports, &remote)
			if _, err := authserver.Authenticate(context.Background(), cons, ports, remote, nil); !errors.Is(err, tc.want) {
				t.Fatalf("%v, want %v", err, tc.want)
			}
			if c.secrets.Writes() != 0 || c.cluster.IdentityKeys.Len() != 0 {
				t.Fatal("the consumer wrote something")
			}
		})
	}
}

// TestAuthenticateStoredIdentity: a stored identity that lacks its
// certificate, or whose certificate is not for the consumer's key, fails
// every run with a typed error naming its Secret, is neither replaced nor
// deleted, and no certificate is requested.
func TestAuthenticateStoredIdentity(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, nil)
	holder := newConsumer(t, "consumer-a")
	if _, err := authserver.Authenticate(ctx, holder.c, holder.ports(), f.remote(f.token), nil); err != nil {
		t.Fatal(err)
	}
	issued, err := holder.secrets.Get(ctx, clusterid.TenantNamespace(providerID), authserver.IdentitySecretName(providerID))
	if err != nil {
		t.Fatal(err)
	}
	signed := f.provider.Signer.Signed()
	empty := issued.DeepCopy()
	delete(empty.Data, "certificate")

	for _, tc := range []struct {
		name   string
		stored *corev1.Secret
		want   error
		status authtoken.Status
	}{
		// Unreadable: nothing is recorded.
		{"NoCertificate", empty, identity.ErrMalformed, authtoken.StatusNone},
		// Another consumer's key holds the same cluster ID: Denied.
		{"AnotherKey", issued, identity.ErrKeyMismatch, authtoken.StatusDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConsumer(t, "consumer-a")
			stored := tc.stored.DeepCopy()
			stored.ObjectMeta = metav1.ObjectMeta{Name: stored.Name, Namespace: stored.Namespace, Labels: stored.Labels}
			if err := c.secrets.Apply(ctx, stored); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				_, err := authserver.Authenticate(ctx, c.c, c.ports(), f.remote(f.token), nil)
				if !errors.Is(err, tc.want) {
					t.Fatalf("%v, want %v", err, tc.want)
				}
				if !strings.Contains(err.Error(), authserver.IdentitySecretName(providerID)) {
					t.Fatalf("the error does not name the stored Secret: %v", err)
				}
			}
			if got := c.status(t); got != tc.status {
				t.Fatalf("status %s, want %s", got, tc.status)
			}
			kept, err := c.secrets.Get(ctx, stored.Namespace, stored.Name)
			if err != nil || string(kept.Data["certificate"]) != string(stored.Data["certificate"]) {
				t.Fatalf("the stored identity changed: %v", err)
			}
			if _, ok := c.cluster.Secrets.Get(stored.Namespace, "kubeconfig-controlplane-"+providerID); ok {
				t.Fatal("a kubeconfig Secret was written")
			}
			if n := f.provider.Signer.Signed(); n != signed {
				t.Fatalf("the provider signed %d more certificates", n-signed)
			}
		})
	}
}

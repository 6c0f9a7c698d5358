package authserver_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

// TestCommittedConsumerRefused: a consumer ID an AuthorizedConsumer
// commits peers with its committed cluster keys only; the token flow has
// no cluster key to show, so the server refuses it, 403 with
// enrol.ErrNotCommitted logged and nothing issued, and serves the others.
func TestCommittedConsumerRefused(t *testing.T) {
	f := newFixture(t, nil)
	errs := &errorSink{}
	srv, err := authserver.New(providerID, f.provider.Endpoint(), f.provider.ProviderPorts(), f.tokens, &authserver.Options{Logger: logr.New(errs)})
	if err != nil {
		t.Fatal(err)
	}
	f.url, f.ca = serve(t, srv)

	cluster, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	own, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	r, err := enrol.NewRequest(nil, providerID, "consumer-git", cluster, own)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := keys.MarshalPublicKey(cluster.Public())
	if err != nil {
		t.Fatal(err)
	}
	f.provider.Commitments.Commit(&peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: "consumer-git"},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: "consumer-git", PublicKeys: []string{string(pub)}, Request: r.API()},
	})

	status, body := f.post(t, request(t, "consumer-git", f.token.Reveal(), csr.ControlPlaneSubject("consumer-git"), nil))
	if status != http.StatusForbidden {
		t.Fatalf("a committed consumer ID: %d %s, want 403", status, body)
	}
	if err := errs.last(); !errors.Is(err, enrol.ErrNotCommitted) {
		t.Fatalf("logged %v, want enrol.ErrNotCommitted", err)
	}
	f.assertNothingIssued(t, "consumer-git")

	status, body = f.post(t, request(t, "consumer-other", f.token.Reveal(), csr.ControlPlaneSubject("consumer-other"), nil))
	if status != http.StatusAccepted {
		t.Fatalf("a consumer no one committed: %d %s, want 202", status, body)
	}
}

package saidentity_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/saidentity"
)

// TestIssueRefusesCommittedConsumer: a consumer ID an AuthorizedConsumer
// commits peers with its committed cluster keys only; a ServiceAccount
// identity shows none, so Issue refuses it with enrol.ErrNotCommitted and
// writes nothing; once the commitment goes, it issues.
func TestIssueRefusesCommittedConsumer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cluster, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	own, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		t.Fatal(err)
	}
	r, err := enrol.NewRequest(nil, "provider-1", "consumer-1", cluster, own)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := keys.MarshalPublicKey(cluster.Public())
	if err != nil {
		t.Fatal(err)
	}
	commitments := &fake.Commitments{}
	commitments.Commit(&peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: "consumer-1"},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: "consumer-1", PublicKeys: []string{string(pub)}, Request: r.API()},
	})
	m := newMemProvider()
	ports := m.ports()
	ports.Commitments = commitments
	endpoint := saidentity.Endpoint{Server: "https://provider.example:6443"}
	if _, err := saidentity.Issue(ctx, ports, endpoint, "consumer-1", nil); !errors.Is(err, enrol.ErrNotCommitted) {
		t.Fatalf("Issue for a committed consumer ID: %v, want enrol.ErrNotCommitted", err)
	}
	if _, ok := m.ns.Get(clusterid.TenantNamespace("consumer-1")); ok {
		t.Fatal("a namespace was made for a refused consumer")
	}
	commitments.Forget("consumer-1")
	if _, err := saidentity.Issue(ctx, ports, endpoint, "consumer-1", nil); err != nil {
		t.Fatalf("once the commitment is gone: %v", err)
	}
}

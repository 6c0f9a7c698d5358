package kube

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
)

// Commitments reads a provider's AuthorizedConsumers
// (peering.kubepact.io/v1alpha1): the enrol.Commitments port of
// provider.Core. It reads through a controller-runtime reader, a client
// (Accept) or a cache (Unchanged), whose scheme knows the peering types
// (NewScheme). It needs get on authorizedconsumers.
type Commitments struct {
	reader client.Reader
}

// NewCommitments returns the Commitments read through r.
func NewCommitments(r client.Reader) *Commitments { return &Commitments{reader: r} }

// Commitment returns the commitment of consumerID: nil when no
// AuthorizedConsumer names it, or when the cluster does not serve the
// kind (no CRD, so nothing can be committed). An object being deleted
// still commits: deleting it forgets the consumer, through the
// controller, before it goes. Any other failure to read is an error, so
// that no flow grants the ID while it stands.
func (c *Commitments) Commitment(ctx context.Context, consumerID string) (*enrol.Commitment, error) {
	var ac peeringv1alpha1.AuthorizedConsumer
	err := c.reader.Get(ctx, client.ObjectKey{Name: consumerID}, &ac)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, wrap(err, "reading", peeringv1alpha1.AuthorizedConsumerKind, "", consumerID)
	}
	return enrol.FromAuthorizedConsumer(&ac)
}

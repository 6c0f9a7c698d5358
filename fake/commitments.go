package fake

import (
	"context"
	"sync"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
)

// Commitments is an in-memory store of AuthorizedConsumers: the
// enrol.Commitments port of a provider. The zero value commits nothing.
type Commitments struct {
	mu      sync.Mutex
	objects map[string]*peeringv1alpha1.AuthorizedConsumer
}

// Commit stores ac, replacing the AuthorizedConsumer of its name.
func (c *Commitments) Commit(ac *peeringv1alpha1.AuthorizedConsumer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.objects == nil {
		c.objects = map[string]*peeringv1alpha1.AuthorizedConsumer{}
	}
	c.objects[ac.Name] = ac.DeepCopy()
}

// Forget deletes the AuthorizedConsumer named consumerID.
func (c *Commitments) Forget(consumerID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.objects, consumerID)
}

// Commitment parses the AuthorizedConsumer named consumerID, as the
// client-go adapter does: nil when there is none.
func (c *Commitments) Commitment(_ context.Context, consumerID string) (*enrol.Commitment, error) {
	c.mu.Lock()
	ac := c.objects[consumerID]
	c.mu.Unlock()
	if ac == nil {
		return nil, nil
	}
	return enrol.FromAuthorizedConsumer(ac)
}

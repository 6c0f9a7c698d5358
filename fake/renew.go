package fake

import (
	"context"
	"fmt"
	"reflect"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/renewal"
)

var _ renewal.Store = (*RenewStore)(nil)

// RenewStore is an in-memory renewal.Store.
type RenewStore struct{ objects[*authv1beta1.Renew] }

// Get returns the Renew namespace/name.
func (s *RenewStore) Get(ctx context.Context, namespace, name string) (*authv1beta1.Renew, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, ok := s.get(namespace, name)
	if !ok {
		return nil, fmt.Errorf("%w: Renew %s/%s", renewal.ErrNotFound, namespace, name)
	}
	return r, nil
}

// Apply creates r or sets its spec and metadata over the stored Renew's, as
// a server-side apply does: labels, annotations, finalizers and owner
// references others set stay. It keeps the stored status when r's is zero.
func (s *RenewStore) Apply(ctx context.Context, r *authv1beta1.Renew) (*authv1beta1.Renew, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	keep := reflect.DeepEqual(r.Status, authv1beta1.RenewStatus{})
	return s.applyOwned(r, func(prev, next *authv1beta1.Renew, _ owners) {
		if keep {
			next.Status = *prev.Status.DeepCopy()
		}
	}), nil
}

// Update stores r whole, as another component does with a client-side
// update: the metadata it adds or changes becomes theirs, and Apply keeps it.
func (s *RenewStore) Update(ctx context.Context, r *authv1beta1.Renew) (*authv1beta1.Renew, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.writeAsOther(r, nil), nil
}

// Delete removes the Renew namespace/name, unless it carries finalizers
// (kubepact puts none): then it keeps it with them and a deletionTimestamp,
// as an API server does.
func (s *RenewStore) Delete(ctx context.Context, namespace, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.terminate(namespace, name, nil)
	return nil
}

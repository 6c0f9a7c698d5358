package fake_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/renewal/renewaltest"
)

func TestRenewStoreConformance(t *testing.T) {
	t.Parallel()
	store := &fake.RenewStore{}
	renewaltest.Run(t, renewaltest.Harness{
		New: func(*testing.T) renewal.Store { return store },
		Update: func(ctx context.Context, r *authv1beta1.Renew) error {
			_, err := store.Update(ctx, r)
			return err
		},
		Parallel: true,
	})
}

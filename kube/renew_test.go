package kube_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/renewal/renewaltest"
)

func TestRenewStoreConformance(t *testing.T) {
	renewaltest.Run(t, renewaltest.Harness{
		New: func(*testing.T) renewal.Store { return kube.NewRenewStore(providerEnv.typed) },
		Update: func(ctx context.Context, r *authv1beta1.Renew) error {
			return updateAsOther(ctx, authv1beta1.RenewResource, r)
		},
		Namespace: ensureNamespace,
		Parallel:  true,
	})
}

package resourceslicetest_test

import (
	"context"
	"testing"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/resourceslice/resourceslicetest"
)

// The in-memory fake passes the suite; package kube runs it on a real API
// server.
func TestConformance(t *testing.T) {
	t.Parallel()
	resourceslicetest.Run(t, resourceslicetest.Harness{
		New: func(*testing.T) (resourceslice.Store, func(context.Context, *authv1beta1.ResourceSlice) error) {
			s := &fake.ResourceSlices{}
			return s, func(ctx context.Context, sl *authv1beta1.ResourceSlice) error {
				_, err := s.Put(ctx, sl)
				return err
			}
		},
		Parallel: true,
	})
}

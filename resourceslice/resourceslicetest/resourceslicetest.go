// Package resourceslicetest holds the conformance suite of
// resourceslice.Store.
//
// Run checks the contract written on resourceslice.Store: List returns the
// slices of one namespace only, sorted by name; Delete removes a slice
// carrying kubepact's finalizers, keeps one that also carries another's
// finalizer (terminating, without kubepact's), and succeeds when there is
// none; a cancelled context fails with context.Canceled. Every test uses
// its own namespace.
package resourceslicetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/resourceslice"
)

// Harness tells Run how to use the Store under test.
type Harness struct {
	// New returns the Store under test and a function that stores a slice
	// whole, as a user does. Required.
	New func(t *testing.T) (resourceslice.Store, func(ctx context.Context, s *authv1beta1.ResourceSlice) error)
	// Namespace, when set, makes sure namespace name exists.
	Namespace func(t *testing.T, name string)
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// OtherFinalizer is the finalizer of another component the suite sets.
const OtherFinalizer = "example.com/other"

// Run checks that the Store made by h.New meets the resourceslice.Store
// contract.
func Run(t *testing.T, h Harness) {
	namespace := func(t *testing.T) string {
		var r [6]byte
		_, _ = rand.Read(r[:])
		ns := "liqo-tenant-test-" + hex.EncodeToString(r[:])
		if h.Namespace != nil {
			h.Namespace(t, ns)
		}
		return ns
	}
	slice := func(ns, name string, finalizers ...string) *authv1beta1.ResourceSlice {
		return &authv1beta1.ResourceSlice{
			TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Finalizers: finalizers},
			Spec:       authv1beta1.ResourceSliceSpec{Class: authv1beta1.DefaultResourceSliceClass},
		}
	}
	names := func(l []authv1beta1.ResourceSlice) []string {
		out := []string{}
		for _, s := range l {
			out = append(out, s.Name)
		}
		return out
	}

	t.Run("ListAndDelete", func(t *testing.T) {
		if h.Parallel {
			t.Parallel()
		}
		ctx := context.Background()
		store, put := h.New(t)
		ns, other := namespace(t), namespace(t)
		require.NoError(t, put(ctx, slice(ns, "slice-b", resourceslice.Finalizer, resourceslice.ReplicationFinalizer)))
		require.NoError(t, put(ctx, slice(ns, "slice-a", resourceslice.Finalizer, OtherFinalizer)))
		require.NoError(t, put(ctx, slice(other, "slice-c")))
		l, err := store.List(ctx, ns)
		require.NoError(t, err)
		require.Equal(t, []string{"slice-a", "slice-b"}, names(l))

		require.NoError(t, store.Delete(ctx, ns, "slice-b"))
		require.NoError(t, store.Delete(ctx, ns, "slice-a"))
		l, err = store.List(ctx, ns)
		require.NoError(t, err)
		require.Equal(t, []string{"slice-a"}, names(l), "another's finalizer keeps it")
		require.NotNil(t, l[0].DeletionTimestamp)
		require.Equal(t, []string{OtherFinalizer}, l[0].Finalizers)
		require.NoError(t, store.Delete(ctx, ns, "slice-missing"))
		l, err = store.List(ctx, other)
		require.NoError(t, err)
		require.Equal(t, []string{"slice-c"}, names(l))
	})

	t.Run("CancelledContext", func(t *testing.T) {
		if h.Parallel {
			t.Parallel()
		}
		store, _ := h.New(t)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := store.List(ctx, "liqo-tenant-any")
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, store.Delete(ctx, "liqo-tenant-any", "slice-a"), context.Canceled)
	})
}

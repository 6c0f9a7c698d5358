package tenanttest

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubepact/kubepact/tenant"
)

// NamespacesHarness tells RunNamespaces how to use the Namespaces under test.
type NamespacesHarness struct {
	// New returns the Namespaces under test and get, which reads a
	// namespace back from where they write: get returns (nil, nil) when
	// there is no namespace of that name. Required.
	New func(t *testing.T) (n tenant.Namespaces, get func(ctx context.Context, name string) (*corev1.Namespace, error))
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// ConcurrentEnsures is how many goroutines Ensure one namespace at once.
const ConcurrentEnsures = 10

// RunNamespaces checks that the Namespaces made by h.New meet the
// tenant.Namespaces contract.
func RunNamespaces(t *testing.T, h NamespacesHarness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("tenanttest: NamespacesHarness.New is required")
	}
	t.Run("EnsureCreatesWithLabels", func(t *testing.T) {
		parallel(t, h.Parallel)
		n, get := h.New(t)
		ns := tenant.Namespace(uniqueID(t))
		require.NoError(t, n.Ensure(t.Context(), ns))
		requireLabels(t, get, ns.Name, ns.Labels)
	})
	t.Run("EnsureUnchangedSucceeds", func(t *testing.T) {
		parallel(t, h.Parallel)
		n, get := h.New(t)
		ns := tenant.Namespace(uniqueID(t))
		require.NoError(t, n.Ensure(t.Context(), ns))
		require.NoError(t, n.Ensure(t.Context(), ns.DeepCopy()), "second Ensure")
		requireLabels(t, get, ns.Name, ns.Labels)
	})
	t.Run("EnsureAddsAndUpdatesLabels", func(t *testing.T) {
		parallel(t, h.Parallel)
		n, get := h.New(t)
		ns := tenant.Namespace(uniqueID(t))
		ns.Labels[testLabel] = "first"
		require.NoError(t, n.Ensure(t.Context(), ns))

		ns = ns.DeepCopy()
		ns.Labels[testLabel] = "second"
		ns.Labels[extraLabel] = "added"
		require.NoError(t, n.Ensure(t.Context(), ns))
		requireLabels(t, get, ns.Name, ns.Labels)
	})
	t.Run("EnsureKeepsOtherLabels", func(t *testing.T) {
		parallel(t, h.Parallel)
		n, get := h.New(t)
		base := tenant.Namespace(uniqueID(t))
		more := base.DeepCopy()
		more.Labels[extraLabel] = "kept"
		require.NoError(t, n.Ensure(t.Context(), more))
		require.NoError(t, n.Ensure(t.Context(), base))
		requireLabels(t, get, base.Name, more.Labels)
	})
	t.Run("ConcurrentEnsureLosesNoLabel", func(t *testing.T) {
		parallel(t, h.Parallel)
		n, get := h.New(t)
		base := tenant.Namespace(uniqueID(t))
		want := maps.Clone(base.Labels)
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			errs  [ConcurrentEnsures]error
		)
		for i := range ConcurrentEnsures {
			ns := base.DeepCopy()
			key := fmt.Sprintf("%s-%d", extraLabel, i)
			ns.Labels[key] = "true"
			want[key] = "true"
			wg.Go(func() {
				<-start
				errs[i] = n.Ensure(t.Context(), ns)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "Ensure %d", i)
		}
		requireLabels(t, get, base.Name, want)
	})
	t.Run("DeleteTwiceSucceeds", func(t *testing.T) {
		parallel(t, h.Parallel)
		n, get := h.New(t)
		ns := tenant.Namespace(uniqueID(t))
		require.NoError(t, n.Ensure(t.Context(), ns))
		require.NoError(t, n.Delete(t.Context(), ns.Name))
		got, err := get(t.Context(), ns.Name)
		require.NoError(t, err)
		if got != nil {
			require.NotNil(t, got.DeletionTimestamp, "namespace %s neither gone nor terminating after Delete", ns.Name)
		}
		require.NoError(t, n.Delete(t.Context(), ns.Name), "second Delete")
	})
	t.Run("DeleteUnknownSucceeds", func(t *testing.T) {
		parallel(t, h.Parallel)
		n, _ := h.New(t)
		require.NoError(t, n.Delete(t.Context(), tenant.Namespace(uniqueID(t)).Name))
	})
	t.Run("CancelledContext", func(t *testing.T) {
		parallel(t, h.Parallel)
		n, _ := h.New(t)
		ns := tenant.Namespace(uniqueID(t))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.ErrorIs(t, n.Ensure(ctx, ns), context.Canceled, "Ensure")
		require.ErrorIs(t, n.Delete(ctx, ns.Name), context.Canceled, "Delete")
	})
}

const (
	testLabel  = "conformance.kubepact.io/value"
	extraLabel = "conformance.kubepact.io/extra"
)

// requireLabels checks that namespace name exists and carries every label
// of want. It may carry others, such as the API server's
// kubernetes.io/metadata.name.
func requireLabels(t *testing.T, get func(context.Context, string) (*corev1.Namespace, error), name string, want map[string]string) {
	t.Helper()
	ns, err := get(t.Context(), name)
	require.NoError(t, err)
	require.NotNil(t, ns, "namespace %s not found", name)
	got := make(map[string]string, len(want))
	for k := range want {
		if v, ok := ns.Labels[k]; ok {
			got[k] = v
		}
	}
	require.Equal(t, want, got, "labels of namespace %s (all: %v)", name, ns.Labels)
}

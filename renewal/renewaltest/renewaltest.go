// Package renewaltest holds the conformance suite of renewal.Store.
//
// Run checks the contract written on renewal.Store:
//
//   - Get of a Renew never stored fails with an error wrapping
//     renewal.ErrNotFound;
//   - Apply creates a Renew with a UID and returns it as applied, status
//     included, and Get returns the same;
//   - Apply of a Renew with a zero status keeps the stored status, and
//     replaces the spec and labels;
//   - Apply keeps the labels and annotations another component set
//     (Harness.Update);
//   - Delete removes a Renew and succeeds when there is none;
//   - a call with a cancelled context fails with an error wrapping
//     context.Canceled.
//
// Every test uses its own namespace, made through Harness.Namespace, so the
// suite runs against a real API server as well as against fake.RenewStore.
package renewaltest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/renewal"
)

// Harness tells Run how to use the Store under test.
type Harness struct {
	// New returns the Store under test. Required.
	New func(t *testing.T) renewal.Store
	// Namespace, when set, makes sure namespace name exists.
	Namespace func(t *testing.T, name string)
	// Update writes r as another component does: a client-side update of
	// the whole Renew, under a field manager that is not kubepact's.
	// Required.
	Update func(ctx context.Context, r *authv1beta1.Renew) error
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// Run checks that the Store made by h.New meets the renewal.Store contract.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Update == nil {
		t.Fatal("renewaltest: Harness.New and Update are required")
	}
	t.Run("GetMissing", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		_, err := s.Get(t.Context(), ns, "missing")
		require.ErrorIs(t, err, renewal.ErrNotFound)
	})
	t.Run("ApplyCreatesAndKeepsStatus", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		want := newRenew(ns)
		want.Status.AuthParams = &authv1beta1.AuthParams{SignedCRT: []byte("first"), APIServer: "https://provider.example"}
		got, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		require.NotEmpty(t, got.UID)
		require.Equal(t, want.Spec, got.Spec)
		require.Equal(t, want.Status, got.Status)

		next := newRenew(ns)
		next.Spec.CSR, next.Spec.PublicKey = []byte("csr"), []byte("key")
		next.Labels["kubepact.test/second"] = "yes"
		got, err = s.Apply(t.Context(), next.DeepCopy())
		require.NoError(t, err)
		require.Equal(t, next.Spec, got.Spec)
		require.Equal(t, want.Status, got.Status, "a zero status keeps the stored one")
		read, err := s.Get(t.Context(), ns, next.Name)
		require.NoError(t, err)
		require.Equal(t, got.UID, read.UID)
		require.Equal(t, next.Spec, read.Spec)
		require.Equal(t, want.Status, read.Status)
		require.Equal(t, "yes", read.Labels["kubepact.test/second"])
	})
	t.Run("ApplyKeepsOthersMetadata", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		_, err := s.Apply(t.Context(), newRenew(ns))
		require.NoError(t, err)
		theirs, err := s.Get(t.Context(), ns, newRenew(ns).Name)
		require.NoError(t, err)
		theirs.Labels["kubepact.test/theirs"] = "theirs"
		theirs.Annotations = map[string]string{"kubepact.test/theirs": "theirs"}
		require.NoError(t, h.Update(t.Context(), theirs))
		_, err = s.Apply(t.Context(), newRenew(ns))
		require.NoError(t, err)
		got, err := s.Get(t.Context(), ns, theirs.Name)
		require.NoError(t, err)
		require.Equal(t, "theirs", got.Labels["kubepact.test/theirs"])
		require.Equal(t, "theirs", got.Annotations["kubepact.test/theirs"])
	})
	t.Run("Delete", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		r := newRenew(ns)
		_, err := s.Apply(t.Context(), r)
		require.NoError(t, err)
		require.NoError(t, s.Delete(t.Context(), ns, r.Name))
		_, err = s.Get(t.Context(), ns, r.Name)
		require.ErrorIs(t, err, renewal.ErrNotFound)
		require.NoError(t, s.Delete(t.Context(), ns, r.Name), "deleting a missing Renew")
	})
	t.Run("CancelledContext", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.Apply(ctx, newRenew(ns))
		require.ErrorIs(t, err, context.Canceled)
		_, err = s.Get(ctx, ns, "any")
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, s.Delete(ctx, ns, "any"), context.Canceled)
	})
}

func (h Harness) parallel(t *testing.T) {
	if h.Parallel {
		t.Parallel()
	}
}

// namespace returns a namespace unique to the test, made through
// h.Namespace.
func (h Harness) namespace(t *testing.T) string {
	sum := sha256.Sum256([]byte(t.Name()))
	ns := "renewtest-" + hex.EncodeToString(sum[:6])
	if h.Namespace != nil {
		h.Namespace(t, ns)
	}
	return ns
}

func newRenew(namespace string) *authv1beta1.Renew {
	return &authv1beta1.Renew{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.RenewKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "controlplane-cl-provider",
			Namespace: namespace,
			Labels:    map[string]string{renewal.ReplicationLabel: "true", renewal.RemoteIDLabel: "cl-provider"},
		},
		Spec: authv1beta1.RenewSpec{ConsumerClusterID: "cl-consumer", IdentityType: authv1beta1.ControlPlaneIdentityType},
	}
}

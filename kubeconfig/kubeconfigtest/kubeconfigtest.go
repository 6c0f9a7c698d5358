// Package kubeconfigtest is the conformance suite of kubeconfig.SecretWriter.
//
// Run checks the contract written on kubeconfig.SecretWriter:
//
//   - Write creates a Secret with the data, labels, annotations and owner
//     references of the one written;
//   - Write replaces each of those on an existing Secret, removing what the
//     new Secret no longer has, and succeeds when nothing changes;
//   - Delete removes the Secret and succeeds when there is none;
//   - ten concurrent Writes of one Secret all succeed and leave one of them
//     stored;
//   - a call with a cancelled context fails with an error wrapping
//     context.Canceled.
//
// The port cannot read a Secret back, so Harness.New returns a getter beside
// the writer.
//
// Every test uses names and namespaces no other test uses, creates the
// namespaces it needs through Harness.Namespace, and deletes nothing it does
// not need to, so the suite runs against a real API server as well as
// against fake.SecretWriter. On a server that runs the garbage collector, a
// Secret whose owners do not exist is collected, so give the suite real
// owners through Harness.Owner.
//
// # Usage
//
// From the test of an adapter over a real API server (sketch):
//
//	func TestSecretWriterConformance(t *testing.T) {
//		client := kubernetes.NewForConfigOrDie(testcluster.StartT(t).AdminConfig())
//		kubeconfigtest.Run(t, kubeconfigtest.Harness{
//			New: func(t *testing.T) (kubeconfig.SecretWriter, func(context.Context, string, string) (*corev1.Secret, error)) {
//				return kube.NewSecretWriter(client), func(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
//					s, err := client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
//					if apierrors.IsNotFound(err) {
//						return nil, nil
//					}
//					return s, err
//				}
//			},
//			Namespace: createNamespace, // creates it, tolerating AlreadyExists
//			Owner: func(t *testing.T, namespace string) metav1.OwnerReference {
//				cm, err := client.CoreV1().ConfigMaps(namespace).Create(t.Context(),
//					&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "owner-"}}, metav1.CreateOptions{})
//				if err != nil {
//					t.Fatal(err)
//				}
//				return metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: cm.Name, UID: cm.UID}
//			},
//			Parallel: true,
//		})
//	}
package kubeconfigtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kubeconfig"
)

// Harness tells Run how to use the SecretWriter under test.
type Harness struct {
	// New returns the SecretWriter under test and get, which reads a Secret
	// back from where the writer writes: get returns (nil, nil) when there
	// is no Secret of that name. Required.
	New func(t *testing.T) (w kubeconfig.SecretWriter, get func(ctx context.Context, namespace, name string) (*corev1.Secret, error))
	// Namespace, when set, makes sure namespace name exists. The suite
	// calls it before it first uses a namespace.
	Namespace func(t *testing.T, name string)
	// Owner, when set, returns a reference to an object that exists in
	// namespace (or a cluster-scoped one) and outlives the test, for the
	// owner references the suite writes; each call may return the same
	// owner. When nil, the suite makes references up, which suits stores
	// without a garbage collector.
	Owner func(t *testing.T, namespace string) metav1.OwnerReference
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// ConcurrentWrites is how many goroutines Write one Secret at once.
const ConcurrentWrites = 10

// Run checks that the SecretWriter made by h.New meets the
// kubeconfig.SecretWriter contract.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("kubeconfigtest: Harness.New is required")
	}
	t.Run("WriteCreates", func(t *testing.T) {
		h.parallel(t)
		w, get := h.New(t)
		want := h.newSecret(t)
		require.NoError(t, w.Write(t.Context(), want.DeepCopy()))
		requireStored(t, get, want)
	})
	t.Run("WriteReplaces", func(t *testing.T) {
		h.parallel(t)
		for _, c := range []struct {
			name   string
			mutate func(t *testing.T, s *corev1.Secret)
		}{
			{"Data", func(_ *testing.T, s *corev1.Secret) {
				s.Data = map[string][]byte{kubeconfig.SecretKey: []byte("another kubeconfig"), "extra": []byte("added")}
			}},
			{"Labels", func(_ *testing.T, s *corev1.Secret) { s.Labels = map[string]string{extraKey: "replaced"} }},
			{"Annotations", func(_ *testing.T, s *corev1.Secret) { s.Annotations = nil }},
			{"OwnerReferencesAdded", func(t *testing.T, s *corev1.Secret) {
				s.OwnerReferences = []metav1.OwnerReference{h.owner(t, s.Namespace)}
			}},
			{"Everything", func(t *testing.T, s *corev1.Secret) {
				s.Data = map[string][]byte{kubeconfig.SecretKey: []byte("yet another kubeconfig")}
				s.Labels[extraKey] = "added"
				s.Annotations = map[string]string{kubeconfig.RemoteTenantNamespaceAnnotation: "liqo-tenant-other"}
				s.OwnerReferences = []metav1.OwnerReference{h.owner(t, s.Namespace)}
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				h.parallel(t)
				w, get := h.New(t)
				first := h.newSecret(t)
				require.NoError(t, w.Write(t.Context(), first.DeepCopy()))
				want := first.DeepCopy()
				c.mutate(t, want)
				require.NoError(t, w.Write(t.Context(), want.DeepCopy()))
				requireStored(t, get, want)
			})
		}
	})
	t.Run("WriteRemovesOwnerReferences", func(t *testing.T) {
		h.parallel(t)
		w, get := h.New(t)
		first := h.newSecret(t)
		first.OwnerReferences = []metav1.OwnerReference{h.owner(t, first.Namespace)}
		require.NoError(t, w.Write(t.Context(), first.DeepCopy()))
		requireStored(t, get, first)
		want := first.DeepCopy()
		want.OwnerReferences = nil
		require.NoError(t, w.Write(t.Context(), want.DeepCopy()))
		requireStored(t, get, want)
	})
	t.Run("WriteUnchangedSucceeds", func(t *testing.T) {
		h.parallel(t)
		w, get := h.New(t)
		want := h.newSecret(t)
		want.OwnerReferences = []metav1.OwnerReference{h.owner(t, want.Namespace)}
		require.NoError(t, w.Write(t.Context(), want.DeepCopy()))
		require.NoError(t, w.Write(t.Context(), want.DeepCopy()), "second Write")
		requireStored(t, get, want)
	})
	t.Run("DeleteTwiceSucceeds", func(t *testing.T) {
		h.parallel(t)
		w, get := h.New(t)
		s := h.newSecret(t)
		require.NoError(t, w.Write(t.Context(), s.DeepCopy()))
		require.NoError(t, w.Delete(t.Context(), s.Namespace, s.Name))
		got, err := get(t.Context(), s.Namespace, s.Name)
		require.NoError(t, err)
		require.Nil(t, got, "Secret %s/%s after Delete", s.Namespace, s.Name)
		require.NoError(t, w.Delete(t.Context(), s.Namespace, s.Name), "second Delete")
	})
	t.Run("DeleteUnknownSucceeds", func(t *testing.T) {
		h.parallel(t)
		w, _ := h.New(t)
		s := h.newSecret(t)
		require.NoError(t, w.Delete(t.Context(), s.Namespace, s.Name))
	})
	t.Run("ConcurrentWrite", func(t *testing.T) {
		h.parallel(t)
		w, get := h.New(t)
		base := h.newSecret(t)
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			want  [ConcurrentWrites]*corev1.Secret
			errs  [ConcurrentWrites]error
		)
		for i := range want {
			want[i] = base.DeepCopy()
			want[i].Data[kubeconfig.SecretKey] = fmt.Appendf(nil, "kubeconfig %d", i)
			want[i].Labels[extraKey] = fmt.Sprint(i)
			wg.Go(func() {
				<-start
				errs[i] = w.Write(t.Context(), want[i].DeepCopy())
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "Write %d", i)
		}
		got, err := get(t.Context(), base.Namespace, base.Name)
		require.NoError(t, err)
		require.NotNil(t, got)
		for _, s := range want {
			if bytes.Equal(s.Data[kubeconfig.SecretKey], got.Data[kubeconfig.SecretKey]) {
				requireStored(t, get, s)
				return
			}
		}
		t.Fatalf("stored data is none of those written")
	})
	t.Run("CancelledContext", func(t *testing.T) {
		h.parallel(t)
		w, _ := h.New(t)
		s := h.newSecret(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		require.ErrorIs(t, w.Write(ctx, s), context.Canceled, "Write")
		require.ErrorIs(t, w.Delete(ctx, s.Namespace, s.Name), context.Canceled, "Delete")
	})
}

const extraKey = "conformance.kubepact.io/extra"

func (h Harness) parallel(t *testing.T) {
	if h.Parallel {
		t.Parallel()
	}
}

func (h Harness) owner(t *testing.T, namespace string) metav1.OwnerReference {
	t.Helper()
	if h.Owner != nil {
		return h.Owner(t, namespace)
	}
	controller := true
	id := uniqueID(t)
	return metav1.OwnerReference{
		APIVersion: authv1beta1.SchemeGroupVersion.String(),
		Kind:       authv1beta1.IdentityKind,
		Name:       "controlplane-" + id,
		UID:        types.UID("uid-" + id),
		Controller: &controller,
	}
}

// newSecret returns a kubeconfig Secret no other test uses, in a namespace
// it makes sure exists, shaped like the ones kubeconfig.Secret builds.
func (h Harness) newSecret(t *testing.T) *corev1.Secret {
	t.Helper()
	id := uniqueID(t)
	ns := clusterid.TenantNamespace(id)
	if h.Namespace != nil {
		h.Namespace(t, ns)
	}
	return &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      kubeconfig.SecretName("controlplane-" + id),
			Namespace: ns,
			Labels: map[string]string{
				clusterid.Label:              id,
				kubeconfig.IdentityTypeLabel: string(authv1beta1.ControlPlaneIdentityType),
			},
			Annotations: map[string]string{kubeconfig.RemoteTenantNamespaceAnnotation: "liqo-tenant-consumer"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{kubeconfig.SecretKey: []byte("kubeconfig of " + id)},
	}
}

// uniqueID returns a cluster ID no other test uses: a DNS-1123 label of 19
// characters made of a hash of the test's name, for finding its objects, and
// random bytes, so that runs against the same API server do not collide.
func uniqueID(t *testing.T) string {
	sum := sha256.Sum256([]byte(t.Name()))
	var r [4]byte
	_, _ = rand.Read(r[:])
	return "kpt-" + hex.EncodeToString(sum[:3]) + "-" + hex.EncodeToString(r[:])
}

// requireStored checks that the stored Secret of want's name has want's
// type, data, labels, annotations and owner references.
func requireStored(t *testing.T, get func(context.Context, string, string) (*corev1.Secret, error), want *corev1.Secret) {
	t.Helper()
	got, err := get(t.Context(), want.Namespace, want.Name)
	require.NoError(t, err)
	require.NotNil(t, got, "Secret %s/%s not found", want.Namespace, want.Name)
	require.Equal(t, want.Type, got.Type, "type")
	require.True(t, maps.EqualFunc(want.Data, got.Data, bytes.Equal), "data differs (keys: got %v, want %v)", dataKeys(got.Data), dataKeys(want.Data))
	require.True(t, maps.Equal(want.Labels, got.Labels), "labels: got %v, want %v", got.Labels, want.Labels)
	require.True(t, maps.Equal(want.Annotations, got.Annotations), "annotations: got %v, want %v", got.Annotations, want.Annotations)
	if !equality.Semantic.DeepEqual(want.OwnerReferences, got.OwnerReferences) {
		require.Equal(t, want.OwnerReferences, got.OwnerReferences, "owner references")
		t.FailNow()
	}
}

// dataKeys lists the keys of a Secret's data, sorted: the values may be
// secret.
func dataKeys(data map[string][]byte) []string { return slices.Sorted(maps.Keys(data)) }

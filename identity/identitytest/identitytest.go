// Package identitytest holds the conformance suites of identity.Store (Run)
// and identity.Reviewer (RunReviewer, whose contract is on its doc).
//
// Run checks the contract written on identity.Store:
//
//   - List of a namespace with no Identity returns none and no error, and
//     List returns the Identities of its namespace only, sorted by name,
//     each as Apply stored it;
//   - Apply creates an Identity with a UID and returns it with everything
//     applied, status included;
//   - Apply replaces the spec, labels, annotations, finalizers and status
//     of a stored Identity and keeps its UID, keeps the stored status when
//     the applied one is the zero value, and changes nothing when applied
//     twice;
//   - Apply keeps the labels, annotations and finalizers another component
//     set (Harness.Update), and removes a label it applied before and no
//     longer applies;
//   - Delete removes an Identity and succeeds when there is none; an
//     Identity with another component's finalizer stays, terminating;
//   - ten concurrent Applies of one Identity all succeed, each returning its
//     own status, and leave one of them stored;
//   - a call with a cancelled context fails with an error wrapping
//     context.Canceled.
//
// Every test uses names and namespaces no other test uses, creates the
// namespaces it needs through Harness.Namespace, and deletes nothing it does
// not need to, except Identities left with a finalizer, which a test removes
// in its cleanup so that their namespace can go. So the suite runs against a
// real API server as well as against fake.IdentityStore.
//
// # Usage
//
// From the test of an adapter over a real API server (sketch):
//
//	func TestIdentityStoreConformance(t *testing.T) {
//		cfg := testcluster.StartT(t).AdminConfig()
//		client := kubernetes.NewForConfigOrDie(cfg)
//		installCRDs(t, cfg) // config/crd
//		identitytest.Run(t, identitytest.Harness{
//			New: func(t *testing.T) identity.Store {
//				typed, err := kube.NewClient(cfg, nil)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return kube.NewIdentityStore(typed)
//			},
//			Namespace: func(t *testing.T, name string) {
//				ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
//				_, err := client.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{})
//				if err != nil && !apierrors.IsAlreadyExists(err) {
//					t.Fatal(err)
//				}
//			},
//			Parallel: true,
//		})
//	}
package identitytest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
)

// Harness tells Run how to use the Store under test.
type Harness struct {
	// New returns the Store under test. It may return a new Store or the
	// same one on every call: the suite only assumes that namespaces it
	// has not used yet hold no Identity. Required.
	New func(t *testing.T) identity.Store
	// Namespace, when set, makes sure namespace name exists. The suite
	// calls it before it first uses a namespace.
	Namespace func(t *testing.T, name string)
	// Update writes id as another component does: a client-side update of
	// the whole Identity, under a field manager that is not kubepact's,
	// carrying the resourceVersion read. Required.
	Update func(ctx context.Context, id *authv1beta1.Identity) error
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// ConcurrentApplies is how many goroutines Apply one Identity at once.
const ConcurrentApplies = 10

// Run checks that the Store made by h.New meets the identity.Store contract.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil || h.Update == nil {
		t.Fatal("identitytest: Harness.New and Update are required")
	}
	t.Run("ApplyKeepsOthersMetadata", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		first := newIdentity(ns, "controlplane")
		_, err := s.Apply(t.Context(), first.DeepCopy())
		require.NoError(t, err)
		theirs := list(t, s, ns)[0]
		theirs.Labels[foreignKey] = "theirs"
		theirs.Annotations[foreignKey] = "theirs"
		theirs.Finalizers = append(theirs.Finalizers, testFinalizer)
		require.NoError(t, h.Update(t.Context(), &theirs), "Update")
		h.removeOnCleanup(t, s, ns, theirs.Name)

		applied := first.DeepCopy()
		applied.Annotations[testKey] = "second"
		changeSpec(applied)
		_, err = s.Apply(t.Context(), applied.DeepCopy())
		require.NoError(t, err)
		got := list(t, s, ns)[0]
		require.Equal(t, "theirs", got.Labels[foreignKey], "another component's label")
		require.Equal(t, "theirs", got.Annotations[foreignKey], "another component's annotation")
		require.Equal(t, "second", got.Annotations[testKey], "kubepact's annotation")
		require.Equal(t, []string{testFinalizer}, got.Finalizers, "another component's finalizer")

		require.NoError(t, s.Delete(t.Context(), ns, first.Name))
		got = list(t, s, ns)[0]
		require.Equal(t, []string{testFinalizer}, got.Finalizers, "finalizers after Delete")
		require.NotNil(t, got.DeletionTimestamp, "deletionTimestamp after Delete")
	})
	t.Run("ApplyWithoutCA", func(t *testing.T) {
		// A provider whose API server has a publicly trusted certificate
		// sends no CA (SPEC §7: every authParams field is optional).
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		want := newIdentity(ns, "controlplane")
		want.Spec.AuthParams.CA = nil
		got, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		requireIdentity(t, want, got)
		requireIdentity(t, want, &list(t, s, ns)[0])
	})
	t.Run("ApplyDropsItsOwnLabel", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		first := newIdentity(ns, "controlplane")
		first.Labels[extraKey] = "kubepact"
		_, err := s.Apply(t.Context(), first.DeepCopy())
		require.NoError(t, err)
		want := first.DeepCopy()
		delete(want.Labels, extraKey)
		_, err = s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		requireIdentity(t, want, &list(t, s, ns)[0])
	})
	t.Run("ListEmptyNamespace", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		got, err := s.List(t.Context(), ns)
		require.NoError(t, err)
		require.Empty(t, got)
	})
	t.Run("ApplyCreates", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		want := newIdentity(ns, "controlplane")
		got, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		require.NotEmpty(t, got.UID, "UID of the created Identity")
		requireIdentity(t, want, got)

		stored := list(t, s, ns)
		require.Len(t, stored, 1)
		require.Equal(t, got.UID, stored[0].UID)
		requireIdentity(t, want, &stored[0])
	})
	t.Run("ListSortedByName", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		var want []*authv1beta1.Identity
		uids := map[string]string{}
		for _, name := range []string{"c-identity", "a-identity", "b-identity"} {
			id := newIdentity(ns, name)
			got, err := s.Apply(t.Context(), id.DeepCopy())
			require.NoError(t, err)
			uids[name] = string(got.UID)
			want = append(want, id)
		}
		want[0], want[1], want[2] = want[1], want[2], want[0]

		got := list(t, s, ns)
		require.Len(t, got, len(want))
		for i := range want {
			requireIdentity(t, want[i], &got[i], "List()[%d]", i)
			require.Equal(t, uids[want[i].Name], string(got[i].UID), "UID of %s", want[i].Name)
		}
	})
	t.Run("ListOnlyItsNamespace", func(t *testing.T) {
		h.parallel(t)
		s, nsA, nsB := h.New(t), h.namespace(t), h.namespace(t)
		a, b := newIdentity(nsA, "same-name"), newIdentity(nsB, "same-name")
		changeSpec(b)
		for _, id := range []*authv1beta1.Identity{a, b} {
			_, err := s.Apply(t.Context(), id.DeepCopy())
			require.NoError(t, err)
		}
		for _, want := range []*authv1beta1.Identity{a, b} {
			got := list(t, s, want.Namespace)
			require.Len(t, got, 1, "Identities in %s", want.Namespace)
			requireIdentity(t, want, &got[0])
		}
	})
	t.Run("ApplyReplaces", func(t *testing.T) {
		h.parallel(t)
		for _, c := range []struct {
			name   string
			mutate func(*authv1beta1.Identity)
		}{
			{"Spec", changeSpec},
			{"Labels", func(id *authv1beta1.Identity) { id.Labels = map[string]string{extraKey: "replaced"} }},
			{"Annotations", func(id *authv1beta1.Identity) {
				id.Annotations = map[string]string{testKey: "second", extraKey: "added"}
			}},
			{"Status", changeStatus},
			{"Finalizers", func(id *authv1beta1.Identity) { id.Finalizers = []string{testFinalizer} }},
			{"Everything", func(id *authv1beta1.Identity) {
				changeSpec(id)
				changeStatus(id)
				id.Finalizers = []string{testFinalizer}
				id.Labels = nil
				id.Annotations = map[string]string{extraKey: "only"}
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				h.parallel(t)
				s, ns := h.New(t), h.namespace(t)
				first := newIdentity(ns, "controlplane")
				created, err := s.Apply(t.Context(), first.DeepCopy())
				require.NoError(t, err)

				want := first.DeepCopy()
				c.mutate(want)
				if len(want.Finalizers) > 0 {
					deleteOnCleanup(t, s, want)
				}
				got, err := s.Apply(t.Context(), want.DeepCopy())
				require.NoError(t, err)
				require.Equal(t, created.UID, got.UID, "Apply changed the UID")
				requireIdentity(t, want, got)
				stored := list(t, s, ns)
				require.Len(t, stored, 1)
				requireIdentity(t, want, &stored[0])
			})
		}
	})
	t.Run("ApplyZeroStatusKeepsStored", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		first := newIdentity(ns, "controlplane")
		_, err := s.Apply(t.Context(), first.DeepCopy())
		require.NoError(t, err)

		applied := first.DeepCopy()
		changeSpec(applied)
		applied.Status = authv1beta1.IdentityStatus{}
		want := applied.DeepCopy()
		want.Status = first.Status
		got, err := s.Apply(t.Context(), applied)
		require.NoError(t, err)
		requireIdentity(t, want, got)
		stored := list(t, s, ns)
		require.Len(t, stored, 1)
		requireIdentity(t, want, &stored[0])
	})
	t.Run("GetByName", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		g, ok := s.(identity.Getter)
		if !ok {
			t.Skip("the Store reads no Identity by name")
		}
		want := newIdentity(ns, "controlplane")
		_, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		_, err = s.Apply(t.Context(), newIdentity(ns, "resourceslice-a"))
		require.NoError(t, err)
		got, err := g.Get(t.Context(), ns, want.Name)
		require.NoError(t, err)
		requireIdentity(t, want, got)
		_, err = g.Get(t.Context(), ns, "missing")
		require.ErrorIs(t, err, identity.ErrNotFound)
	})
	t.Run("ApplyStatusAlone", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		sa, ok := s.(identity.StatusApplier)
		if !ok {
			t.Skip("the Store applies no status alone")
		}
		first := newIdentity(ns, "controlplane")
		first.Status = authv1beta1.IdentityStatus{}
		_, err := s.Apply(t.Context(), first.DeepCopy())
		require.NoError(t, err)

		// Only the status is written: the spec of the argument is not.
		pointed := first.DeepCopy()
		changeSpec(pointed)
		pointed.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: "kubeconfig-controlplane"}
		want := first.DeepCopy()
		want.Status = pointed.Status
		got, err := sa.ApplyStatus(t.Context(), pointed)
		require.NoError(t, err)
		requireIdentity(t, want, got)
		stored := list(t, s, ns)
		require.Len(t, stored, 1)
		requireIdentity(t, want, &stored[0])

		_, err = sa.ApplyStatus(t.Context(), newIdentity(ns, "missing"))
		require.ErrorIs(t, err, identity.ErrNotFound)
		require.Len(t, list(t, s, ns), 1, "nothing created")
	})
	t.Run("ApplyUnchangedIsIdempotent", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		want := newIdentity(ns, "controlplane")
		first, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		again, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		require.Equal(t, first.UID, again.UID)
		requireIdentity(t, want, again)
		// Applying what the Store returned, UID and resourceVersion
		// included, changes nothing either.
		third, err := s.Apply(t.Context(), again.DeepCopy())
		require.NoError(t, err)
		require.Equal(t, first.UID, third.UID)
		requireIdentity(t, want, third)
		stored := list(t, s, ns)
		require.Len(t, stored, 1)
		requireIdentity(t, want, &stored[0])
	})
	t.Run("DeleteTwiceSucceeds", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		gone, kept := newIdentity(ns, "deleted"), newIdentity(ns, "kept")
		for _, id := range []*authv1beta1.Identity{gone, kept} {
			_, err := s.Apply(t.Context(), id.DeepCopy())
			require.NoError(t, err)
		}
		require.NoError(t, s.Delete(t.Context(), ns, gone.Name))
		got := list(t, s, ns)
		require.Len(t, got, 1, "Identities after Delete")
		requireIdentity(t, kept, &got[0])
		require.NoError(t, s.Delete(t.Context(), ns, gone.Name), "second Delete")
	})
	t.Run("DeleteUnknownSucceeds", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		require.NoError(t, s.Delete(t.Context(), ns, "never-applied"))
	})
	t.Run("ConcurrentApply", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			want  [ConcurrentApplies]*authv1beta1.Identity
			got   [ConcurrentApplies]*authv1beta1.Identity
			errs  [ConcurrentApplies]error
		)
		for i := range want {
			want[i] = newIdentity(ns, "controlplane")
			want[i].Status.KubeconfigSecretRef.Name = fmt.Sprintf("kubeconfig-%d", i)
			wg.Go(func() {
				<-start
				got[i], errs[i] = s.Apply(t.Context(), want[i].DeepCopy())
			})
		}
		close(start)
		wg.Wait()
		for i := range want {
			require.NoError(t, errs[i], "Apply %d", i)
			requireIdentity(t, want[i], got[i], "Apply %d returned another status than its own", i)
		}
		stored := list(t, s, ns)
		require.Len(t, stored, 1)
		for _, w := range want {
			if equality.Semantic.DeepEqual(w.Status, stored[0].Status) {
				requireIdentity(t, w, &stored[0])
				return
			}
		}
		t.Fatalf("stored status %+v is none of those applied", stored[0].Status)
	})
	t.Run("CancelledContext", func(t *testing.T) {
		h.parallel(t)
		s, ns := h.New(t), h.namespace(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.List(ctx, ns)
		require.ErrorIs(t, err, context.Canceled, "List")
		_, err = s.Apply(ctx, newIdentity(ns, "controlplane"))
		require.ErrorIs(t, err, context.Canceled, "Apply")
		require.ErrorIs(t, s.Delete(ctx, ns, "controlplane"), context.Canceled, "Delete")
	})
}

const (
	testKey       = "conformance.kubepact.io/value"
	extraKey      = "conformance.kubepact.io/extra"
	testFinalizer = "conformance.kubepact.io/finalizer"
	// foreignKey is a label or annotation another component sets.
	foreignKey = "conformance.kubepact.io/foreign"
)

func (h Harness) parallel(t *testing.T) {
	if h.Parallel {
		t.Parallel()
	}
}

// namespace returns a namespace no other test uses, which it makes sure
// exists.
func (h Harness) namespace(t *testing.T) string {
	t.Helper()
	ns := clusterid.TenantNamespace(uniqueID(t))
	if h.Namespace != nil {
		h.Namespace(t, ns)
	}
	return ns
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

// newIdentity returns an Identity called name in namespace. Every field the
// Store keeps is set, to values a CRD's validation and defaulting leave as
// they are.
func newIdentity(namespace, name string) *authv1beta1.Identity {
	remote := "liqo-tenant-consumer"
	return &authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   namespace,
			Labels:      map[string]string{clusterid.Label: "provider"},
			Annotations: map[string]string{testKey: "first"},
		},
		Spec: authv1beta1.IdentitySpec{
			ClusterID: "provider",
			Type:      authv1beta1.ControlPlaneIdentityType,
			AuthParams: authv1beta1.AuthParams{
				CA:        []byte("CA of the provider"),
				SignedCRT: []byte("certificate of " + name),
				APIServer: "https://provider.example:6443",
			},
			Namespace: &remote,
		},
		Status: authv1beta1.IdentityStatus{
			KubeconfigSecretRef: &corev1.LocalObjectReference{Name: "kubeconfig-" + name},
		},
	}
}

func changeSpec(id *authv1beta1.Identity) {
	proxy := "https://proxy.example:3128"
	id.Spec.Type = authv1beta1.ResourceSliceIdentityType
	id.Spec.AuthParams.SignedCRT = []byte("another certificate")
	id.Spec.AuthParams.ProxyURL = &proxy
	id.Spec.Namespace = nil
}

func changeStatus(id *authv1beta1.Identity) {
	id.Status.KubeconfigSecretRef = &corev1.LocalObjectReference{Name: "another-kubeconfig"}
}

// deleteOnCleanup deletes id when t ends, so that no Identity with a
// finalizer outlives the test and blocks the deletion of its namespace: it
// applies id without finalizers, which removes those kubepact applied,
// then deletes it.
func deleteOnCleanup(t *testing.T, s identity.Store, id *authv1beta1.Identity) {
	t.Cleanup(func() {
		bare := id.DeepCopy()
		bare.Finalizers = nil
		bare.Status = authv1beta1.IdentityStatus{}
		if _, err := s.Apply(context.Background(), bare); err != nil {
			t.Errorf("cleanup: removing the finalizers of Identity %s/%s: %v", id.Namespace, id.Name, err)
		}
		if err := s.Delete(context.Background(), id.Namespace, id.Name); err != nil {
			t.Errorf("cleanup: deleting Identity %s/%s: %v", id.Namespace, id.Name, err)
		}
	})
}

// removeOnCleanup removes, when t ends, every finalizer of the Identity
// namespace/name as another component does, and deletes it.
func (h Harness) removeOnCleanup(t *testing.T, s identity.Store, namespace, name string) {
	t.Cleanup(func() {
		ctx := context.Background()
		for range 5 {
			ids, err := s.List(ctx, namespace)
			if err != nil {
				t.Errorf("cleanup: listing Identities in %s: %v", namespace, err)
				return
			}
			i := slices.IndexFunc(ids, func(id authv1beta1.Identity) bool { return id.Name == name })
			if i < 0 {
				return
			}
			ids[i].Finalizers = nil
			if err = h.Update(ctx, &ids[i]); err == nil {
				if err = s.Delete(ctx, namespace, name); err == nil {
					return
				}
			}
			t.Logf("cleanup: removing Identity %s/%s: %v", namespace, name, err)
		}
		t.Errorf("cleanup: Identity %s/%s stays", namespace, name)
	})
}

func list(t *testing.T, s identity.Store, namespace string) []authv1beta1.Identity {
	t.Helper()
	got, err := s.List(t.Context(), namespace)
	require.NoError(t, err, "List %s", namespace)
	return got
}

// identityContent is what a Store keeps of an Identity.
type identityContent struct {
	Namespace, Name     string
	Labels, Annotations map[string]string
	Finalizers          []string
	Spec                authv1beta1.IdentitySpec
	Status              authv1beta1.IdentityStatus
}

// requireIdentity checks that got holds what want holds.
func requireIdentity(t *testing.T, want, got *authv1beta1.Identity, msgAndArgs ...any) {
	t.Helper()
	require.NotNil(t, got, msgAndArgs...)
	w := identityContent{want.Namespace, want.Name, want.Labels, want.Annotations, want.Finalizers, want.Spec, want.Status}
	g := identityContent{got.Namespace, got.Name, got.Labels, got.Annotations, got.Finalizers, got.Spec, got.Status}
	if !equality.Semantic.DeepEqual(w, g) {
		require.Equal(t, w, g, msgAndArgs...) // prints the difference
		t.FailNow()
	}
}

package tenanttest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/tenant"
)

// StoreHarness tells RunStore how to use the Store under test.
type StoreHarness struct {
	// New returns the Store under test. It may return a new Store or the
	// same one on every call: the suite only assumes that namespaces it
	// has not used yet hold no Tenant. Required.
	New func(t *testing.T) tenant.Store
	// Namespace, when set, makes sure namespace name exists. The suite
	// calls it before it first uses a namespace.
	Namespace func(t *testing.T, name string)
	// Update writes tn as another component (Liqo, a user) does: a
	// client-side update of the whole Tenant, under a field manager that
	// is not kubepact's, carrying the resourceVersion read. Required.
	Update func(ctx context.Context, tn *authv1beta1.Tenant) error
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// ConcurrentApplies is how many goroutines Apply one Tenant at once.
const ConcurrentApplies = 10

// RunStore checks that the Store made by h.New meets the tenant.Store
// contract.
func RunStore(t *testing.T, h StoreHarness) {
	t.Helper()
	if h.New == nil || h.Update == nil {
		t.Fatal("tenanttest: StoreHarness.New and Update are required")
	}
	t.Run("GetUnknownIsNotFound", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, want := h.New(t), h.newTenant(t)
		_, err := s.Get(t.Context(), want.Namespace, want.Name)
		require.ErrorIs(t, err, tenant.ErrNotFound)
	})
	t.Run("ApplyCreates", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, want := h.New(t), h.newTenant(t)
		got, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		require.NotEmpty(t, got.UID, "UID of the created Tenant")
		requireTenant(t, want, got)

		stored := get(t, s, want)
		require.Equal(t, got.UID, stored.UID)
		requireTenant(t, want, stored)
	})
	t.Run("ApplyReplaces", func(t *testing.T) {
		parallel(t, h.Parallel)
		for _, c := range []struct {
			name   string
			mutate func(*authv1beta1.Tenant)
		}{
			{"Spec", changeSpec},
			{"Labels", changeLabels},
			{"Annotations", changeAnnotations},
			{"Finalizers", addFinalizer},
			{"Status", changeStatus},
			{"Everything", func(tn *authv1beta1.Tenant) {
				changeSpec(tn)
				changeLabels(tn)
				changeAnnotations(tn)
				addFinalizer(tn)
				changeStatus(tn)
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				parallel(t, h.Parallel)
				s, first := h.New(t), h.newTenant(t)
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
				requireTenant(t, want, got)
				requireTenant(t, want, get(t, s, want))
			})
		}
	})
	t.Run("ApplyZeroStatusKeepsStored", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, first := h.New(t), h.newTenant(t)
		_, err := s.Apply(t.Context(), first.DeepCopy())
		require.NoError(t, err)

		applied := first.DeepCopy()
		changeSpec(applied)
		applied.Status = authv1beta1.TenantStatus{}
		want := applied.DeepCopy()
		want.Status = first.Status
		got, err := s.Apply(t.Context(), applied)
		require.NoError(t, err)
		requireTenant(t, want, got)
		requireTenant(t, want, get(t, s, want))
	})
	t.Run("ApplyStatusSetsStatusAlone", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, first := h.New(t), h.newTenant(t)
		created, err := s.Apply(t.Context(), first.DeepCopy())
		require.NoError(t, err)

		// The rest of what ApplyStatus is given is not written.
		applied := first.DeepCopy()
		changeSpec(applied)
		changeLabels(applied)
		changeAnnotations(applied)
		changeStatus(applied)
		want := first.DeepCopy()
		want.Status = *applied.Status.DeepCopy()
		got, err := s.ApplyStatus(t.Context(), applied)
		require.NoError(t, err)
		require.Equal(t, created.UID, got.UID, "ApplyStatus changed the UID")
		requireTenant(t, want, got)
		requireTenant(t, want, get(t, s, want))
	})
	t.Run("ApplyStatusOfUnknownIsNotFound", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, tn := h.New(t), h.newTenant(t)
		_, err := s.ApplyStatus(t.Context(), tn.DeepCopy())
		require.ErrorIs(t, err, tenant.ErrNotFound)
		_, err = s.Get(t.Context(), tn.Namespace, tn.Name)
		require.ErrorIs(t, err, tenant.ErrNotFound, "ApplyStatus created the Tenant")
	})
	t.Run("ApplyUnchangedIsIdempotent", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, want := h.New(t), h.newTenant(t)
		first, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		again, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		require.Equal(t, first.UID, again.UID)
		requireTenant(t, want, again)
		// Applying what the Store returned, UID and resourceVersion
		// included, changes nothing either.
		third, err := s.Apply(t.Context(), again.DeepCopy())
		require.NoError(t, err)
		require.Equal(t, first.UID, third.UID)
		requireTenant(t, want, third)
		requireTenant(t, want, get(t, s, want))
	})
	t.Run("DeleteRemoves", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, want := h.New(t), h.newTenant(t)
		_, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		require.NoError(t, s.Delete(t.Context(), want.Namespace, want.Name))
		_, err = s.Get(t.Context(), want.Namespace, want.Name)
		require.ErrorIs(t, err, tenant.ErrNotFound, "Get after Delete")
		require.NoError(t, s.Delete(t.Context(), want.Namespace, want.Name), "second Delete")
	})
	t.Run("DeleteUnknownSucceeds", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, want := h.New(t), h.newTenant(t)
		require.NoError(t, s.Delete(t.Context(), want.Namespace, want.Name))
	})
	t.Run("DeleteIgnoresFinalizers", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, want := h.New(t), h.newTenant(t)
		addFinalizer(want)
		deleteOnCleanup(t, s, want)
		got, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		require.Equal(t, []string{tenant.Finalizer}, got.Finalizers)
		require.NoError(t, s.Delete(t.Context(), want.Namespace, want.Name))
		_, err = s.Get(t.Context(), want.Namespace, want.Name)
		require.ErrorIs(t, err, tenant.ErrNotFound, "Get after Delete of a Tenant with a finalizer")
	})
	t.Run("DeleteKeepsOthersFinalizers", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, want := h.New(t), h.newTenant(t)
		want.Finalizers = []string{tenant.Finalizer}
		_, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		h.addForeignFinalizer(t, s, want)
		require.NoError(t, s.Delete(t.Context(), want.Namespace, want.Name))
		got := get(t, s, want)
		require.Equal(t, []string{foreignFinalizer}, got.Finalizers, "finalizers after Delete")
		require.NotNil(t, got.DeletionTimestamp, "deletionTimestamp after Delete")
	})
	t.Run("ApplyKeepsOthersMetadata", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, want := h.New(t), h.newTenant(t)
		_, err := s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		theirs := get(t, s, want)
		theirs.Labels[foreignKey] = "theirs"
		theirs.Annotations[foreignKey] = "theirs"
		require.NoError(t, h.Update(t.Context(), theirs), "Update")
		h.addForeignFinalizer(t, s, want)

		applied := want.DeepCopy()
		applied.Labels[testLabel] = "second"
		applied.Finalizers = []string{tenant.Finalizer}
		_, err = s.Apply(t.Context(), applied.DeepCopy())
		require.NoError(t, err)
		got := get(t, s, want)
		require.Equal(t, "theirs", got.Labels[foreignKey], "another component's label")
		require.Equal(t, "second", got.Labels[testLabel], "kubepact's label")
		require.Equal(t, "theirs", got.Annotations[foreignKey], "another component's annotation")
		require.ElementsMatch(t, []string{tenant.Finalizer, foreignFinalizer}, got.Finalizers, "finalizers")
		require.True(t, equality.Semantic.DeepEqual(applied.Spec, got.Spec), "spec: got %+v, want %+v", got.Spec, applied.Spec)
		require.NoError(t, s.Delete(t.Context(), want.Namespace, want.Name))
	})
	t.Run("ApplyDropsItsOwnLabel", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, first := h.New(t), h.newTenant(t)
		first.Labels[extraLabel] = "kubepact"
		_, err := s.Apply(t.Context(), first.DeepCopy())
		require.NoError(t, err)
		want := first.DeepCopy()
		delete(want.Labels, extraLabel)
		_, err = s.Apply(t.Context(), want.DeepCopy())
		require.NoError(t, err)
		requireTenant(t, want, get(t, s, want))
	})
	t.Run("NamespacesAreIndependent", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, a := h.New(t), h.newTenant(t)
		b := a.DeepCopy()
		b.Namespace = clusterid.TenantNamespace(uniqueID(t))
		h.namespace(t, b.Namespace)
		changeSpec(b)
		changeStatus(b)
		for _, tn := range []*authv1beta1.Tenant{a, b} {
			_, err := s.Apply(t.Context(), tn.DeepCopy())
			require.NoError(t, err)
		}
		requireTenant(t, a, get(t, s, a))
		requireTenant(t, b, get(t, s, b))
		require.NoError(t, s.Delete(t.Context(), a.Namespace, a.Name))
		requireTenant(t, b, get(t, s, b))
	})
	t.Run("ConcurrentApply", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, base := h.New(t), h.newTenant(t)
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			want  [ConcurrentApplies]*authv1beta1.Tenant
			got   [ConcurrentApplies]*authv1beta1.Tenant
			errs  [ConcurrentApplies]error
		)
		for i := range want {
			want[i] = base.DeepCopy()
			want[i].Status.AuthParams.APIServer = fmt.Sprintf("https://provider-%d.example:6443", i)
			wg.Go(func() {
				<-start
				got[i], errs[i] = s.Apply(t.Context(), want[i].DeepCopy())
			})
		}
		close(start)
		wg.Wait()
		for i := range want {
			require.NoError(t, errs[i], "Apply %d", i)
			requireTenant(t, want[i], got[i], "Apply %d returned another status than its own", i)
		}
		stored := get(t, s, base)
		for _, w := range want {
			if w.Status.AuthParams.APIServer == stored.Status.AuthParams.APIServer {
				requireTenant(t, w, stored)
				return
			}
		}
		t.Fatalf("stored status %+v is none of those applied", stored.Status)
	})
	t.Run("CancelledContext", func(t *testing.T) {
		parallel(t, h.Parallel)
		s, tn := h.New(t), h.newTenant(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := s.Get(ctx, tn.Namespace, tn.Name)
		require.ErrorIs(t, err, context.Canceled, "Get")
		_, err = s.Apply(ctx, tn)
		require.ErrorIs(t, err, context.Canceled, "Apply")
		require.ErrorIs(t, s.Delete(ctx, tn.Namespace, tn.Name), context.Canceled, "Delete")
	})
}

func (h StoreHarness) namespace(t *testing.T, name string) {
	t.Helper()
	if h.Namespace != nil {
		h.Namespace(t, name)
	}
}

// newTenant returns a Tenant no other test uses, in its tenant namespace,
// which it makes sure exists. Every field the Store keeps is set, to values
// a CRD's validation and defaulting leave as they are.
func (h StoreHarness) newTenant(t *testing.T) *authv1beta1.Tenant {
	t.Helper()
	id := uniqueID(t)
	ns := clusterid.TenantNamespace(id)
	h.namespace(t, ns)
	return &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        id,
			Namespace:   ns,
			Labels:      map[string]string{clusterid.Label: id},
			Annotations: map[string]string{testLabel: "first"},
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID:       id,
			AuthzPolicy:     authv1beta1.KeysExchange,
			PublicKey:       []byte("public key of " + id),
			CSR:             []byte("certificate signing request of " + id),
			Signature:       []byte("signature of " + id),
			TenantCondition: authv1beta1.TenantConditionActive,
		},
		Status: authv1beta1.TenantStatus{
			TenantNamespace: ns,
			AuthParams: &authv1beta1.AuthParams{
				CA:        []byte("CA of the provider"),
				SignedCRT: []byte("certificate of " + id),
				APIServer: "https://provider.example:6443",
			},
		},
	}
}

func changeSpec(tn *authv1beta1.Tenant) {
	proxy := "https://proxy.example:3128"
	tn.Spec.AuthzPolicy = authv1beta1.TolerateNoHandshake
	tn.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
	tn.Spec.Signature = []byte("another signature")
	tn.Spec.ProxyURL = &proxy
}

func changeLabels(tn *authv1beta1.Tenant) {
	tn.Labels = map[string]string{extraLabel: "replaced"}
}

func changeAnnotations(tn *authv1beta1.Tenant) {
	tn.Annotations = map[string]string{testLabel: "second", extraLabel: "added"}
}

// foreignFinalizer stands for a finalizer another controller owns, and
// foreignKey for a label or annotation another component sets.
const (
	foreignFinalizer = "conformance.kubepact.io/foreign"
	foreignKey       = "conformance.kubepact.io/foreign"
)

// addForeignFinalizer adds foreignFinalizer to the stored tn as another
// controller does, and removes it the same way when t ends, so the Tenant
// can go.
func (h StoreHarness) addForeignFinalizer(t *testing.T, s tenant.Store, tn *authv1beta1.Tenant) {
	t.Helper()
	theirs := get(t, s, tn)
	theirs.Finalizers = append(theirs.Finalizers, foreignFinalizer)
	require.NoError(t, h.Update(t.Context(), theirs), "Update adding a finalizer")
	t.Cleanup(func() {
		ctx := context.Background()
		for range 5 {
			cur, err := s.Get(ctx, tn.Namespace, tn.Name)
			if errors.Is(err, tenant.ErrNotFound) {
				return
			}
			if err == nil {
				cur.Finalizers = slices.DeleteFunc(cur.Finalizers, func(f string) bool { return f == foreignFinalizer })
				if err = h.Update(ctx, cur); err == nil {
					return
				}
			}
			t.Logf("cleanup: removing the finalizer of Tenant %s/%s: %v", tn.Namespace, tn.Name, err)
		}
		t.Errorf("cleanup: Tenant %s/%s keeps its finalizer %s", tn.Namespace, tn.Name, foreignFinalizer)
	})
}

func addFinalizer(tn *authv1beta1.Tenant) {
	tn.Finalizers = append(tn.Finalizers, tenant.Finalizer)
}

func changeStatus(tn *authv1beta1.Tenant) {
	tn.Status.TenantNamespace = "another-namespace"
	tn.Status.AuthParams = &authv1beta1.AuthParams{
		CA:        []byte("another CA"),
		SignedCRT: []byte("another certificate"),
		APIServer: "https://other-provider.example:6443",
	}
}

// deleteOnCleanup deletes tn when t ends, so that no Tenant with a
// finalizer outlives the test and blocks the deletion of its namespace.
func deleteOnCleanup(t *testing.T, s tenant.Store, tn *authv1beta1.Tenant) {
	t.Cleanup(func() {
		if err := s.Delete(context.Background(), tn.Namespace, tn.Name); err != nil {
			t.Errorf("cleanup: deleting Tenant %s/%s: %v", tn.Namespace, tn.Name, err)
		}
	})
}

func get(t *testing.T, s tenant.Store, tn *authv1beta1.Tenant) *authv1beta1.Tenant {
	t.Helper()
	got, err := s.Get(t.Context(), tn.Namespace, tn.Name)
	require.NoError(t, err, "Get %s/%s", tn.Namespace, tn.Name)
	return got
}

// tenantContent is what a Store keeps of a Tenant.
type tenantContent struct {
	Namespace, Name     string
	Labels, Annotations map[string]string
	Finalizers          []string
	Spec                authv1beta1.TenantSpec
	Status              authv1beta1.TenantStatus
}

func contentOf(tn *authv1beta1.Tenant) tenantContent {
	return tenantContent{
		Namespace:   tn.Namespace,
		Name:        tn.Name,
		Labels:      tn.Labels,
		Annotations: tn.Annotations,
		Finalizers:  tn.Finalizers,
		Spec:        tn.Spec,
		Status:      tn.Status,
	}
}

// requireTenant checks that got holds what want holds.
func requireTenant(t *testing.T, want, got *authv1beta1.Tenant, msgAndArgs ...any) {
	t.Helper()
	require.NotNil(t, got, msgAndArgs...)
	requireSemanticEqual(t, contentOf(want), contentOf(got), msgAndArgs...)
}

// Package rbactest holds the conformance suites of rbac.Applier (Run) and
// of rbac.Reviewer (RunReviewer, which needs an rbac.Binder: it applies
// the roles it reviews through the port).
//
// Run checks the contract written on rbac.Applier:
//
//   - HasClusterRole tells an applied ClusterRole from a missing one, and
//     rbac.RequireRoles names the missing one in a *rbac.MissingRoleError;
//   - ApplyClusterRole (rbac.Installer) creates a ClusterRole, replaces the rules and
//     labels it applied before, keeps the labels another component set
//     (Inspector.UpdateClusterRole) and the rules another component set to
//     other values, removes a label it applied before and no longer
//     applies, and does not write when nothing changes (its
//     resourceVersion stays);
//   - ApplyRoleBinding creates a RoleBinding, replaces its subjects (also
//     those another component added) and the labels it applied, keeps the
//     labels another component set, removes a label it no longer applies,
//     replaces a stored one whose roleRef differs (roleRef is immutable on
//     an API server, so an adapter deletes and creates), and does not
//     write when nothing changes;
//   - ten concurrent ApplyRoleBindings of one binding all succeed and leave
//     one of them stored;
//   - DeleteRoleBinding removes a binding and succeeds when there is none;
//   - a call with a cancelled context fails with an error wrapping
//     context.Canceled.
//
// The port cannot read objects back, so Harness.New returns an Inspector
// beside the Applier.
//
// Every test uses ClusterRoles named "kubepact-test-<random>" and
// namespaces no other test uses, creates the namespaces it needs through
// Harness.Namespace, and deletes nothing it does not need to, so the suite
// runs against a real API server as well as against fake.RBAC. ClusterRoles
// stay behind: the port cannot delete them. Bindings the suite makes refer
// only to ClusterRoles it applied first, so an API server's escalation check
// passes for an adapter allowed to create those roles.
//
// # Usage
//
// From the test of an adapter over a real API server (sketch):
//
//	func TestRBACConformance(t *testing.T) {
//		client := kubernetes.NewForConfigOrDie(testcluster.StartT(t).AdminConfig())
//		rbactest.Run(t, rbactest.Harness{
//			New: func(t *testing.T) (rbactest.Port, rbactest.Inspector) {
//				return kube.NewRBAC(client), rbactest.Inspector{
//					ClusterRole: func(ctx context.Context, name string) (*rbacv1.ClusterRole, error) {
//						r, err := client.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
//						if apierrors.IsNotFound(err) {
//							return nil, nil
//						}
//						return r, err
//					},
//					RoleBinding: func(ctx context.Context, namespace, name string) (*rbacv1.RoleBinding, error) {
//						b, err := client.RbacV1().RoleBindings(namespace).Get(ctx, name, metav1.GetOptions{})
//						if apierrors.IsNotFound(err) {
//							return nil, nil
//						}
//						return b, err
//					},
//				}
//			},
//			Namespace: createNamespace, // creates it, tolerating AlreadyExists
//			Parallel:  true,
//		})
//	}
package rbactest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/rbac"
)

// Port is what Run checks: an rbac.Applier that is also an
// rbac.Installer, as kube.RBAC and fake.RBAC are.
type Port interface {
	rbac.Applier
	rbac.Installer
}

// Harness tells Run how to use the Applier under test.
type Harness struct {
	// New returns the Port under test and an Inspector reading back
	// from where it writes. Required.
	New func(t *testing.T) (Port, Inspector)
	// Namespace, when set, makes sure namespace name exists. The suite
	// calls it before it first uses a namespace.
	Namespace func(t *testing.T, name string)
	// Parallel lets the suite's tests run in parallel with each other.
	Parallel bool
}

// Inspector reads back what an Applier stored. Each function returns
// (nil, nil) when there is no such object, and returns the object with its
// resourceVersion, which the suite compares to tell whether an Apply wrote.
// Both are required.
//
// UpdateClusterRole and UpdateRoleBinding write an object as another
// component (Liqo's chart, a user) does: a client-side create or update of
// the whole object, under a field manager that is not kubepact's, carrying
// the resourceVersion read. Both are required.
type Inspector struct {
	ClusterRole       func(ctx context.Context, name string) (*rbacv1.ClusterRole, error)
	RoleBinding       func(ctx context.Context, namespace, name string) (*rbacv1.RoleBinding, error)
	UpdateClusterRole func(ctx context.Context, r *rbacv1.ClusterRole) error
	UpdateRoleBinding func(ctx context.Context, b *rbacv1.RoleBinding) error
}

// ConcurrentApplies is how many goroutines apply one RoleBinding at once.
const ConcurrentApplies = 10

// Run checks that the Applier made by h.New meets the rbac.Applier contract.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("rbactest: Harness.New is required")
	}
	t.Run("ApplyClusterRoleCreates", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		want := newClusterRole(t)
		require.NoError(t, a.ApplyClusterRole(t.Context(), want.DeepCopy()))
		in.requireClusterRole(t, want)
	})
	t.Run("HasClusterRole", func(t *testing.T) {
		h.parallel(t)
		a, _ := h.new(t)
		r := newClusterRole(t)
		ok, err := a.HasClusterRole(t.Context(), r.Name)
		require.NoError(t, err)
		require.False(t, ok, "HasClusterRole of a role not applied")
		require.NoError(t, a.ApplyClusterRole(t.Context(), r.DeepCopy()))
		ok, err = a.HasClusterRole(t.Context(), r.Name)
		require.NoError(t, err)
		require.True(t, ok, "HasClusterRole of an applied role")
		err = rbac.RequireRoles(t.Context(), a, r.Name, "kubepact-test-missing-"+uniqueSuffix())
		var missing *rbac.MissingRoleError
		require.ErrorAs(t, err, &missing)
		require.ErrorIs(t, err, rbac.ErrMissingRole)
		require.Contains(t, missing.Name, "kubepact-test-missing-")
	})
	t.Run("ApplyClusterRoleUnchangedDoesNotWrite", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		want := newClusterRole(t)
		require.NoError(t, a.ApplyClusterRole(t.Context(), want.DeepCopy()))
		before := in.requireClusterRole(t, want)
		require.NoError(t, a.ApplyClusterRole(t.Context(), want.DeepCopy()), "second apply")
		after := in.requireClusterRole(t, want)
		requireNotWritten(t, before, after)
	})
	t.Run("ApplyClusterRoleReplaces", func(t *testing.T) {
		h.parallel(t)
		for _, c := range []struct {
			name   string
			mutate func(*rbacv1.ClusterRole)
		}{
			{"Rules", func(r *rbacv1.ClusterRole) {
				r.Rules = []rbacv1.PolicyRule{
					{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: []string{"one"}},
					{APIGroups: []string{"authentication.liqo.io"}, Resources: []string{"tenants", "tenants/status"}, Verbs: []string{"get", "update"}},
				}
			}},
			{"Labels", func(r *rbacv1.ClusterRole) { r.Labels = map[string]string{testKey: "second", extraKey: "added"} }},
		} {
			t.Run(c.name, func(t *testing.T) {
				h.parallel(t)
				a, in := h.new(t)
				first := newClusterRole(t)
				require.NoError(t, a.ApplyClusterRole(t.Context(), first.DeepCopy()))
				want := first.DeepCopy()
				c.mutate(want)
				require.NoError(t, a.ApplyClusterRole(t.Context(), want.DeepCopy()))
				in.requireClusterRole(t, want)
			})
		}
	})
	t.Run("ApplyClusterRoleKeepsOthersLabels", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		first := newClusterRole(t)
		require.NoError(t, a.ApplyClusterRole(t.Context(), first.DeepCopy()))
		theirs := in.requireClusterRole(t, first)
		theirs.Labels[foreignKey] = "theirs"
		require.NoError(t, in.UpdateClusterRole(t.Context(), theirs), "UpdateClusterRole")
		applied := first.DeepCopy()
		applied.Labels = map[string]string{testKey: "second"}
		applied.Rules[0].Verbs = []string{"get"}
		require.NoError(t, a.ApplyClusterRole(t.Context(), applied.DeepCopy()))
		want := applied.DeepCopy()
		want.Labels[foreignKey] = "theirs"
		in.requireClusterRole(t, want)
	})
	t.Run("ApplyClusterRoleDropsItsOwnLabel", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		first := newClusterRole(t)
		first.Labels[extraKey] = "kubepact"
		require.NoError(t, a.ApplyClusterRole(t.Context(), first.DeepCopy()))
		want := first.DeepCopy()
		delete(want.Labels, extraKey)
		require.NoError(t, a.ApplyClusterRole(t.Context(), want.DeepCopy()))
		in.requireClusterRole(t, want)
	})
	t.Run("ApplyClusterRoleKeepsOthersRules", func(t *testing.T) {
		// A role another component installed with its own rules, as
		// Liqo's chart installs liqo-remote-controlplane.
		h.parallel(t)
		a, in := h.new(t)
		theirs := newClusterRole(t)
		theirs.Labels = map[string]string{foreignKey: "theirs", rbac.NameLabel: "shared"}
		theirs.Rules = append(theirs.Rules, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get"}})
		require.NoError(t, in.UpdateClusterRole(t.Context(), theirs.DeepCopy()), "UpdateClusterRole")
		applied := newClusterRole(t)
		applied.Name = theirs.Name
		require.NoError(t, a.ApplyClusterRole(t.Context(), applied.DeepCopy()))
		want := theirs.DeepCopy()
		maps.Copy(want.Labels, applied.Labels)
		in.requireClusterRole(t, want)
	})
	t.Run("ApplyRoleBindingKeepsOthersLabels", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		first := h.newRoleBinding(t, a)
		require.NoError(t, a.ApplyRoleBinding(t.Context(), first.DeepCopy()))
		theirs := in.requireRoleBinding(t, first)
		theirs.Labels[foreignKey] = "theirs"
		require.NoError(t, in.UpdateRoleBinding(t.Context(), theirs), "UpdateRoleBinding")
		applied := first.DeepCopy()
		applied.Labels[testKey] = "second"
		changeSubjects(applied, "other")
		require.NoError(t, a.ApplyRoleBinding(t.Context(), applied.DeepCopy()))
		want := applied.DeepCopy()
		want.Labels[foreignKey] = "theirs"
		in.requireRoleBinding(t, want)
	})
	t.Run("ApplyRoleBindingTakesOverSubjects", func(t *testing.T) {
		// A binding kubepact makes grants to exactly its subjects, even
		// if someone added one.
		h.parallel(t)
		a, in := h.new(t)
		want := h.newRoleBinding(t, a)
		require.NoError(t, a.ApplyRoleBinding(t.Context(), want.DeepCopy()))
		theirs := in.requireRoleBinding(t, want)
		theirs.Subjects = append(theirs.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "intruder"})
		require.NoError(t, in.UpdateRoleBinding(t.Context(), theirs), "UpdateRoleBinding")
		require.NoError(t, a.ApplyRoleBinding(t.Context(), want.DeepCopy()))
		in.requireRoleBinding(t, want)
	})
	t.Run("ApplyRoleBindingDropsItsOwnLabel", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		first := h.newRoleBinding(t, a)
		first.Labels[extraKey] = "kubepact"
		require.NoError(t, a.ApplyRoleBinding(t.Context(), first.DeepCopy()))
		want := first.DeepCopy()
		delete(want.Labels, extraKey)
		require.NoError(t, a.ApplyRoleBinding(t.Context(), want.DeepCopy()))
		in.requireRoleBinding(t, want)
	})
	t.Run("ApplyRoleBindingCreates", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		want := h.newRoleBinding(t, a)
		require.NoError(t, a.ApplyRoleBinding(t.Context(), want.DeepCopy()))
		in.requireRoleBinding(t, want)
	})
	t.Run("ApplyRoleBindingUnchangedDoesNotWrite", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		want := h.newRoleBinding(t, a)
		require.NoError(t, a.ApplyRoleBinding(t.Context(), want.DeepCopy()))
		before := in.requireRoleBinding(t, want)
		require.NoError(t, a.ApplyRoleBinding(t.Context(), want.DeepCopy()), "second apply")
		after := in.requireRoleBinding(t, want)
		requireNotWritten(t, before, after)
	})
	t.Run("ApplyRoleBindingReplaces", func(t *testing.T) {
		h.parallel(t)
		for _, c := range []struct {
			name   string
			mutate func(*testing.T, Port, *rbacv1.RoleBinding)
		}{
			{"Subjects", func(_ *testing.T, _ Port, b *rbacv1.RoleBinding) { changeSubjects(b, "other") }},
			{"Labels", func(_ *testing.T, _ Port, b *rbacv1.RoleBinding) {
				b.Labels[testKey] = "second"
				b.Labels[extraKey] = "added"
			}},
			{"RoleRef", func(t *testing.T, a Port, b *rbacv1.RoleBinding) {
				b.RoleRef.Name = applyClusterRole(t, a).Name
			}},
			{"Everything", func(t *testing.T, a Port, b *rbacv1.RoleBinding) {
				b.RoleRef.Name = applyClusterRole(t, a).Name
				changeSubjects(b, "other")
				b.Labels[extraKey] = "added"
			}},
		} {
			t.Run(c.name, func(t *testing.T) {
				h.parallel(t)
				a, in := h.new(t)
				first := h.newRoleBinding(t, a)
				require.NoError(t, a.ApplyRoleBinding(t.Context(), first.DeepCopy()))
				want := first.DeepCopy()
				c.mutate(t, a, want)
				require.NoError(t, a.ApplyRoleBinding(t.Context(), want.DeepCopy()))
				in.requireRoleBinding(t, want)
			})
		}
	})
	t.Run("ConcurrentApplyRoleBinding", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		base := h.newRoleBinding(t, a)
		var (
			start = make(chan struct{})
			wg    sync.WaitGroup
			want  [ConcurrentApplies]*rbacv1.RoleBinding
			errs  [ConcurrentApplies]error
		)
		for i := range want {
			want[i] = base.DeepCopy()
			changeSubjects(want[i], fmt.Sprint(i))
			wg.Go(func() {
				<-start
				errs[i] = a.ApplyRoleBinding(t.Context(), want[i].DeepCopy())
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "ApplyRoleBinding %d", i)
		}
		got, err := in.RoleBinding(t.Context(), base.Namespace, base.Name)
		require.NoError(t, err)
		require.NotNil(t, got, "RoleBinding %s/%s not found", base.Namespace, base.Name)
		for _, w := range want {
			if equality.Semantic.DeepEqual(w.Subjects, got.Subjects) {
				in.requireRoleBinding(t, w)
				return
			}
		}
		t.Fatalf("stored subjects %v are none of those applied", got.Subjects)
	})
	t.Run("DeleteRoleBindingTwiceSucceeds", func(t *testing.T) {
		h.parallel(t)
		a, in := h.new(t)
		b := h.newRoleBinding(t, a)
		require.NoError(t, a.ApplyRoleBinding(t.Context(), b.DeepCopy()))
		require.NoError(t, a.DeleteRoleBinding(t.Context(), b.Namespace, b.Name))
		got, err := in.RoleBinding(t.Context(), b.Namespace, b.Name)
		require.NoError(t, err)
		require.Nil(t, got, "RoleBinding %s/%s after DeleteRoleBinding", b.Namespace, b.Name)
		require.NoError(t, a.DeleteRoleBinding(t.Context(), b.Namespace, b.Name), "second DeleteRoleBinding")
	})
	t.Run("DeleteUnknownRoleBindingSucceeds", func(t *testing.T) {
		h.parallel(t)
		a, _ := h.new(t)
		require.NoError(t, a.DeleteRoleBinding(t.Context(), h.namespace(t), rbac.BindingName("kubepact-test-none")))
	})
	t.Run("CancelledContext", func(t *testing.T) {
		h.parallel(t)
		a, _ := h.new(t)
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		r := newClusterRole(t)
		b := roleBinding(h.namespace(t), r.Name)
		require.ErrorIs(t, a.ApplyClusterRole(ctx, r), context.Canceled, "ApplyClusterRole")
		require.ErrorIs(t, a.ApplyRoleBinding(ctx, b), context.Canceled, "ApplyRoleBinding")
		require.ErrorIs(t, a.DeleteRoleBinding(ctx, b.Namespace, b.Name), context.Canceled, "DeleteRoleBinding")
	})
}

const (
	testKey  = "conformance.kubepact.io/value"
	extraKey = "conformance.kubepact.io/extra"
	// foreignKey is a label kubepact does not set, as another controller's.
	foreignKey = "conformance.kubepact.io/foreign"
)

func (h Harness) parallel(t *testing.T) {
	if h.Parallel {
		t.Parallel()
	}
}

func (h Harness) new(t *testing.T) (Port, Inspector) {
	t.Helper()
	a, in := h.New(t)
	require.NotNil(t, in.ClusterRole, "rbactest: Inspector.ClusterRole is required")
	require.NotNil(t, in.RoleBinding, "rbactest: Inspector.RoleBinding is required")
	require.NotNil(t, in.UpdateClusterRole, "rbactest: Inspector.UpdateClusterRole is required")
	require.NotNil(t, in.UpdateRoleBinding, "rbactest: Inspector.UpdateRoleBinding is required")
	return a, in
}

// namespace returns a namespace no other test uses, which it makes sure
// exists.
func (h Harness) namespace(t *testing.T) string {
	t.Helper()
	ns := clusterid.TenantNamespace(uniqueSuffix())
	if h.Namespace != nil {
		h.Namespace(t, ns)
	}
	return ns
}

// newRoleBinding applies a new ClusterRole with a, and returns a binding to
// it in a namespace no other test uses, shaped like the ones package rbac
// builds.
func (h Harness) newRoleBinding(t *testing.T, a Port) *rbacv1.RoleBinding {
	t.Helper()
	return roleBinding(h.namespace(t), applyClusterRole(t, a).Name)
}

func roleBinding(namespace, clusterRole string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta: metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      rbac.BindingName(clusterRole),
			Namespace: namespace,
			Labels:    map[string]string{clusterid.Label: "consumer", testKey: "first"},
		},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "consumer"}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
	}
}

func changeSubjects(b *rbacv1.RoleBinding, name string) {
	b.Subjects = []rbacv1.Subject{
		{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "group-" + name},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "user-" + name},
	}
}

// newClusterRole returns a ClusterRole no other test uses.
func newClusterRole(t *testing.T) *rbacv1.ClusterRole {
	t.Helper()
	return &rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: "kubepact-test-" + uniqueSuffix(), Labels: map[string]string{testKey: "first"}},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}},
		},
	}
}

// applyClusterRole applies a new ClusterRole with a and returns it.
func applyClusterRole(t *testing.T, a rbac.Installer) *rbacv1.ClusterRole {
	t.Helper()
	r := newClusterRole(t)
	require.NoError(t, a.ApplyClusterRole(t.Context(), r.DeepCopy()), "ApplyClusterRole %s", r.Name)
	return r
}

// uniqueSuffix returns 16 random hex characters: names made with it are
// used by no other test, in this run or an earlier one on the same server.
func uniqueSuffix() string {
	var r [8]byte
	_, _ = rand.Read(r[:])
	return hex.EncodeToString(r[:])
}

// requireClusterRole checks that the stored ClusterRole of want's name has
// want's labels and rules, and returns it.
func (in Inspector) requireClusterRole(t *testing.T, want *rbacv1.ClusterRole) *rbacv1.ClusterRole {
	t.Helper()
	got, err := in.ClusterRole(t.Context(), want.Name)
	require.NoError(t, err)
	require.NotNil(t, got, "ClusterRole %s not found", want.Name)
	require.True(t, maps.Equal(want.Labels, got.Labels), "labels: got %v, want %v", got.Labels, want.Labels)
	if !equality.Semantic.DeepEqual(want.Rules, got.Rules) {
		require.Equal(t, want.Rules, got.Rules, "rules")
		t.FailNow()
	}
	return got
}

// requireRoleBinding checks that the stored RoleBinding of want's name has
// want's labels, subjects and roleRef, and returns it.
func (in Inspector) requireRoleBinding(t *testing.T, want *rbacv1.RoleBinding) *rbacv1.RoleBinding {
	t.Helper()
	got, err := in.RoleBinding(t.Context(), want.Namespace, want.Name)
	require.NoError(t, err)
	require.NotNil(t, got, "RoleBinding %s/%s not found", want.Namespace, want.Name)
	require.True(t, maps.Equal(want.Labels, got.Labels), "labels: got %v, want %v", got.Labels, want.Labels)
	require.Equal(t, want.RoleRef, got.RoleRef, "roleRef")
	if !equality.Semantic.DeepEqual(want.Subjects, got.Subjects) {
		require.Equal(t, want.Subjects, got.Subjects, "subjects")
		t.FailNow()
	}
	return got
}

// requireNotWritten checks that an object read before and after an Apply
// that changed nothing has the same UID and resourceVersion.
func requireNotWritten(t *testing.T, before, after metav1.Object) {
	t.Helper()
	require.NotEmpty(t, before.GetResourceVersion(), "the Inspector returned no resourceVersion")
	require.Equal(t, before.GetUID(), after.GetUID(), "an unchanged apply replaced the object")
	require.Equal(t, before.GetResourceVersion(), after.GetResourceVersion(), "an unchanged apply wrote")
}

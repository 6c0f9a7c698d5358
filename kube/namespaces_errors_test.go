package kube_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/tenant"
)

// TestNamespacesEnsureErrors, on a client in memory: a squatted tenant
// namespace is refused with a *tenant.NamespaceError whether Ensure reads
// first or creates first, and writes nothing to it; a failing request is
// returned wrapped, still recognised by apierrors, naming the namespace.
func TestNamespacesEnsureErrors(t *testing.T) {
	t.Parallel()
	const id = "cl-errors"
	name := clusterid.TenantNamespace(id)
	squatted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{clusterid.Label: id}}}
	fail := func(verb string, err error) func(c *k8sfake.Clientset) {
		return func(c *k8sfake.Clientset) {
			c.PrependReactor(verb, "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, err })
		}
	}
	forbidden := apierrors.NewForbidden(corev1.Resource("namespaces"), name, errors.New("no"))
	internal := apierrors.NewInternalError(errors.New("etcd"))
	for _, tc := range []struct {
		name      string
		existing  *corev1.Namespace
		readFirst bool
		react     func(c *k8sfake.Clientset)
		// squat wants a *tenant.NamespaceError; otherwise is must
		// recognise the error.
		squat bool
		is    func(error) bool
	}{
		{name: "squatted, created first", existing: squatted, squat: true},
		{name: "squatted, read first", existing: squatted, readFirst: true, squat: true},
		{name: "create fails", react: fail("create", forbidden), is: apierrors.IsForbidden},
		{name: "read after the create fails", existing: liqoNamespace(id), react: fail("get", internal), is: apierrors.IsInternalError},
		{name: "label update fails", existing: liqoNamespace(id), react: fail("update", forbidden), is: apierrors.IsForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var objects []runtime.Object
			if tc.existing != nil {
				objects = append(objects, tc.existing.DeepCopy())
			}
			c := k8sfake.NewClientset(objects...)
			if tc.react != nil {
				tc.react(c)
			}
			ns := kube.NewNamespaces(c)
			if tc.readFirst {
				ns = ns.WithReadFirst()
			}
			err := ns.Ensure(context.Background(), withLabel(tenant.Namespace(id), "example.com/added", "yes"))
			require.Error(t, err)
			require.Contains(t, err.Error(), name)
			if tc.squat {
				var nerr *tenant.NamespaceError
				require.ErrorAs(t, err, &nerr)
				require.ErrorIs(t, err, tenant.ErrNotTenantNamespace)
				require.Equal(t, tenant.NamespaceLabel, nerr.Label)
				for _, a := range c.Actions() {
					require.NotEqual(t, "update", a.GetVerb(), "the squatted namespace was written")
				}
				if tc.readFirst {
					for _, a := range c.Actions() {
						require.NotEqual(t, "create", a.GetVerb(), "a namespace found squatted is not created")
					}
				}
				return
			}
			require.True(t, tc.is(err), "%v", err)
		})
	}
}

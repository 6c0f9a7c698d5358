package helm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/tenant"
)

var (
	crdResource    = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	tenantResource = authv1beta1.SchemeGroupVersion.WithResource("tenants")
)

// crdsOf lists the names of e's CRDs whose name ends with suffix: the
// group, as ".authentication.liqo.io" (kubepact's, and Liqo's of that
// group) or ".liqo.io" (all of Liqo's groups).
func crdsOf(ctx context.Context, t *testing.T, e *env, suffix string) []string {
	t.Helper()
	list, err := e.dynamic.Resource(crdResource).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	var out []string
	for _, u := range list.Items {
		if strings.HasSuffix(u.GetName(), suffix) {
			out = append(out, u.GetName())
		}
	}
	return out
}

// authCRDs lists e's authentication.liqo.io CRDs, the chart's crds/.
func authCRDs(ctx context.Context, t *testing.T, e *env) []string {
	t.Helper()
	return crdsOf(ctx, t, e, ".authentication.liqo.io")
}

// removeTenantFinalizers does what the README says to do after an
// uninstall that left peerings behind, to delete their records: it clears
// the finalizers of every Tenant (kubectl patch --type=merge -p
// '{"metadata":{"finalizers":null}}'), which no controller will remove
// any more.
func removeTenantFinalizers(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	list, err := e.dynamic.Resource(tenantResource).Namespace("").List(ctx, metav1.ListOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	require.NoError(t, err)
	for _, u := range list.Items {
		_, err := e.dynamic.Resource(tenantResource).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		if !apierrors.IsNotFound(err) {
			require.NoError(t, err)
		}
	}
}

// tenantNamespaces lists e's tenant namespaces (labelled
// liqo.io/tenant-namespace), and more.
func tenantNamespaces(ctx context.Context, t *testing.T, e *env, more ...string) []string {
	t.Helper()
	list, err := e.admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: tenant.NamespaceLabel})
	require.NoError(t, err)
	for _, ns := range list.Items {
		more = append(more, ns.Name)
	}
	return more
}

// deleteAndWait deletes each CRD of crds and each namespace of namespaces,
// as kubectl delete does, and waits until every one is gone: none may stay
// Terminating.
func deleteAndWait(ctx context.Context, t *testing.T, e *env, crds, namespaces []string) {
	t.Helper()
	for _, name := range crds {
		if err := e.dynamic.Resource(crdResource).Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			require.NoError(t, err, "deleting CRD %s", name)
		}
	}
	for _, name := range namespaces {
		if err := e.admin.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
			require.NoError(t, err, "deleting namespace %s", name)
		}
	}
	requireGone(ctx, t, e, crds, namespaces)
}

// requireGone waits until none of crds and namespaces exists, and fails t
// naming those still there, Terminating, with what holds them.
func requireGone(ctx context.Context, t *testing.T, e *env, crds, namespaces []string) {
	t.Helper()
	left := func() []string {
		var left []string
		for _, name := range crds {
			u, err := e.dynamic.Resource(crdResource).Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				left = append(left, "CRD "+name+" "+unstructuredConditions(u.Object))
			}
		}
		for _, name := range namespaces {
			ns, err := e.admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			if err == nil {
				var why []string
				for _, c := range ns.Status.Conditions {
					if c.Status == "True" {
						why = append(why, c.Message)
					}
				}
				left = append(left, "namespace "+name+" "+string(ns.Status.Phase)+": "+strings.Join(why, "; "))
			}
		}
		return left
	}
	// The API server's CRD finalizer lists a CRD's instances before it
	// lets the CRD go; right after a CRD's storage changed it answers
	// "storage is (re)initializing" and retries with a growing backoff.
	// An update of the CRD requeues it at once: nudge those still there
	// now and then, so that a transient does not turn into minutes.
	nudged := time.Now()
	nudge := func() {
		if time.Since(nudged) < 5*time.Second {
			return
		}
		nudged = time.Now()
		for _, name := range crds {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.kubepact.io/nudge":%q}}}`, nudged.Format(time.RFC3339Nano))
			_, _ = e.dynamic.Resource(crdResource).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		}
	}
	if !assert.Eventually(t, func() bool { nudge(); return len(left()) == 0 }, 2*wait, 250*time.Millisecond, "deleted, none left Terminating") {
		t.Fatalf("still there: %s", strings.Join(left(), "\n"))
	}
}

// unstructuredConditions summarises a CRD's true conditions.
func unstructuredConditions(obj map[string]any) string {
	conds, _, _ := unstructured.NestedSlice(obj, "status", "conditions")
	var out []string
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["status"] == "True" {
			out = append(out, fmt.Sprintf("%v: %v", m["type"], m["message"]))
		}
	}
	return strings.Join(out, "; ")
}

// requireNoneTerminating fails t if a namespace of e is Terminating.
func requireNoneTerminating(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	list, err := e.admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, ns := range list.Items {
		assert.Nil(t, ns.DeletionTimestamp, "namespace %s is not Terminating", ns.Name)
	}
}

// wipe leaves the provider as bare as kubepact sees it for the next test,
// whatever the test left: it uninstalls the releases in kubepact-system
// and liqo, clears the Tenants' finalizers, and deletes the
// authentication.liqo.io CRDs, the namespaces the tests use, and the
// cluster-scoped objects config/ or a chart made. Liqo's CRDs of its other
// groups, which nothing of kubepact's uses, stay once a test installed them.
func wipe(t *testing.T, e *env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	for _, ns := range []string{releaseNamespace, liqoNamespace} {
		h := newHelm(t, e, ns)
		for _, r := range h.releases(t) {
			_, err := h.uninstall(r.Name)
			assert.NoError(t, err, "helm uninstall %s -n %s", r.Name, ns)
		}
	}
	removeTenantFinalizers(ctx, t, e)
	for _, kind := range []struct {
		r      schema.GroupVersionResource
		prefix []string
	}{
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, []string{"kubepact-", "liqo-"}},
		{schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, []string{"kubepact-", "liqo-"}},
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"}, []string{"kubepact-"}},
		{schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}, []string{"kubepact-"}},
		{schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}, []string{"kubepact-"}},
	} {
		list, err := e.dynamic.Resource(kind.r).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, u := range list.Items {
			for _, p := range kind.prefix {
				if strings.HasPrefix(u.GetName(), p) {
					_ = e.dynamic.Resource(kind.r).Delete(ctx, u.GetName(), metav1.DeleteOptions{})
				}
			}
		}
	}
	deleteAndWait(ctx, t, e, authCRDs(ctx, t, e), tenantNamespaces(ctx, t, e, releaseNamespace, liqoNamespace))
}

var (
	clusterRoleResource = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	configMapResource   = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
)

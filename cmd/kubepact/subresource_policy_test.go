package main

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/attack"
	"github.com/kubepact/kubepact/saidentity"
)

// grantClusterRole binds the ClusterRole r to subject on env until the
// test ends.
func grantClusterRole(ctx context.Context, t *testing.T, env *testEnv, r *rbacv1.ClusterRole, subject rbacv1.Subject) {
	t.Helper()
	_, err := env.client.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = env.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name},
		Subjects: []rbacv1.Subject{subject}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = env.client.RbacV1().ClusterRoleBindings().Delete(ctx, r.Name, metav1.DeleteOptions{})
		_ = env.client.RbacV1().ClusterRoles().Delete(ctx, r.Name, metav1.DeleteOptions{})
	})
}

// TestFlowPoliciesCoverSubresources: the admission policies of
// config/token-server and config/serviceaccount-identity, which confine
// their ServiceAccount's writes to tenant namespaces without pod-security
// label changes, hold through the namespace's subresources too
// (namespaces/status and namespaces/finalize keep metadata as sent), were
// the ServiceAccount ever granted one: it writes no namespace but tenant
// namespaces through them, and sets, changes or removes no pod-security
// label. Another label of a tenant namespace goes through: RBAC lets it,
// and the policy refuses only what it guards. The issuer, which writes no
// PeeringRequest, writes none through peeringrequests/status either.
func TestFlowPoliciesCoverSubresources(t *testing.T) {
	ctx := testContext(t)
	attack.RequireSubresources(t, providerEnv.client.Discovery())
	applyConfig(t, ctx, providerEnv, "token-server")
	applyConfig(t, ctx, providerEnv, "serviceaccount-identity")
	admin := providerEnv.client
	// Both policies are in force once each refuses a write RBAC allows.
	awaitPolicy(t, func() error {
		probe := secret(metav1.NamespaceDefault, "liqo-remote-certificate")
		_, err := impersonating(t, providerEnv, tokenServer).CoreV1().Secrets(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{})
		if err == nil {
			_ = admin.CoreV1().Secrets(probe.Namespace).Delete(ctx, probe.Name, metav1.DeleteOptions{})
		}
		return err
	})
	awaitPolicy(t, func() error {
		_, err := impersonating(t, providerEnv, issuer).CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
		if err == nil {
			_ = admin.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Delete(ctx, "probe", metav1.DeleteOptions{})
		}
		return err
	})

	for _, who := range []struct {
		name string
		user rest.ImpersonationConfig
	}{{"kubepact-token-server", tokenServer}, {"kubepact-serviceaccount-issuer", issuer}} {
		for _, sub := range slices.Sorted(maps.Keys(attack.NamespaceSubresourceWrites)) {
			write := attack.NamespaceSubresourceWrites[sub]
			t.Run(who.name+"/"+sub, func(t *testing.T) {
				grantClusterRole(ctx, t, providerEnv, attack.SubresourceRole(who.name+"-"+sub, sub, false),
					rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: who.name, Namespace: "kubepact-system"})
				sa := impersonating(t, providerEnv, who.user)
				name := clusterid.TenantNamespace(unique("cl-sub"))
				t.Cleanup(func() { _ = admin.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
				_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
					Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
				require.NoError(t, err)

				// Once the API server has the binding, another label of a
				// tenant namespace goes through sub.
				require.Eventually(t, func() bool {
					n, err := admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
					require.NoError(t, err)
					n.Labels["example.com/team"] = "a"
					return write(ctx, sa, n) == nil
				}, time.Minute, 200*time.Millisecond, "%s writes %s of a tenant namespace", who.name, sub)

				for _, ns := range []string{name, metav1.NamespaceDefault} {
					n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
					require.NoError(t, err)
					forged := n.DeepCopy()
					forged.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
					attack.Refused(t, write(ctx, sa, forged))
					removed := n.DeepCopy()
					delete(removed.Labels, "pod-security.kubernetes.io/enforce")
					if ns == metav1.NamespaceDefault {
						// Not a tenant namespace: no write at all.
						removed.Labels["example.com/team"] = "a"
					}
					attack.Refused(t, write(ctx, sa, removed))
					got, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
					require.NoError(t, err)
					require.Equal(t, n.Labels, got.Labels, "the labels of %s", ns)
				}
			})
		}
	}

	t.Run("kubepact-serviceaccount-issuer/peeringrequests-status", func(t *testing.T) {
		prs := installPeeringRequestCRD(ctx, t)
		id := unique("cl-sub-pr")
		pr := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": saidentity.PeeringRequestGroup + "/v1alpha1", "kind": "PeeringRequest",
			"metadata": map[string]any{"name": id}, "spec": map[string]any{"clusterID": id},
		}}
		_, err := providerEnv.dynamic.Resource(prs).Create(ctx, pr, metav1.CreateOptions{})
		require.NoError(t, err)
		grantClusterRole(ctx, t, providerEnv, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kubepact-serviceaccount-issuer-pr-status"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{saidentity.PeeringRequestGroup}, Resources: []string{"peeringrequests/status"}, Verbs: []string{"update"}}}},
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kubepact-serviceaccount-issuer", Namespace: "kubepact-system"})
		// RBAC lets the issuer in, as the API server's authorizer says:
		// the refusal is the policy's.
		require.Eventually(t, func() bool {
			r, err := admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: issuer.UserName, Groups: issuer.Groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "update", Group: saidentity.PeeringRequestGroup,
					Resource: "peeringrequests", Subresource: "status", Name: id},
			}}, metav1.CreateOptions{})
			require.NoError(t, err)
			return r.Status.Allowed
		}, time.Minute, 200*time.Millisecond, "RBAC grants the issuer peeringrequests/status")
		cfg := rest.CopyConfig(providerEnv.cluster.AdminConfig())
		cfg.Impersonate = issuer
		d, err := dynamic.NewForConfig(cfg)
		require.NoError(t, err)
		cur, err := providerEnv.dynamic.Resource(prs).Get(ctx, id, metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(cur.Object, "forged", "status", "phase"))
		_, err = d.Resource(prs).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		attack.Refused(t, err)
		got, err := providerEnv.dynamic.Resource(prs).Get(ctx, id, metav1.GetOptions{})
		require.NoError(t, err)
		_, found, _ := unstructured.NestedFieldNoCopy(got.Object, "status")
		require.False(t, found, "the PeeringRequest's status stays unwritten")
	})
}

// installPeeringRequestCRD installs a minimal discovery.liqo.io
// PeeringRequest CRD with a status subresource, until the test ends, and
// returns its resource once served.
func installPeeringRequestCRD(ctx context.Context, t *testing.T) schema.GroupVersionResource {
	t.Helper()
	prs := schema.GroupVersionResource{Group: saidentity.PeeringRequestGroup, Version: "v1alpha1", Resource: "peeringrequests"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "peeringrequests.discovery.liqo.io"},
		"spec": map[string]any{
			"group": saidentity.PeeringRequestGroup,
			"scope": "Cluster",
			"names": map[string]any{"plural": "peeringrequests", "singular": "peeringrequest", "kind": "PeeringRequest", "listKind": "PeeringRequestList"},
			"versions": []any{map[string]any{
				"name": "v1alpha1", "served": true, "storage": true,
				"subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	crds := providerEnv.dynamic.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = crds.Delete(context.Background(), crd.GetName(), metav1.DeleteOptions{}) })
	require.Eventually(t, func() bool {
		_, err := providerEnv.dynamic.Resource(prs).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil
	}, time.Minute, 100*time.Millisecond, "the PeeringRequest CRD served")
	return prs
}

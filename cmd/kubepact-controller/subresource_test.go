package main

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/attack"
	"github.com/kubepact/kubepact/tenant"
)

// grantCluster binds a ClusterRole r to subjects on s until the test ends.
func grantCluster(ctx context.Context, t *testing.T, s *side, r *rbacv1.ClusterRole, subjects ...rbacv1.Subject) {
	t.Helper()
	_, err := s.admin.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = s.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: r.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name},
		Subjects: subjects}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = s.admin.RbacV1().ClusterRoleBindings().Delete(ctx, r.Name, metav1.DeleteOptions{})
		_ = s.admin.RbacV1().ClusterRoles().Delete(ctx, r.Name, metav1.DeleteOptions{})
	})
}

// deleteNamespaceAtEnd deletes the namespace name of s when the test ends.
func deleteNamespaceAtEnd(t *testing.T, s *side, name string) {
	t.Cleanup(func() { _ = s.admin.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{}) })
}

// TestNamespaceSubresources: every admission rule of config/ on a
// namespace's labels or name covers the namespace's subresources too.
// namespaces/status and namespaces/finalize keep metadata as sent, so an
// update through either writes labels as an update of the namespace does.
// The API server serves no other subresource of namespaces, and none of
// Secrets or ConfigMaps (the key and public-key record policies match
// names of those): a new one fails here until it is tried.
//
//   - The signed-nonce policy: a user whom RBAC grants only create on
//     namespaces and update on one subresource makes a namespace
//     liqo-tenant-* without the tenant-namespace labels (the policy allows
//     that), then sets them through the subresource: refused; nor may she
//     change or remove them once an allowed identity set them. Another
//     label, through the same subresource, is hers to set: the refusal is
//     the policy's, not RBAC's.
//   - The controller's own policy: its ServiceAccount, were it granted a
//     subresource, still changes no pod-security label of a tenant
//     namespace and writes no namespace but tenant namespaces.
func TestNamespaceSubresources(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := providerEnv
	admin := s.admin
	attack.RequireSubresources(t, admin.Discovery())

	for _, sub := range slices.Sorted(maps.Keys(attack.NamespaceSubresourceWrites)) {
		write := attack.NamespaceSubresourceWrites[sub]
		t.Run("SignedNonce/"+sub, func(t *testing.T) {
			user := "namespaces-" + sub + "-writer"
			grantCluster(ctx, t, s, attack.SubresourceRole(user, sub, true), userSubject(user))
			c := impersonate(t, s, user)
			id := "cl-sub-" + sub
			name := clusterid.TenantNamespace(id)
			deleteNamespaceAtEnd(t, s, name)
			// The API server may not have loaded the new binding yet.
			var n *corev1.Namespace
			require.Eventually(t, func() bool {
				var err error
				n, err = c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				return err == nil || apierrors.IsAlreadyExists(err)
			}, time.Minute, 200*time.Millisecond, "%s creates %s, unlabelled", user, name)
			n, err := admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)

			// The tenant-namespace labels, or either one, through sub.
			for _, labels := range []map[string]string{
				tenant.Namespace(id).Labels,
				{clusterid.Label: id},
				{tenant.NamespaceLabel: "true"},
			} {
				forged := n.DeepCopy()
				forged.Labels = map[string]string{}
				maps.Copy(forged.Labels, n.Labels)
				maps.Copy(forged.Labels, labels)
				attack.Refused(t, write(ctx, c, forged))
			}
			got, err := admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			require.NotContains(t, got.Labels, clusterid.Label)
			require.NotContains(t, got.Labels, tenant.NamespaceLabel)

			// Another label goes through sub: RBAC lets the user in.
			other := got.DeepCopy()
			other.Labels["example.com/team"] = "a"
			require.NoError(t, write(ctx, c, other), "a label the policy does not cover, through %s", sub)

			// Labelled by an allowed identity, they stay as it set them.
			got, err = admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			maps.Copy(got.Labels, tenant.Namespace(id).Labels)
			labelled, err := admin.CoreV1().Namespaces().Update(ctx, got, metav1.UpdateOptions{})
			require.NoError(t, err)
			for _, change := range []func(map[string]string){
				func(l map[string]string) { l[clusterid.Label] = "cl-elsewhere" },
				func(l map[string]string) { delete(l, clusterid.Label) },
				func(l map[string]string) { delete(l, tenant.NamespaceLabel) },
			} {
				forged := labelled.DeepCopy()
				change(forged.Labels)
				attack.Refused(t, write(ctx, c, forged))
			}
			got, err = admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			require.Equal(t, labelled.Labels, got.Labels)
		})

		t.Run("Controller/"+sub, func(t *testing.T) {
			// The controller's ServiceAccount, with update on sub besides
			// what config/ grants it.
			grantCluster(ctx, t, s, attack.SubresourceRole("kubepact-controller-"+sub, sub, false),
				rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kubepact-controller", Namespace: "kubepact-system"})
			sa, err := kubernetes.NewForConfig(s.sa)
			require.NoError(t, err)
			name := clusterid.TenantNamespace("cl-sub-ctl-" + sub)
			deleteNamespaceAtEnd(t, s, name)
			_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
			require.NoError(t, err)

			// Another label of a tenant namespace goes through sub, once
			// the API server has the binding.
			require.Eventually(t, func() bool {
				n, err := admin.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
				require.NoError(t, err)
				n.Labels["example.com/team"] = "a"
				return write(ctx, sa, n) == nil
			}, time.Minute, 200*time.Millisecond, "the ServiceAccount writes %s of a tenant namespace", sub)

			for _, ns := range []string{name, metav1.NamespaceDefault} {
				n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				require.NoError(t, err)
				forged := n.DeepCopy()
				if forged.Labels == nil {
					forged.Labels = map[string]string{}
				}
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

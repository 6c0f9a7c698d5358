package attack

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
)

// NamespaceSubresourceWrites are the subresources of a namespace through
// which an update writes its metadata, labels included: their update
// strategies reset the spec (status) or the status (finalize) and keep
// metadata as sent. Each writes n, as given, through its subresource.
var NamespaceSubresourceWrites = map[string]func(ctx context.Context, c kubernetes.Interface, n *corev1.Namespace) error{
	"status": func(ctx context.Context, c kubernetes.Interface, n *corev1.Namespace) error {
		_, err := c.CoreV1().Namespaces().UpdateStatus(ctx, n, metav1.UpdateOptions{})
		return err
	},
	"finalize": func(ctx context.Context, c kubernetes.Interface, n *corev1.Namespace) error {
		_, err := c.CoreV1().Namespaces().Finalize(ctx, n, metav1.UpdateOptions{})
		return err
	},
}

// RequireSubresources checks that the API server d serves, of the core
// group's resources, the subresources the admission tests try and no
// other: namespaces/status and namespaces/finalize
// (NamespaceSubresourceWrites), none of secrets or configmaps, and only
// serviceaccounts/token. A subresource a later Kubernetes adds fails here
// until a test tries it.
func RequireSubresources(t testing.TB, d discovery.DiscoveryInterface) {
	t.Helper()
	list, err := d.ServerResourcesForGroupVersion("v1")
	require.NoError(t, err)
	subs := map[string][]string{}
	for _, r := range list.APIResources {
		if parent, sub, ok := strings.Cut(r.Name, "/"); ok {
			subs[parent] = append(subs[parent], sub)
		}
	}
	for _, s := range subs {
		slices.Sort(s)
	}
	require.Equal(t, []string{"finalize", "status"}, subs["namespaces"], "the subresources of namespaces")
	require.Empty(t, subs["secrets"], "the subresources of secrets")
	require.Empty(t, subs["configmaps"], "the subresources of configmaps")
	require.Equal(t, []string{"token"}, subs["serviceaccounts"], "the subresources of serviceaccounts")
}

// SubresourceRole is a ClusterRole named name that grants update of
// namespaces/sub and, with create, creating namespaces: nothing else.
func SubresourceRole(name, sub string, create bool) *rbacv1.ClusterRole {
	r := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces/" + sub}, Verbs: []string{"update"}}},
	}
	if create {
		r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"create"}})
	}
	return r
}

package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/keys"
)

// controllerSubject is the ServiceAccount config/ runs the controller as.
var controllerSubject = rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kubepact-system", Name: "kubepact-controller"}

// TestControllerTokenReadsNoOtherSecret runs both roles as shipped (config/
// applied, as the controller's ServiceAccount), completes a handshake, and
// then acts as a thief holding the controller's token. The controller read
// its Secrets through kubepact-controller-secrets, which it bound to itself
// in each namespace it works in (the tenant namespaces and the key
// namespace). The thief cannot get, list or watch a Secret of kube-system,
// nor list Secrets across namespaces, nor read one through a write (a
// patch or a delete returns the object), nor bind kubepact-controller-secrets
// where it is not bound, to anyone else, under another name, or with a
// second subject, nor take back a binding. The same binding in a tenant
// namespace is admitted, so each refusal is the policy's.
func TestControllerTokenReadsNoOtherSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const providerID, consumerID = "cl-reads-provider", "cl-reads-consumer"
	caFile := writeFile(t, providerEnv.cluster.CA())
	start(t, providerEnv, "--cluster-id="+providerID, "--roles=provider",
		"--api-server-url="+providerEnv.cluster.Host(), "--api-server-ca-file="+caFile,
		"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	start(t, consumerEnv, "--cluster-id="+consumerID, "--roles=consumer",
		"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	handshake(ctx, t, providerID, consumerID)

	for _, c := range []struct {
		s          *side
		namespaces []string
	}{
		{providerEnv, []string{clusterid.TenantNamespace(consumerID), keys.DefaultNamespace}},
		{consumerEnv, []string{clusterid.TenantNamespace(providerID), keys.DefaultNamespace}},
	} {
		for _, ns := range c.namespaces {
			b, err := c.s.admin.RbacV1().RoleBindings(ns).Get(ctx, controllers.SecretReaderRole, metav1.GetOptions{})
			require.NoError(t, err, "the controller's reads in %s", ns)
			require.Equal(t, []rbacv1.Subject{controllerSubject}, b.Subjects, ns)
		}
	}

	s := providerEnv
	thief, err := kubernetes.NewForConfig(s.sa)
	require.NoError(t, err)
	const jewel = "kubepact-test-crown-jewel"
	_, err = s.admin.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: jewel,
		Labels: map[string]string{clusterid.Label: consumerID}}, StringData: map[string]string{"token": "not yours"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = s.admin.CoreV1().Secrets("kube-system").Delete(context.Background(), jewel, metav1.DeleteOptions{})
	})
	dry := []string{metav1.DryRunAll}
	secrets := thief.CoreV1().Secrets("kube-system")

	forbidden := func(what string, err error) {
		t.Helper()
		require.Truef(t, apierrors.IsForbidden(err), "%s: want Forbidden, got %v", what, err)
	}
	_, err = secrets.Get(ctx, jewel, metav1.GetOptions{})
	forbidden("get a Secret of kube-system", err)
	_, err = secrets.List(ctx, metav1.ListOptions{})
	forbidden("list the Secrets of kube-system", err)
	_, err = thief.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
	forbidden("list every Secret", err)
	_, err = thief.CoreV1().Secrets("").Watch(ctx, metav1.ListOptions{})
	forbidden("watch every Secret", err)
	_, err = secrets.Patch(ctx, jewel, types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{DryRun: dry})
	forbidden("patch a Secret of kube-system (its answer is the Secret)", err)
	forbidden("delete a Secret of kube-system (its answer is the Secret)", secrets.Delete(ctx, jewel, metav1.DeleteOptions{DryRun: dry}))

	tenantNS := clusterid.TenantNamespace("cl-reads-attack")
	ensureNamespace(ctx, t, s, tenantNS)
	t.Cleanup(func() {
		_ = s.admin.CoreV1().Namespaces().Delete(context.Background(), tenantNS, metav1.DeleteOptions{})
	})
	mallory := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}
	binding := func(ns, name, role string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}, Subjects: subjects}
	}
	create := func(b *rbacv1.RoleBinding) error {
		_, err := thief.RbacV1().RoleBindings(b.Namespace).Create(ctx, b, metav1.CreateOptions{DryRun: dry})
		return err
	}
	for what, b := range map[string]*rbacv1.RoleBinding{
		"bind its reads in kube-system":        binding("kube-system", controllers.SecretReaderRole, controllers.SecretReaderRole, controllerSubject),
		"bind its reads in default":            binding("default", controllers.SecretReaderRole, controllers.SecretReaderRole, controllerSubject),
		"bind the reads to another user":       binding(tenantNS, controllers.SecretReaderRole, controllers.SecretReaderRole, mallory),
		"bind the reads with a second subject": binding(tenantNS, controllers.SecretReaderRole, controllers.SecretReaderRole, controllerSubject, mallory),
		"bind the reads under another name":    binding(tenantNS, "mine", controllers.SecretReaderRole, controllerSubject),
		"bind admin in kube-system":            binding("kube-system", "mine", "admin", controllerSubject),
	} {
		forbidden(what, create(b))
	}

	ns := clusterid.TenantNamespace(consumerID)
	held, err := thief.RbacV1().RoleBindings(ns).Get(ctx, controllers.SecretReaderRole, metav1.GetOptions{})
	require.NoError(t, err)
	_, err = thief.RbacV1().RoleBindings(ns).Update(ctx, held, metav1.UpdateOptions{DryRun: dry})
	require.NoError(t, err, "its own reads in a tenant namespace, written again: the refusals are the policy's")
	held.Subjects = append(held.Subjects, mallory)
	_, err = thief.RbacV1().RoleBindings(ns).Update(ctx, held, metav1.UpdateOptions{DryRun: dry})
	forbidden("add a subject to its reads", err)
	forbidden("delete its reads", thief.RbacV1().RoleBindings(ns).Delete(ctx, controllers.SecretReaderRole, metav1.DeleteOptions{DryRun: dry}))
}

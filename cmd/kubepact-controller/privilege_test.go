package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/attack"
	"github.com/kubepact/kubepact/rbac"
)

// controllerUser is the user the shipped manifests make the controller.
const controllerUser = "system:serviceaccount:kubepact-system:kubepact-controller"

// TestServiceAccountCannotEscalate plays a thief holding the controller's
// token, with exactly what config/ grants it (RBAC and admission policy):
// every way below to widen its own or anyone's permissions is refused.
func TestServiceAccountCannotEscalate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sa, err := kubernetes.NewForConfig(provider.sa)
	require.NoError(t, err)
	admin := provider.admin

	const consumerID = "cl-attack"
	tenantNS := clusterid.TenantNamespace(consumerID)
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
	require.NoError(t, err)

	secret := func(ns, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{"k": "v"}}
	}
	// The policy is in force once a write it forbids is refused; RBAC
	// allows that write. Before, the API server may not have loaded it.
	require.Eventually(t, func() bool {
		_, err := sa.CoreV1().Secrets(metav1.NamespaceDefault).Create(ctx, secret(metav1.NamespaceDefault, "probe"), metav1.CreateOptions{})
		if err == nil {
			_ = admin.CoreV1().Secrets(metav1.NamespaceDefault).Delete(ctx, "probe", metav1.DeleteOptions{})
		}
		return apierrors.IsForbidden(err)
	}, time.Minute, 200*time.Millisecond, "the admission policy refuses a Secret in default")
	// What the controller does stays allowed.
	_, err = sa.CoreV1().Secrets(tenantNS).Create(ctx, secret(tenantNS, "allowed"), metav1.CreateOptions{})
	require.NoError(t, err, "a Secret in a tenant namespace")

	self := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kubepact-controller", Namespace: "kubepact-system"}
	selfUser := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controllerUser}
	authenticated := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}
	someone := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone"}
	crb := func(name, role string, s rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: []rbacv1.Subject{s},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	}
	rb := func(ns, role string, s rbacv1.Subject) *rbacv1.RoleBinding {
		return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "attack-" + role, Namespace: ns}, Subjects: []rbacv1.Subject{s},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
	}
	refused := attack.Refused

	t.Run("CreateClusterRole", func(t *testing.T) {
		_, err := sa.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "attack"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}, metav1.CreateOptions{})
		refused(t, err)
	})
	for _, name := range []string{"system:basic-user", rbac.ControlPlaneClusterRoleName} {
		t.Run("UpdateClusterRole/"+name, func(t *testing.T) {
			r, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}})
			_, err = sa.RbacV1().ClusterRoles().Update(ctx, r, metav1.UpdateOptions{})
			refused(t, err)
		})
	}
	t.Run("BindClusterAdmin", func(t *testing.T) {
		_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, crb("attack-admin", "cluster-admin", self), metav1.CreateOptions{})
		refused(t, err)
		_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, rb(tenantNS, "cluster-admin", self), metav1.CreateOptions{})
		refused(t, err)
	})
	for _, role := range rbac.PeerRoleNames() {
		t.Run("BindPeerRoleToItself/"+role, func(t *testing.T) {
			for _, s := range []rbacv1.Subject{self, selfUser} {
				_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, crb("attack-"+role, role, s), metav1.CreateOptions{})
				refused(t, err)
				for _, ns := range []string{metav1.NamespaceSystem, tenantNS} {
					_, err := sa.RbacV1().RoleBindings(ns).Create(ctx, rb(ns, role, s), metav1.CreateOptions{})
					refused(t, err)
				}
			}
		})
		t.Run("BindPeerRoleToOthers/"+role, func(t *testing.T) {
			_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, crb("liqo-binding-"+role+"-system:authenticated", role, authenticated), metav1.CreateOptions{})
			refused(t, err)
			_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, rb(tenantNS, role, authenticated), metav1.CreateOptions{})
			refused(t, err)
			for _, s := range []rbacv1.Subject{someone, {Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}} {
				_, err = sa.RbacV1().RoleBindings(metav1.NamespaceSystem).Create(ctx, rb(metav1.NamespaceSystem, role, s), metav1.CreateOptions{})
				refused(t, err)
			}
			// Another consumer's user, in this consumer's tenant namespace.
			_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, rb(tenantNS, role, someone), metav1.CreateOptions{})
			refused(t, err)
		})
	}
	t.Run("WriteSecretOutsideTenantNamespaces", func(t *testing.T) {
		for _, ns := range []string{metav1.NamespaceSystem, metav1.NamespaceDefault} {
			_, err := sa.CoreV1().Secrets(ns).Create(ctx, secret(ns, "attack"), metav1.CreateOptions{})
			refused(t, err)
		}
	})
	t.Run("ServiceAccountTokenSecret", func(t *testing.T) {
		_, err := admin.CoreV1().ServiceAccounts(tenantNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, metav1.CreateOptions{})
		require.NoError(t, err)
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "attack-token", Namespace: tenantNS,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "victim"}}, Type: corev1.SecretTypeServiceAccountToken}
		_, err = sa.CoreV1().Secrets(tenantNS).Create(ctx, s, metav1.CreateOptions{})
		refused(t, err)
		// Nor by turning an allowed Secret into one.
		allowed, err := sa.CoreV1().Secrets(tenantNS).Get(ctx, "allowed", metav1.GetOptions{})
		require.NoError(t, err)
		allowed.Type = corev1.SecretTypeServiceAccountToken
		_, err = sa.CoreV1().Secrets(tenantNS).Update(ctx, allowed, metav1.UpdateOptions{})
		require.Error(t, err) // the API server refuses a type change; either refusal will do
	})
	t.Run("PodSecurityLabels", func(t *testing.T) {
		attack.RefusePodSecurityChanges(t, ctx, admin, sa, tenantNS)
	})
	t.Run("ApproveOthersCSR", func(t *testing.T) {
		c := attack.OthersCSR(t, ctx, admin)
		_, err := sa.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, c, metav1.UpdateOptions{})
		refused(t, err)
	})
	t.Run("TokenForKubeSystemServiceAccount", func(t *testing.T) {
		_, err := sa.CoreV1().ServiceAccounts(metav1.NamespaceSystem).CreateToken(ctx, "default",
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{}}, metav1.CreateOptions{})
		refused(t, err)
	})
	t.Run("TenantNamespaceWithPodSecurityAtCreation", func(t *testing.T) {
		// --tenant-namespace-pod-security sets the label at creation,
		// which the policy allows; it never changes it afterwards.
		_, err := sa.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterid.TenantNamespace("cl-attack-psa"),
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}, metav1.CreateOptions{})
		require.NoError(t, err)
	})
	t.Run("CreateNamespace", func(t *testing.T) {
		_, err := sa.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "attack"}}, metav1.CreateOptions{})
		refused(t, err)
	})
}

// TestPolicyFollowsServiceAccount renders config/ with the namespace set in
// config/controller or in config/ itself: the admission policy's match
// condition and the bindings' subjects name the ServiceAccount where it
// then lives.
func TestPolicyFollowsServiceAccount(t *testing.T) {
	for _, file := range []string{"controller/kustomization.yaml", "kustomization.yaml"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "config"))))
			path := filepath.Join(dir, file)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b = regexp.MustCompile(`(?m)^namespace: .*\n`).ReplaceAll(b, nil)
			b = regexp.MustCompile(`(?m)^resources:`).ReplaceAll(b, []byte("namespace: team-a\nresources:"))
			require.NoError(t, os.WriteFile(path, b, 0o644))
			objects, err := kustomize(t.Context(), dir)
			require.NoError(t, err)
			var policies, subjects int
			for _, u := range objects {
				switch u.GetKind() {
				case "ValidatingAdmissionPolicy":
					conds, _, err := unstructured.NestedSlice(u.Object, "spec", "matchConditions")
					require.NoError(t, err)
					require.Len(t, conds, 1)
					require.Equal(t, "request.userInfo.username == 'system:serviceaccount:' + 'team-a' + ':' + 'kubepact-controller'",
						conds[0].(map[string]any)["expression"])
					policies++
				case "ClusterRoleBinding", "RoleBinding":
					if !strings.HasPrefix(u.GetName(), "kubepact-controller") {
						continue
					}
					ss, _, err := unstructured.NestedSlice(u.Object, "subjects")
					require.NoError(t, err)
					require.Equal(t, map[string]any{"kind": "ServiceAccount", "name": "kubepact-controller", "namespace": "team-a"}, ss[0])
					subjects++
				}
			}
			require.Equal(t, 1, policies)
			require.Equal(t, 2, subjects)
		})
	}
}

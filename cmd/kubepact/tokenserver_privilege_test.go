package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/attack"
	"github.com/kubepact/kubepact/rbac"
)

// tokenServer is the identity config/token-server gives kubepact serve.
var tokenServer = serviceAccountUser("kubepact-system", "kubepact-token-server")

// TestTokenServerServiceAccount applies config/token-server to the provider
// and runs kubepact serve as its ServiceAccount, with exactly the RBAC and
// admission policy shipped: a consumer authenticates with the token. Then,
// as a thief holding that ServiceAccount's token, it tries every way to
// widen its own or anyone's permissions: each is refused.
func TestTokenServerServiceAccount(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	applyConfig(t, ctx, providerEnv, "token-server")
	sa := impersonating(t, providerEnv, tokenServer)
	admin := providerEnv.client

	probe := secret(metav1.NamespaceDefault, "liqo-remote-certificate")
	awaitPolicy(t, func() error {
		_, err := sa.CoreV1().Secrets(probe.Namespace).Create(ctx, probe, metav1.CreateOptions{})
		if err == nil {
			_ = admin.CoreV1().Secrets(probe.Namespace).Delete(ctx, probe.Name, metav1.DeleteOptions{})
		}
		return err
	})

	t.Run("Serve", func(t *testing.T) {
		// The Liqo namespace is the default, liqo, as the policy's
		// liqoNamespace says.
		consumerID, providerID, namespace := unique("cl-consumer-tsa"), unique("cl-provider-tsa"), unique("liqo-tsa")
		kubeconfig := impersonatingKubeconfig(t, providerEnv, tokenServer)
		addr, caFile, _ := startServe(t, ctx, "--kubeconfig", kubeconfig, "-n", "liqo", "--cluster-id", providerID)
		tok := strings.TrimSpace(cli(t, "", "get", "token", "--kubeconfig", kubeconfig, "-n", "liqo").ok(t).stdout)
		require.Regexp(t, tokenText, tok+"\n")

		r := cli(t, "", "authenticate", "--auth-token", tok, "--auth-url", "https://"+addr, "--auth-ca", caFile,
			"--kubeconfig", consumerEnv.kubeconfig, "-n", namespace, "--cluster-id", consumerID, "--remote-cluster-id", providerID).ok(t)
		assert.Contains(t, r.stdout, "  user:      "+consumerID+"\n")
		cfg, _ := issuedConfig(t, ctx, providerID)
		requireLeastPrivilege(t, ctx, cfg, clusterid.TenantNamespace(consumerID))

		// Signed through the CSR API, as the token server itself.
		csrs, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: clusterid.Label + "=" + consumerID})
		require.NoError(t, err)
		require.Len(t, csrs.Items, 1)
		assert.Equal(t, tokenServer.UserName, csrs.Items[0].Spec.Username)

		// A rotation works as the token server too.
		rotated := cli(t, "", "get", "token", "--rotate", "--kubeconfig", kubeconfig, "-n", "liqo").ok(t).stdout
		require.NotEqual(t, tok, strings.TrimSpace(rotated))

		// Without --cluster-id, it reads Liqo's cluster ID ConfigMap: RBAC
		// lets it (here there is none).
		_, err = sa.CoreV1().ConfigMaps("liqo").Get(ctx, clusterid.RecordName, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "reading the cluster ID: %v", err)
	})

	const consumerID = "cl-tsa-attack"
	tenantNS := clusterid.TenantNamespace(consumerID)
	_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	self := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kubepact-token-server", Namespace: "kubepact-system"}
	selfUser := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: tokenServer.UserName}
	authenticated := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}
	someone := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone"}
	consumerUser := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}
	controlPlaneBinding := rbac.BindingName(rbac.ControlPlaneClusterRoleName)

	// What the token server does stays allowed; the binding goes again, so
	// that the attempts below are refused for what they bind, not for its
	// name.
	_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, roleBinding(tenantNS, controlPlaneBinding, "ClusterRole", rbac.ControlPlaneClusterRoleName, consumerUser), metav1.CreateOptions{})
	require.NoError(t, err, "the ControlPlane binding of a tenant")
	require.NoError(t, sa.RbacV1().RoleBindings(tenantNS).Delete(ctx, controlPlaneBinding, metav1.DeleteOptions{}))

	t.Run("CreateClusterRole", func(t *testing.T) {
		_, err := sa.RbacV1().ClusterRoles().Create(ctx, wildcardRole("attack"), metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	for _, name := range []string{"system:basic-user", rbac.ControlPlaneClusterRoleName} {
		t.Run("UpdateClusterRole/"+name, func(t *testing.T) {
			r, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			r.Rules = append(r.Rules, wildcardRole("").Rules...)
			_, err = sa.RbacV1().ClusterRoles().Update(ctx, r, metav1.UpdateOptions{})
			attack.Refused(t, err)
			_, err = sa.RbacV1().ClusterRoles().Patch(ctx, name, types.JSONPatchType, addSecretsRule, metav1.PatchOptions{})
			attack.Refused(t, err)
		})
	}
	t.Run("BindClusterAdmin", func(t *testing.T) {
		_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, clusterRoleBinding("attack-admin", "cluster-admin", self), metav1.CreateOptions{})
		attack.Refused(t, err)
		_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, roleBinding(tenantNS, controlPlaneBinding, "ClusterRole", "cluster-admin", consumerUser), metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	for _, role := range rbac.PeerRoleNames() {
		t.Run("BindPeerRoleToItself/"+role, func(t *testing.T) {
			for _, s := range []rbacv1.Subject{self, selfUser} {
				_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, clusterRoleBinding("attack-"+role, role, s), metav1.CreateOptions{})
				attack.Refused(t, err)
				for _, ns := range []string{metav1.NamespaceSystem, tenantNS} {
					_, err := sa.RbacV1().RoleBindings(ns).Create(ctx, roleBinding(ns, rbac.BindingName(role), "ClusterRole", role, s), metav1.CreateOptions{})
					attack.Refused(t, err)
				}
			}
		})
		t.Run("BindPeerRoleToOthers/"+role, func(t *testing.T) {
			_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, clusterRoleBinding("attack-"+role, role, authenticated), metav1.CreateOptions{})
			attack.Refused(t, err)
			_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, roleBinding(tenantNS, rbac.BindingName(role), "ClusterRole", role, authenticated), metav1.CreateOptions{})
			attack.Refused(t, err)
			for _, s := range []rbacv1.Subject{someone, consumerUser} {
				_, err = sa.RbacV1().RoleBindings(metav1.NamespaceSystem).Create(ctx, roleBinding(metav1.NamespaceSystem, rbac.BindingName(role), "ClusterRole", role, s), metav1.CreateOptions{})
				attack.Refused(t, err)
			}
			// Another consumer's user, in this consumer's tenant namespace.
			_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, roleBinding(tenantNS, rbac.BindingName(role), "ClusterRole", role, someone), metav1.CreateOptions{})
			attack.Refused(t, err)
		})
	}
	t.Run("WriteSecretOutsideItsOwn", func(t *testing.T) {
		for _, s := range []*corev1.Secret{
			secret(metav1.NamespaceSystem, "liqo-remote-certificate"), secret(metav1.NamespaceDefault, "auth-token"),
			secret(tenantNS, "attack"), secret("liqo", "attack"),
		} {
			_, err := sa.CoreV1().Secrets(s.Namespace).Create(ctx, s, metav1.CreateOptions{})
			attack.Refused(t, err)
		}
	})
	t.Run("ReadSecretOutsideItsOwn", func(t *testing.T) {
		_, err := sa.CoreV1().Secrets(metav1.NamespaceSystem).Get(ctx, "any", metav1.GetOptions{})
		attack.Refused(t, err)
		_, err = sa.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{})
		attack.Refused(t, err)
	})
	t.Run("ServiceAccountTokenSecret", func(t *testing.T) {
		_, err := admin.CoreV1().ServiceAccounts(tenantNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
		s := secret(tenantNS, "liqo-remote-certificate")
		s.Annotations = map[string]string{corev1.ServiceAccountNameKey: "victim"}
		s.Type = corev1.SecretTypeServiceAccountToken
		_, err = sa.CoreV1().Secrets(tenantNS).Create(ctx, s, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	t.Run("PodSecurityLabels", func(t *testing.T) {
		attack.RefusePodSecurityChanges(t, ctx, admin, sa, tenantNS)
		_, err := sa.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "liqo-tenant-attack-privileged",
			Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	t.Run("ApproveOthersCSR", func(t *testing.T) {
		c := attack.OthersCSR(t, ctx, admin)
		_, err := sa.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, c.Name, c, metav1.UpdateOptions{})
		attack.Refused(t, err)
	})
	t.Run("TokenForKubeSystemServiceAccount", func(t *testing.T) {
		_, err := sa.CoreV1().ServiceAccounts(metav1.NamespaceSystem).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	t.Run("CreateNamespace", func(t *testing.T) {
		_, err := sa.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "attack"}}, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	t.Run("WriteItsOwnPolicy", func(t *testing.T) {
		err := sa.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "kubepact-token-server", metav1.DeleteOptions{})
		attack.Refused(t, err)
	})
	t.Run("WriteAnotherConsumersTenant", func(t *testing.T) {
		victim := unique("cl-victim-tsa")
		ns := "liqo-tenant-" + victim
		_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		cfg := rest.CopyConfig(providerEnv.cluster.AdminConfig())
		cfg.Impersonate = tokenServer
		dyn, err := dynamic.NewForConfig(cfg)
		require.NoError(t, err)
		tenants := dyn.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.TenantResource))
		for _, where := range []struct{ ns, name string }{{ns, "cl-attacker"}, {metav1.NamespaceDefault, victim}} {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(authv1beta1.SchemeGroupVersion.WithKind(authv1beta1.TenantKind))
			u.SetNamespace(where.ns)
			u.SetName(where.name)
			_, err := tenants.Namespace(where.ns).Create(ctx, u, metav1.CreateOptions{})
			attack.Refused(t, err)
		}
	})
}

// addSecretsRule is a JSON patch that adds get on every Secret to a
// ClusterRole.
var addSecretsRule = []byte(`[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}}]`)

func secret(namespace, name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, StringData: map[string]string{"k": "v"}}
}

func wildcardRole(name string) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
}

func clusterRoleBinding(name, role string, s rbacv1.Subject) *rbacv1.ClusterRoleBinding {
	return &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: []rbacv1.Subject{s},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}}
}

func roleBinding(namespace, name, kind, role string, s rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}, Subjects: []rbacv1.Subject{s},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}}
}

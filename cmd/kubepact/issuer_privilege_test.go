package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/attack"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/saidentity"
)

// issuer is the identity config/serviceaccount-identity gives whoever
// issues ServiceAccount identities.
var issuer = serviceAccountUser("kubepact-system", "kubepact-serviceaccount-issuer")

// TestServiceAccountIssuer applies config/serviceaccount-identity to the
// provider and issues, refreshes and revokes an identity with the CLI as
// the issuer's ServiceAccount, with exactly the RBAC and admission policy
// shipped; the token lifetime policy the kustomization installs holds.
// Then, as a thief holding the issuer's token, it tries every way to widen
// its own or anyone's permissions: each is refused.
func TestServiceAccountIssuer(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	applyConfig(t, ctx, providerEnv, "serviceaccount-identity")
	sa := impersonating(t, providerEnv, issuer)
	admin := providerEnv.client

	awaitPolicy(t, func() error {
		_, err := sa.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "probe"}}, metav1.CreateOptions{})
		if err == nil {
			_ = admin.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Delete(ctx, "probe", metav1.DeleteOptions{})
		}
		return err
	})

	t.Run("IssueRefreshRevoke", func(t *testing.T) {
		consumerID, providerID := unique("cl-consumer-issuer"), unique("cl-provider-issuer")
		dir := t.TempDir()
		out := filepath.Join(dir, "secret.yaml")
		asIssuer := []string{"--kubeconfig", impersonatingKubeconfig(t, providerEnv, issuer), "--cluster-id", providerID}
		onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID}

		cli(t, "", append([]string{"create", "serviceaccount-identity", "--remote-cluster-id", consumerID, "--expiration", "15m",
			"--install-token-policy=false", "--out", out}, asIssuer...)...).ok(t)
		// The issuer may not write admission policies: the administrator
		// installed the token lifetime policy.
		r := cli(t, "", append([]string{"create", "serviceaccount-identity", "--remote-cluster-id", consumerID,
			"--out", filepath.Join(dir, "again.yaml")}, asIssuer...)...)
		assert.Equal(t, exitError, r.code)
		assert.Contains(t, r.stderr, saidentity.TokenPolicyName)

		data, err := os.ReadFile(out)
		require.NoError(t, err)
		_, s, _, err := readServiceAccountSecret(data)
		require.NoError(t, err)
		cfg, err := kubeconfig.Parse(s.Data[kubeconfig.SecretKey])
		require.NoError(t, err)
		restCfg, err := cfg.RESTConfig()
		require.NoError(t, err)
		identity, err := kubernetes.NewForConfig(restCfg)
		require.NoError(t, err)
		tokens := identity.CoreV1().ServiceAccounts(clusterid.TenantNamespace(consumerID))
		tokenFor := func(d time.Duration) error {
			secs := int64(d / time.Second)
			_, err := tokens.CreateToken(ctx, saidentity.Name(consumerID),
				&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
			return err
		}
		require.NoError(t, tokenFor(time.Hour), "the identity refreshes its own token")
		attack.Refused(t, tokenFor(48*time.Hour))

		cli(t, "", append([]string{"apply", "serviceaccount-identity", out}, onConsumer...)...).ok(t)
		cli(t, "", append([]string{"refresh", "serviceaccount-identity", "--remote-cluster-id", providerID}, onConsumer...)...).ok(t)

		cli(t, "", append([]string{"revoke", "serviceaccount-identity", "--remote-cluster-id", consumerID}, asIssuer...)...).ok(t)
		_, err = admin.CoreV1().ServiceAccounts(clusterid.TenantNamespace(consumerID)).Get(ctx, saidentity.Name(consumerID), metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "ServiceAccount after revoke: %v", err)
		_, err = admin.RbacV1().ClusterRoles().Get(ctx, saidentity.ClusterName(consumerID), metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "ClusterRole after revoke: %v", err)
	})

	// An identity whose objects the administrator made, for the issuer to
	// abuse.
	const victimID = "cl-issuer-victim"
	tenantNS := clusterid.TenantNamespace(victimID)
	grants, err := saidentity.BuildGrants(victimID)
	require.NoError(t, err)
	for _, create := range []func() error{
		func() error {
			_, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS,
				Labels: map[string]string{"pod-security.kubernetes.io/enforce": "restricted"}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().ServiceAccounts(tenantNS).Create(ctx, saidentity.ServiceAccount(victimID), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().ServiceAccounts(tenantNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "victim"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			// Another consumer's identity, in this consumer's namespace.
			_, err := admin.CoreV1().ServiceAccounts(tenantNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: saidentity.Name("cl-other")}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.RbacV1().Roles(tenantNS).Create(ctx, grants.Role, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.RbacV1().ClusterRoles().Create(ctx, grants.ClusterRole, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().Secrets(metav1.NamespaceDefault).Create(ctx, secret(metav1.NamespaceDefault, "victim"), metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := admin.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, secret(metav1.NamespaceSystem, "victim"), metav1.CreateOptions{})
			return err
		},
		func() error {
			// Someone else's ClusterRole under an identity's name.
			_, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: saidentity.ClusterName("cl-foreign")}}, metav1.CreateOptions{})
			return err
		},
	} {
		if err := create(); !apierrors.IsAlreadyExists(err) {
			require.NoError(t, err)
		}
	}

	self := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "kubepact-serviceaccount-issuer", Namespace: "kubepact-system"}
	selfUser := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: issuer.UserName}
	authenticated := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: "system:authenticated"}
	someone := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "someone"}
	identitySA := grants.RoleBinding.Subjects[0]
	elsewhereSA := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: identitySA.Name, Namespace: metav1.NamespaceSystem}
	labelled := func(m *metav1.ObjectMeta, id string) { m.Labels = map[string]string{saidentity.IdentityLabel: id} }

	t.Run("CreateClusterRole", func(t *testing.T) {
		_, err := sa.RbacV1().ClusterRoles().Create(ctx, wildcardRole("attack"), metav1.CreateOptions{})
		attack.Refused(t, err)
		// Rules it holds, under a name outside its scope.
		held := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "attack"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}}}
		_, err = sa.RbacV1().ClusterRoles().Create(ctx, held, metav1.CreateOptions{})
		attack.Refused(t, err)
		// An identity's name, with rules it holds but saidentity never grants.
		name := saidentity.ClusterName("cl-attack")
		for _, rules := range [][]rbacv1.PolicyRule{
			held.Rules,
			{{APIGroups: []string{saidentity.PeeringRequestGroup}, Resources: []string{"peeringrequests"}, Verbs: []string{"get"}}},
			{{APIGroups: []string{saidentity.PeeringRequestGroup}, Resources: []string{"peeringrequests"}, ResourceNames: []string{"cl-other"}, Verbs: []string{"get"}}},
		} {
			r := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
			labelled(&r.ObjectMeta, "cl-attack")
			_, err = sa.RbacV1().ClusterRoles().Create(ctx, r, metav1.CreateOptions{})
			attack.Refused(t, err)
		}
		// The rules saidentity grants, unlabelled, or aggregating others.
		good, err := saidentity.BuildGrants("cl-attack")
		require.NoError(t, err)
		unlabelled := good.ClusterRole.DeepCopy()
		unlabelled.Labels = nil
		_, err = sa.RbacV1().ClusterRoles().Create(ctx, unlabelled, metav1.CreateOptions{})
		attack.Refused(t, err)
		aggregated := good.ClusterRole.DeepCopy()
		aggregated.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}}}
		_, err = sa.RbacV1().ClusterRoles().Create(ctx, aggregated, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	for _, name := range []string{"system:basic-user", rbac.ControlPlaneClusterRoleName, "kubepact-serviceaccount-issuer", grants.ClusterRole.Name} {
		t.Run("UpdateClusterRole/"+name, func(t *testing.T) {
			r, err := admin.RbacV1().ClusterRoles().Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			r.Rules = append(r.Rules, wildcardRole("").Rules...)
			_, err = sa.RbacV1().ClusterRoles().Update(ctx, r, metav1.UpdateOptions{})
			attack.Refused(t, err)
			// A rule it holds itself, so that RBAC lets it through.
			_, err = sa.RbacV1().ClusterRoles().Patch(ctx, name, types.JSONPatchType, addSecretsRule, metav1.PatchOptions{})
			attack.Refused(t, err)
		})
	}
	t.Run("TakeOverClusterRole", func(t *testing.T) {
		patch := []byte(`{"metadata":{"labels":{"` + saidentity.IdentityLabel + `":"cl-foreign"}}}`)
		_, err := sa.RbacV1().ClusterRoles().Patch(ctx, saidentity.ClusterName("cl-foreign"), types.MergePatchType, patch, metav1.PatchOptions{})
		attack.Refused(t, err)
	})
	t.Run("WriteRole", func(t *testing.T) {
		wide := grants.Role.DeepCopy()
		wide.ResourceVersion = ""
		wide.Rules[0].ResourceNames = nil // every Secret of the tenant namespace
		_, err := sa.RbacV1().Roles(tenantNS).Update(ctx, wide, metav1.UpdateOptions{})
		attack.Refused(t, err)
		patch := []byte(`[{"op":"remove","path":"/rules/0/resourceNames"}]`)
		_, err = sa.RbacV1().Roles(tenantNS).Patch(ctx, grants.Role.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		attack.Refused(t, err)
		for _, ns := range []string{metav1.NamespaceSystem, tenantNS} {
			r := grants.Role.DeepCopy()
			r.Namespace, r.Name = ns, "attack"
			_, err = sa.RbacV1().Roles(ns).Create(ctx, r, metav1.CreateOptions{})
			attack.Refused(t, err)
		}
	})
	t.Run("BindClusterAdmin", func(t *testing.T) {
		crb := clusterRoleBinding(grants.ClusterRoleBinding.Name, "cluster-admin", self)
		labelled(&crb.ObjectMeta, victimID)
		_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
		attack.Refused(t, err)
		rb := roleBinding(tenantNS, grants.RoleBinding.Name, "ClusterRole", "cluster-admin", identitySA)
		labelled(&rb.ObjectMeta, victimID)
		_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, rb, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	t.Run("BindItsOwnRole", func(t *testing.T) {
		// It holds every permission of its own role, so RBAC lets it bind it.
		for _, s := range []rbacv1.Subject{authenticated, someone} {
			crb := clusterRoleBinding(grants.ClusterRoleBinding.Name, "kubepact-serviceaccount-issuer", s)
			labelled(&crb.ObjectMeta, victimID)
			_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
			attack.Refused(t, err)
			_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, roleBinding(tenantNS, grants.RoleBinding.Name, "ClusterRole", "kubepact-serviceaccount-issuer", s), metav1.CreateOptions{})
			attack.Refused(t, err)
		}
	})
	t.Run("BindIdentityRoleToOthers", func(t *testing.T) {
		for _, s := range []rbacv1.Subject{self, selfUser, authenticated, someone, elsewhereSA} {
			crb := clusterRoleBinding(grants.ClusterRoleBinding.Name, grants.ClusterRole.Name, s)
			labelled(&crb.ObjectMeta, victimID)
			_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
			attack.Refused(t, err)
			rb := roleBinding(tenantNS, grants.RoleBinding.Name, "Role", grants.Role.Name, s)
			labelled(&rb.ObjectMeta, victimID)
			_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, rb, metav1.CreateOptions{})
			attack.Refused(t, err)
		}
		// The identity's own subject, bound under another name.
		crb := clusterRoleBinding("attack", grants.ClusterRole.Name, identitySA)
		labelled(&crb.ObjectMeta, victimID)
		_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	for _, role := range rbac.PeerRoleNames() {
		t.Run("BindPeerRole/"+role, func(t *testing.T) {
			for _, s := range []rbacv1.Subject{self, selfUser, authenticated} {
				_, err := sa.RbacV1().ClusterRoleBindings().Create(ctx, clusterRoleBinding("attack-"+role, role, s), metav1.CreateOptions{})
				attack.Refused(t, err)
				for _, ns := range []string{metav1.NamespaceSystem, tenantNS} {
					_, err := sa.RbacV1().RoleBindings(ns).Create(ctx, roleBinding(ns, rbac.BindingName(role), "ClusterRole", role, s), metav1.CreateOptions{})
					attack.Refused(t, err)
				}
			}
			_, err := sa.RbacV1().RoleBindings(metav1.NamespaceSystem).Create(ctx, roleBinding(metav1.NamespaceSystem, rbac.BindingName(role), "ClusterRole", role, someone), metav1.CreateOptions{})
			attack.Refused(t, err)
		})
	}
	t.Run("WriteSecret", func(t *testing.T) {
		// It holds get, update, patch and delete on Secrets only to grant them.
		for _, ns := range []string{metav1.NamespaceSystem, metav1.NamespaceDefault} {
			_, err := sa.CoreV1().Secrets(ns).Create(ctx, secret(ns, "attack"), metav1.CreateOptions{})
			attack.Refused(t, err)
			s, err := admin.CoreV1().Secrets(ns).Get(ctx, "victim", metav1.GetOptions{})
			require.NoError(t, err)
			s.StringData = map[string]string{"k": "attack"}
			_, err = sa.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
			attack.Refused(t, err)
			attack.Refused(t, sa.CoreV1().Secrets(ns).Delete(ctx, "victim", metav1.DeleteOptions{}))
		}
	})
	t.Run("ServiceAccountTokenSecret", func(t *testing.T) {
		s := secret(tenantNS, "attack-token")
		s.Annotations = map[string]string{corev1.ServiceAccountNameKey: saidentity.Name(victimID)}
		s.Type = corev1.SecretTypeServiceAccountToken
		_, err := sa.CoreV1().Secrets(tenantNS).Create(ctx, s, metav1.CreateOptions{})
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
		// The API server answers NotFound, before admission, for a
		// ServiceAccount that does not exist: these do.
		for _, ns := range []string{metav1.NamespaceSystem, "kubepact-system"} {
			_, err := sa.CoreV1().ServiceAccounts(ns).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			attack.Refused(t, err)
		}
		_, err := sa.CoreV1().ServiceAccounts("kubepact-system").CreateToken(ctx, "kubepact-serviceaccount-issuer", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	t.Run("TokenForAnotherServiceAccount", func(t *testing.T) {
		// Another ServiceAccount of a tenant namespace, and the identity of
		// another consumer.
		_, err := sa.CoreV1().ServiceAccounts(tenantNS).CreateToken(ctx, "victim", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		attack.Refused(t, err)
		_, err = sa.CoreV1().ServiceAccounts(tenantNS).CreateToken(ctx, saidentity.Name("cl-other"), &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	t.Run("CreateServiceAccount", func(t *testing.T) {
		for _, ns := range []string{metav1.NamespaceSystem, tenantNS} {
			for _, name := range []string{"attack", saidentity.Name("cl-another")} {
				_, err := sa.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
				attack.Refused(t, err)
			}
		}
		attack.Refused(t, sa.CoreV1().ServiceAccounts(tenantNS).Delete(ctx, "victim", metav1.DeleteOptions{}))
	})
	t.Run("CreateNamespace", func(t *testing.T) {
		_, err := sa.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "attack"}}, metav1.CreateOptions{})
		attack.Refused(t, err)
	})
	t.Run("WriteAdmissionPolicies", func(t *testing.T) {
		for _, name := range []string{saidentity.TokenPolicyName, "kubepact-serviceaccount-issuer"} {
			attack.Refused(t, sa.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}))
			attack.Refused(t, sa.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}))
		}
	})
	t.Run("StillWorks", func(t *testing.T) {
		// What Issue writes for the victim stays the issuer's to write.
		_, err := sa.RbacV1().ClusterRoles().Patch(ctx, grants.ClusterRole.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"kubepact.io/test":"ok"}}}`), metav1.PatchOptions{})
		require.NoError(t, err)
	})
}

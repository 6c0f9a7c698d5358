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
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/internal/attack"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
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
	sa, err := kubernetes.NewForConfig(providerEnv.sa)
	require.NoError(t, err)
	admin := providerEnv.admin

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
	// The readiness check's watches of the two peer roles it binds: the
	// list and watch verbs reach those two by name, and no other
	// ClusterRole, nor the list of all of them.
	t.Run("ListOrWatchOtherClusterRoles", func(t *testing.T) {
		byName := func(name string) metav1.ListOptions {
			return metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector(metav1.ObjectNameField, name).String()}
		}
		_, err := sa.RbacV1().ClusterRoles().List(ctx, metav1.ListOptions{})
		refused(t, err)
		for _, name := range []string{"cluster-admin", rbac.VirtualKubeletClusterRoleName, "system:basic-user"} {
			_, err := sa.RbacV1().ClusterRoles().List(ctx, byName(name))
			refused(t, err)
			_, err = sa.RbacV1().ClusterRoles().Watch(ctx, byName(name))
			refused(t, err)
		}
		for _, name := range []string{rbac.ControlPlaneClusterRoleName, rbac.VirtualKubeletClusterWideRoleName} {
			l, err := sa.RbacV1().ClusterRoles().List(ctx, byName(name))
			require.NoError(t, err, "the readiness check lists %s", name)
			require.Len(t, l.Items, 1)
			w, err := sa.RbacV1().ClusterRoles().Watch(ctx, byName(name))
			require.NoError(t, err, "the readiness check watches %s", name)
			w.Stop()
		}
	})
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
	// A thief with the controller's token cannot hand a peer's slice
	// identities the tenant namespace (its Secrets: this cluster's own
	// kubeconfig for that peer in a two-way peering), even for that very
	// consumer's group, the binding v0.1.0 made: RBAC does not let it bind
	// liqo-virtual-kubelet-remote and the admission policy refuses it; it
	// may still delete such a binding (the controller does, at start).
	t.Run("BindSliceRoleInTenantNamespace", func(t *testing.T) {
		group := rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: consumerID}
		legacy := rbac.ResourceSliceRoleBindings(consumerID, rbac.VirtualKubeletClusterRoleName, []string{tenantNS})[0]
		_, err := sa.RbacV1().RoleBindings(tenantNS).Create(ctx, legacy, metav1.CreateOptions{})
		refused(t, err)
		_, err = sa.RbacV1().RoleBindings(tenantNS).Create(ctx, rb(tenantNS, rbac.VirtualKubeletClusterRoleName, group), metav1.CreateOptions{})
		refused(t, err)
		_, err = admin.RbacV1().RoleBindings(tenantNS).Create(ctx, legacy, metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, sa.RbacV1().RoleBindings(tenantNS).Delete(ctx, legacy.Name, metav1.DeleteOptions{}), "the sweep of v0.1.0's binding")
	})
	// The policy lets the controller delete a ServiceAccount identity's
	// ClusterRoleBinding (a drain takes it back), and only that: the label
	// alone, which anyone who may write bindings can set, opens no other.
	t.Run("DeleteClusterRoleBindingByLabel", func(t *testing.T) {
		const id = "cl-attack-sa"
		label := map[string]string{"kubepact.io/serviceaccount-identity": id}
		for _, b := range []*rbacv1.ClusterRoleBinding{
			// labelled, but bound to cluster-admin
			{ObjectMeta: metav1.ObjectMeta{Name: "kubepact-remote-" + id + "-admin", Labels: label}, Subjects: []rbacv1.Subject{someone},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}},
			// labelled, to the identity's role, under another name
			{ObjectMeta: metav1.ObjectMeta{Name: "not-" + id, Labels: label}, Subjects: []rbacv1.Subject{someone},
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubepact-remote-" + id}},
		} {
			_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, b, metav1.CreateOptions{})
			require.NoError(t, err)
			refused(t, sa.RbacV1().ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}))
			require.NoError(t, admin.RbacV1().ClusterRoleBindings().Delete(ctx, b.Name, metav1.DeleteOptions{}))
		}
		identity := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "kubepact-remote-" + id, Labels: label}, Subjects: []rbacv1.Subject{someone},
			RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubepact-remote-" + id}}
		_, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, identity, metav1.CreateOptions{})
		require.NoError(t, err)
		require.NoError(t, sa.RbacV1().ClusterRoleBindings().Delete(ctx, identity.Name, metav1.DeleteOptions{}), "a ServiceAccount identity's binding, as a drain deletes it")
	})
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
		allowed, err := admin.CoreV1().Secrets(tenantNS).Get(ctx, "allowed", metav1.GetOptions{})
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

// TestPublicKeyRecordWriters: the record of the cluster's public key
// (kube.PublicKeyRecordName in the key namespace), which kubepact
// authenticate trusts to check Tenants with, is written by the controller's
// ServiceAccount alone. A user whom RBAC grants every verb on ConfigMaps
// there, and an admin, are refused by the admission policy
// kubepact-cluster-public-key; the ServiceAccount, playing a thief of its
// token, may write a ConfigMap of that name nowhere but there.
func TestPublicKeyRecordWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := providerEnv.admin
	sa, err := kubernetes.NewForConfig(providerEnv.sa)
	require.NoError(t, err)
	_, err = admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: keys.DefaultNamespace}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}

	// A user with every verb on ConfigMaps in the key namespace.
	const user = "configmap-writer"
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	_, err = admin.RbacV1().Roles(keys.DefaultNamespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: user},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().RoleBindings(keys.DefaultNamespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.RbacV1().RoleBindings(keys.DefaultNamespace).Delete(ctx, user, metav1.DeleteOptions{})
		_ = admin.RbacV1().Roles(keys.DefaultNamespace).Delete(ctx, user, metav1.DeleteOptions{})
	})
	cfg := rest.CopyConfig(providerEnv.cluster.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	writer, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)

	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	record := func(ns string) *corev1.ConfigMap {
		pemBytes, err := keys.MarshalPublicKey(key.Public())
		require.NoError(t, err)
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.PublicKeyRecordName, Namespace: ns},
			Data: map[string]string{kube.PublicKeyRecordKey: string(pemBytes)}}
	}
	configMaps := func(c kubernetes.Interface) corev1client.ConfigMapInterface {
		return c.CoreV1().ConfigMaps(keys.DefaultNamespace)
	}
	_ = configMaps(admin).Delete(ctx, kube.PublicKeyRecordName, metav1.DeleteOptions{}) // a left-over, before the policy
	t.Cleanup(func() {
		_ = configMaps(admin).Delete(context.Background(), kube.PublicKeyRecordName, metav1.DeleteOptions{})
	})

	// RBAC lets the user write any other ConfigMap there; the policy is in
	// force once it refuses the record.
	_, err = configMaps(writer).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "allowed"}}, metav1.CreateOptions{})
	require.NoError(t, err, "RBAC grants the user ConfigMaps in the key namespace")
	require.Eventually(t, func() bool {
		_, err := configMaps(writer).Create(ctx, record(keys.DefaultNamespace), metav1.CreateOptions{})
		if err == nil {
			_ = configMaps(admin).Delete(ctx, kube.PublicKeyRecordName, metav1.DeleteOptions{})
		}
		return apierrors.IsForbidden(err)
	}, time.Minute, 200*time.Millisecond, "the admission policy refuses the record to a ConfigMap writer")
	_, err = configMaps(admin).Create(ctx, record(keys.DefaultNamespace), metav1.CreateOptions{})
	attack.Refused(t, err)

	// The controller's ServiceAccount publishes it, as the consumer's
	// reconciler does.
	other, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	recordStore := kube.NewPublicKeyRecord(sa, keys.DefaultNamespace)
	require.NoError(t, recordStore.Publish(ctx, key.Public()))
	require.NoError(t, recordStore.Publish(ctx, other.Public()), "the record follows the cluster key")
	got, err := kube.NewPublicKeyRecord(writer, keys.DefaultNamespace).Get(ctx)
	require.NoError(t, err, "anyone who may read ConfigMaps there reads it")
	require.True(t, keys.Equal(other.Public(), got))

	// Nobody else changes or deletes it, in any way.
	t.Run("Writer", func(t *testing.T) {
		for _, c := range []kubernetes.Interface{writer, admin} {
			cur, err := configMaps(c).Get(ctx, kube.PublicKeyRecordName, metav1.GetOptions{})
			require.NoError(t, err)
			cur.Data = record(keys.DefaultNamespace).Data
			_, err = configMaps(c).Update(ctx, cur, metav1.UpdateOptions{})
			attack.Refused(t, err)
			_, err = configMaps(c).Patch(ctx, kube.PublicKeyRecordName, types.MergePatchType,
				[]byte(`{"data":{"publicKey":"forged"}}`), metav1.PatchOptions{})
			attack.Refused(t, err)
			err = configMaps(c).Delete(ctx, kube.PublicKeyRecordName, metav1.DeleteOptions{})
			attack.Refused(t, err)
			err = configMaps(c).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
			attack.Refused(t, err)
		}
		got, err := kube.NewPublicKeyRecord(admin, keys.DefaultNamespace).Get(ctx)
		require.NoError(t, err)
		require.True(t, keys.Equal(other.Public(), got), "the record is the controller's")
	})
	// The ServiceAccount's new right, as a thief of its token would try
	// it: a record of that name anywhere else than the key namespace.
	t.Run("ServiceAccountElsewhere", func(t *testing.T) {
		for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic} {
			_, err := sa.CoreV1().ConfigMaps(ns).Create(ctx, record(ns), metav1.CreateOptions{})
			attack.Refused(t, err)
		}
	})
	// Its own record, it may delete (an uninstall).
	require.NoError(t, configMaps(sa).Delete(ctx, kube.PublicKeyRecordName, metav1.DeleteOptions{}))
}

// ownNamespaceConditions are, by policy, the match condition that names the
// controller's namespace.
var ownNamespaceConditions = map[string]string{
	"kubepact-enrolment-records":    "enrolment-record",
	"kubepact-peering-writers-list": "writers-list",
}

// TestPolicyFollowsServiceAccount renders config/ with the namespace set in
// config/controller or in config/ itself: the admission policy's match
// condition and the bindings' subjects name the ServiceAccount where it
// then lives.
func TestPolicyFollowsServiceAccount(t *testing.T) {
	for _, tt := range []struct{ file, render string }{
		{"controller/kustomization.yaml", "."},
		{"kustomization.yaml", "."},
		// config/controller alone, as installed beside Liqo.
		{"controller/kustomization.yaml", "controller"},
	} {
		t.Run(tt.file+"/"+tt.render, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(filepath.Join("..", "..", "config"))))
			path := filepath.Join(dir, tt.file)
			b, err := os.ReadFile(path)
			require.NoError(t, err)
			b = regexp.MustCompile(`(?m)^namespace: .*\n`).ReplaceAll(b, nil)
			b = regexp.MustCompile(`(?m)^resources:`).ReplaceAll(b, []byte("namespace: team-a\nresources:"))
			require.NoError(t, os.WriteFile(path, b, 0o644))
			objects, err := kustomize(t.Context(), filepath.Join(dir, tt.render))
			require.NoError(t, err)
			var policies, subjects, params int
			for _, u := range objects {
				switch u.GetKind() {
				case "ValidatingAdmissionPolicy":
					conds, _, err := unstructured.NestedSlice(u.Object, "spec", "matchConditions")
					require.NoError(t, err)
					// The policies on records in the controller's own
					// namespace match there: the enrolment records, and
					// the list of peering writers, which beside the
					// controller no one but peering admins writes.
					if name, ok := ownNamespaceConditions[u.GetName()]; ok {
						var found bool
						for _, c := range conds {
							c := c.(map[string]any)
							if c["name"] == name {
								require.True(t, strings.HasPrefix(c["expression"].(string), "request.namespace == 'team-a' && "),
									"policy %s: %s", u.GetName(), c["expression"])
								found = true
							}
						}
						require.True(t, found, "policy %s names the controller's namespace", u.GetName())
						if u.GetName() == "kubepact-peering-writers-list" {
							policies++
							continue
						}
					}
					// Each policy names the controller's user in the
					// match condition controller-service-account: the
					// controller's own policy matches its requests, the
					// others let them through.
					op := "!="
					if u.GetName() == "kubepact-controller" {
						op = "=="
					}
					var found bool
					for _, c := range conds {
						c := c.(map[string]any)
						if c["name"] == "controller-service-account" {
							require.Equal(t, "request.userInfo.username "+op+" 'system:serviceaccount:' + 'team-a' + ':' + 'kubepact-controller'",
								c["expression"], "policy %s", u.GetName())
							found = true
						}
					}
					require.True(t, found, "policy %s names the controller's user", u.GetName())
					policies++
				case "ValidatingAdmissionPolicyBinding":
					// The list of peering writers, the parameter, is read
					// where it lives: beside the controller.
					if ns, found, _ := unstructured.NestedString(u.Object, "spec", "paramRef", "namespace"); found {
						require.Equal(t, "team-a", ns, "binding %s", u.GetName())
						params++
					}
				case "ConfigMap":
					require.Equal(t, "team-a", u.GetNamespace(), "ConfigMap %s", u.GetName())
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
			// The controller's, the public key record's and the
			// enrolment records', and from config/ the signed-nonce,
			// key Secret, peering writers' and writers' list policies.
			wantPolicies, wantParams := 7, 1
			if tt.render == "controller" {
				wantPolicies, wantParams = 3, 0
			}
			require.Equal(t, wantPolicies, policies)
			require.Equal(t, wantParams, params)
			require.Equal(t, 2, subjects)
		})
	}
}

package controllers_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// policyDir is the admission policy that guards signed-nonce Secrets and
// tenant-namespace labels.
const policyDir = "../config/signed-nonce-policy"

// applySignedNoncePolicy creates, on e, the objects of the kustomization in
// policyDir as kubectl apply -k would, and deletes them when the test ends.
// The kustomization and the objects are read strictly: a field the test does
// not know fails it, so what it applies is what the files say.
func applySignedNoncePolicy(ctx context.Context, t *testing.T, e *env) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(policyDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Resources  []string `json:"resources"`
		Labels     []struct {
			Pairs            map[string]string `json:"pairs"`
			IncludeSelectors bool              `json:"includeSelectors"`
		} `json:"labels"`
	}
	require.NoError(t, yaml.UnmarshalStrict(b, &k))
	require.Equal(t, "Kustomization", k.Kind)
	labels := map[string]string{}
	for _, l := range k.Labels {
		maps.Copy(labels, l.Pairs)
	}
	label := func(m *metav1.ObjectMeta) {
		if m.Labels == nil {
			m.Labels = map[string]string{}
		}
		maps.Copy(m.Labels, labels)
	}
	api := e.core.AdmissionregistrationV1()
	var kinds []string
	for _, r := range k.Resources {
		b, err := os.ReadFile(filepath.Join(policyDir, r))
		require.NoError(t, err)
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(b, &meta))
		require.Equal(t, admissionv1.SchemeGroupVersion.String(), meta.APIVersion, r)
		kinds = append(kinds, meta.Kind)
		switch meta.Kind {
		case "ValidatingAdmissionPolicy":
			var p admissionv1.ValidatingAdmissionPolicy
			require.NoError(t, yaml.UnmarshalStrict(b, &p), r)
			label(&p.ObjectMeta)
			_, err := api.ValidatingAdmissionPolicies().Create(ctx, &p, metav1.CreateOptions{})
			require.NoError(t, err, r)
			t.Cleanup(func() {
				_ = api.ValidatingAdmissionPolicies().Delete(context.Background(), p.Name, metav1.DeleteOptions{})
			})
		case "ValidatingAdmissionPolicyBinding":
			var p admissionv1.ValidatingAdmissionPolicyBinding
			require.NoError(t, yaml.UnmarshalStrict(b, &p), r)
			label(&p.ObjectMeta)
			_, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, &p, metav1.CreateOptions{})
			require.NoError(t, err, r)
			t.Cleanup(func() {
				_ = api.ValidatingAdmissionPolicyBindings().Delete(context.Background(), p.Name, metav1.DeleteOptions{})
			})
		default:
			t.Fatalf("%s: unexpected kind %q", r, meta.Kind)
		}
	}
	require.ElementsMatch(t, []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}, kinds)
}

// as returns a client of e that impersonates user in groups (and
// system:authenticated).
func as(t *testing.T, e *env, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(e.cluster.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return c
}

// signedNonceSecret is liqoctl's liqo-signed-nonce for providerID.
func signedNonceSecret(providerID string, n nonce.Nonce) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: nonce.SignedSecretName, Labels: map[string]string{nonce.SignedSecretLabel: "true", clusterid.Label: providerID}},
		Data:       map[string][]byte{nonce.SecretKey: []byte(n.Text())},
	}
}

// The admission policy of config/signed-nonce-policy, on a real API
// server: a user whose RBAC lets it create Secrets in a tenant namespace,
// and namespaces, may neither create nor update liqo-signed-nonce there, nor
// set the tenant-namespace labels of a namespace liqo-tenant-*; a peering
// admin, kubepact's controller, Liqo's controller manager and system:masters
// may. Everything else the
// user's RBAC grants still works.
func TestSignedNoncePolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	providerID, _ := ids(t)
	ns := clusterid.TenantNamespace(providerID)
	ensureNamespace(ctx, t, consumerEnv, providerID)
	n, err := nonce.Generate(nil)
	require.NoError(t, err)

	// Secrets in the tenant namespace, and namespaces, for four identities:
	// one not allowed by the policy, three allowed.
	const (
		mallory    = "mallory"
		alice      = "alice"
		controller = "system:serviceaccount:kubepact-system:kubepact-controller"
		// Liqo's controller manager, as Liqo's chart runs it.
		liqoManager = "system:serviceaccount:liqo:liqo-controller-manager"
	)
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-writer"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "create", "update", "delete"}}},
	}
	_, err = consumerEnv.core.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{})
	require.NoError(t, err)
	subjects := []rbacv1.Subject{
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: mallory},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: alice},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: controller},
		{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: liqoManager},
	}
	_, err = consumerEnv.core.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "secret-writer"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	nsWriter := "namespace-writer-" + providerID
	_, err = consumerEnv.core.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: nsWriter},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "create", "update"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = consumerEnv.core.RbacV1().ClusterRoles().Delete(context.Background(), nsWriter, metav1.DeleteOptions{})
	})
	_, err = consumerEnv.core.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: nsWriter},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: nsWriter},
		Subjects:   subjects,
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = consumerEnv.core.RbacV1().ClusterRoleBindings().Delete(context.Background(), nsWriter, metav1.DeleteOptions{})
	})

	attacker := as(t, consumerEnv, mallory)
	allowed := map[string]kubernetes.Interface{
		"peering admin":       as(t, consumerEnv, alice, "kubepact:peering-admins"),
		"controller":          as(t, consumerEnv, controller, "system:serviceaccounts", "system:serviceaccounts:kubepact-system"),
		"Liqo's manager":      as(t, consumerEnv, liqoManager, "system:serviceaccounts", "system:serviceaccounts:liqo"),
		"system:masters user": consumerEnv.core,
	}

	applySignedNoncePolicy(ctx, t, consumerEnv)

	// The API server loads the policy asynchronously: until it does, the
	// attacker's Secret is created (and deleted again here). RBAC lets the
	// attacker write Secrets in ns, so the refusal is the policy's.
	secrets := attacker.CoreV1().Secrets(ns)
	deadline := time.Now().Add(time.Minute)
	for {
		_, err = secrets.Create(ctx, signedNonceSecret(providerID, n), metav1.CreateOptions{})
		if err != nil {
			break
		}
		require.NoError(t, secrets.Delete(ctx, nonce.SignedSecretName, metav1.DeleteOptions{}))
		require.True(t, time.Now().Before(deadline), "the policy took effect within a minute")
		time.Sleep(100 * time.Millisecond)
	}
	require.True(t, apierrors.IsForbidden(err), "creating liqo-signed-nonce: %v", err)
	require.Nil(t, secret(ctx, t, consumerEnv, ns, nonce.SignedSecretName), "nothing created")

	// A Secret of another name, even labelled liqo.io/signed-nonce, is
	// refused too; one that is neither is the attacker's right.
	labelled := signedNonceSecret(providerID, n)
	labelled.Name = "not-a-signed-nonce"
	_, err = secrets.Create(ctx, labelled, metav1.CreateOptions{})
	require.True(t, apierrors.IsForbidden(err), "creating a Secret labelled %s: %v", nonce.SignedSecretLabel, err)
	plain := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string][]byte{"k": []byte("v")}}
	plain, err = secrets.Create(ctx, plain, metav1.CreateOptions{})
	require.NoError(t, err, "a Secret the policy does not cover")
	plain.Labels = map[string]string{nonce.SignedSecretLabel: "true"}
	_, err = secrets.Update(ctx, plain, metav1.UpdateOptions{})
	require.True(t, apierrors.IsForbidden(err), "labelling a Secret %s: %v", nonce.SignedSecretLabel, err)

	// The allowed identities create and update it.
	for name, c := range allowed {
		s, err := c.CoreV1().Secrets(ns).Create(ctx, signedNonceSecret(providerID, n), metav1.CreateOptions{})
		require.NoError(t, err, "%s creates liqo-signed-nonce", name)
		s.Data[nonce.SignedSecretKey] = []byte("signature")
		_, err = c.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
		require.NoError(t, err, "%s updates liqo-signed-nonce", name)
		require.NoError(t, c.CoreV1().Secrets(ns).Delete(ctx, s.Name, metav1.DeleteOptions{}))
	}

	// The attacker cannot update one an allowed identity created.
	_, err = consumerEnv.core.CoreV1().Secrets(ns).Create(ctx, signedNonceSecret(providerID, n), metav1.CreateOptions{})
	require.NoError(t, err)
	s, err := secrets.Get(ctx, nonce.SignedSecretName, metav1.GetOptions{})
	require.NoError(t, err)
	other, err := nonce.Generate(nil)
	require.NoError(t, err)
	s.Data[nonce.SecretKey] = []byte(other.Text())
	_, err = secrets.Update(ctx, s, metav1.UpdateOptions{})
	require.True(t, apierrors.IsForbidden(err), "updating liqo-signed-nonce: %v", err)
	require.Equal(t, n.Text(), string(secret(ctx, t, consumerEnv, ns, nonce.SignedSecretName).Data[nonce.SecretKey]), "the nonce is unchanged")

	// Namespaces: the attacker may not create a tenant namespace with its
	// labels, nor add or change them later; other labels, and other
	// namespaces, are its right.
	namespaces := attacker.CoreV1().Namespaces()
	for i, labels := range []map[string]string{
		tenant.Namespace("x").Labels,
		{clusterid.Label: "x"},
		{tenant.NamespaceLabel: "true"},
	} {
		name := fmt.Sprintf("%s-evil-%d", ns, i)
		_, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "creating %s labelled %v: %v", name, labels, err)
	}
	bare, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns + "-bare"}}, metav1.CreateOptions{})
	require.NoError(t, err, "a tenant namespace's name without its labels")
	t.Cleanup(func() {
		_ = consumerEnv.core.CoreV1().Namespaces().Delete(context.Background(), bare.Name, metav1.DeleteOptions{})
	})
	bare.Labels = map[string]string{"example.com/team": "a"}
	bare, err = namespaces.Update(ctx, bare, metav1.UpdateOptions{})
	require.NoError(t, err, "a label the policy does not cover")
	bare.Labels[clusterid.Label] = providerID + "-bare"
	bare.Labels[tenant.NamespaceLabel] = "true"
	_, err = namespaces.Update(ctx, bare, metav1.UpdateOptions{})
	require.True(t, apierrors.IsForbidden(err), "labelling %s: %v", bare.Name, err)
	outside, err := namespaces.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "outside-" + providerID, Labels: tenant.Namespace("x").Labels}}, metav1.CreateOptions{})
	require.NoError(t, err, "a namespace not named liqo-tenant-*")
	t.Cleanup(func() {
		_ = consumerEnv.core.CoreV1().Namespaces().Delete(context.Background(), outside.Name, metav1.DeleteOptions{})
	})

	// An allowed identity labels it; then the attacker may neither change
	// nor remove the labels.
	for name, c := range allowed {
		cur, err := c.CoreV1().Namespaces().Get(ctx, bare.Name, metav1.GetOptions{})
		require.NoError(t, err)
		cur.Labels[clusterid.Label] = providerID + "-bare"
		cur.Labels[tenant.NamespaceLabel] = name[:1] // changes on every identity
		_, err = c.CoreV1().Namespaces().Update(ctx, cur, metav1.UpdateOptions{})
		require.NoError(t, err, "%s labels %s", name, bare.Name)
	}
	for _, change := range []func(map[string]string){
		func(l map[string]string) { l[clusterid.Label] = "cl-elsewhere" },
		func(l map[string]string) { delete(l, clusterid.Label) },
		func(l map[string]string) { delete(l, tenant.NamespaceLabel) },
	} {
		cur, err := namespaces.Get(ctx, bare.Name, metav1.GetOptions{})
		require.NoError(t, err)
		want := cur.Labels
		cur = cur.DeepCopy()
		change(cur.Labels)
		_, err = namespaces.Update(ctx, cur, metav1.UpdateOptions{})
		require.True(t, apierrors.IsForbidden(err), "changing the labels of %s to %v: %v", bare.Name, cur.Labels, err)
		got, err := namespaces.Get(ctx, bare.Name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, want, got.Labels)
	}

	// The policy is what refused: without it, the attacker's RBAC suffices.
	require.NoError(t, consumerEnv.core.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "kubepact-signed-nonce", metav1.DeleteOptions{}))
	require.NoError(t, consumerEnv.core.CoreV1().Secrets(ns).Delete(ctx, nonce.SignedSecretName, metav1.DeleteOptions{}))
	require.Eventually(t, func() bool {
		_, err := secrets.Create(ctx, signedNonceSecret(providerID, n), metav1.CreateOptions{})
		if err != nil && !apierrors.IsForbidden(err) {
			require.NoError(t, err)
		}
		return err == nil
	}, time.Minute, 100*time.Millisecond, "without the binding, RBAC alone lets the attacker in")
}

package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kubepact/kubepact/internal/attack"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// keyPolicy is the admission policy of config/key-policy.
const keyPolicy = "kubepact-key-secrets"

// keyPolicyLabel marks the Secrets TestKeySecretWriters makes, so that its
// deletecollection reaches only them.
const keyPolicyLabel = "kubepact.io/test-key-policy"

// impersonate returns a client of s acting as user in groups (and
// system:authenticated), with exactly their permissions.
func impersonate(t *testing.T, s *side, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	cfg := rest.CopyConfig(s.cluster.AdminConfig())
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: append(groups, "system:authenticated")}
	c, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return c
}

// grantSecrets binds, in namespace ns of s, a Role named name that grants
// verbs on Secrets to subjects, until the test ends.
func grantSecrets(ctx context.Context, t *testing.T, s *side, ns, name string, verbs []string, subjects ...rbacv1.Subject) {
	t.Helper()
	_, err := s.admin.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: verbs}}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = s.admin.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects: subjects}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = s.admin.RbacV1().RoleBindings(ns).Delete(ctx, name, metav1.DeleteOptions{})
		_ = s.admin.RbacV1().Roles(ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: name}
}

// ensureNamespace creates the namespace name on s unless it exists.
func ensureNamespace(ctx context.Context, t *testing.T, s *side, name string) {
	t.Helper()
	_, err := s.admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
}

// keySecret is a key Secret named name in the key namespace, as the
// controller makes it (keys.Secret, keys.KeyringSecret), holding a fresh
// key: the one a planter would want the controller to use.
func keySecret(t *testing.T, name string) *corev1.Secret {
	t.Helper()
	k, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	s, err := keys.Secret(keys.DefaultNamespace, k)
	require.NoError(t, err)
	s.Name = name
	s.Labels = map[string]string{keyPolicyLabel: "true"}
	return s
}

// TestKeySecretWriters: the Secrets of the key namespace that hold the
// keys the controller uses, the cluster key authentication-keys and the
// identity keys kubepact-key-* (the next cluster key among them), are written only by the controller's
// ServiceAccount, Liqo's controller manager, peering admins and
// system:masters (config/key-policy, applied as config/ ships it). A user
// whom RBAC lets create Secrets there, and nothing else, cannot plant one
// before the controller makes it (and can without the policy); a user who
// may update and delete Secrets there can neither change nor delete one.
// Every other Secret of the key namespace, and key Secrets' names in any
// other namespace, stay what RBAC makes them. Deleting the key namespace
// still empties it.
func TestKeySecretWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := providerEnv
	admin := s.admin
	ns := keys.DefaultNamespace
	ensureNamespace(ctx, t, s, ns)
	const elsewhere = "keypolicy-elsewhere"
	ensureNamespace(ctx, t, s, elsewhere)
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), elsewhere, metav1.DeleteOptions{})
	})

	// Names of key Secrets this test makes: the cluster key, kept aside
	// when another test left one (and put back), and identity keys.
	clusterKey := keys.SecretName
	controlPlaneKey := keys.KeyringSecretPrefix + "controlplane-cl-keypolicy"
	nextKey := controlPlaneKey + "-next"
	sliceKey := keys.KeyringSecretPrefix + "resourceslice-cl-keypolicy-slice"
	// The next cluster key while it rotates: planted, its attestations
	// and hand-overs would be the planter's.
	keyNames := []string{clusterKey, controlPlaneKey, nextKey, sliceKey, keys.NextSecretName}
	if held, err := admin.CoreV1().Secrets(ns).Get(ctx, clusterKey, metav1.GetOptions{}); err == nil {
		require.NoError(t, admin.CoreV1().Secrets(ns).Delete(ctx, clusterKey, metav1.DeleteOptions{}))
		t.Cleanup(func() {
			ctx := context.Background()
			_ = admin.CoreV1().Secrets(ns).Delete(ctx, clusterKey, metav1.DeleteOptions{})
			held.ResourceVersion, held.UID = "", ""
			_, err := admin.CoreV1().Secrets(ns).Create(ctx, held, metav1.CreateOptions{})
			require.NoError(t, err, "the cluster key another test left, put back")
		})
	}
	t.Cleanup(func() {
		ctx := context.Background()
		for _, n := range keyNames[1:] {
			_ = admin.CoreV1().Secrets(ns).Delete(ctx, n, metav1.DeleteOptions{})
		}
		_ = admin.CoreV1().Secrets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: keyPolicyLabel})
	})

	// mallory may create Secrets in the key namespace (and in elsewhere),
	// nothing more; eve may get, list, update, patch, delete and
	// deletecollection them, but not create.
	const (
		mallory     = "key-planter"
		eve         = "key-writer"
		alice       = "key-peering-admin"
		liqoManager = "system:serviceaccount:liqo:liqo-controller-manager"
	)
	grantSecrets(ctx, t, s, ns, mallory, []string{"create"}, userSubject(mallory))
	grantSecrets(ctx, t, s, elsewhere, mallory, []string{"create"}, userSubject(mallory))
	grantSecrets(ctx, t, s, ns, eve, []string{"get", "list", "update", "patch", "delete", "deletecollection"}, userSubject(eve))
	// What the allowed identities hold in the key namespace: the
	// controller's ServiceAccount already, by config/; Liqo's manager and
	// a peering admin by their own RBAC.
	grantSecrets(ctx, t, s, ns, "key-allowed", []string{"get", "create", "update", "patch", "delete"},
		userSubject(alice), rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "liqo-controller-manager", Namespace: "liqo"})
	planter := impersonate(t, s, mallory)
	writer := impersonate(t, s, eve)
	controller, err := kubernetes.NewForConfig(s.sa)
	require.NoError(t, err)
	allowed := map[string]kubernetes.Interface{
		"controller":          controller,
		"Liqo's manager":      impersonate(t, s, liqoManager, "system:serviceaccounts", "system:serviceaccounts:liqo"),
		"peering admin":       impersonate(t, s, alice, "kubepact:peering-admins"),
		"system:masters user": admin,
	}
	secrets := func(c kubernetes.Interface) corev1client.SecretInterface { return c.CoreV1().Secrets(ns) }
	requireAbsent := func(t *testing.T, name string) {
		t.Helper()
		_, err := secrets(admin).Get(ctx, name, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "%s: %v", name, err)
	}

	// The policy is in force once it refuses what RBAC allows: before,
	// the API server may not have loaded it.
	require.Eventually(t, func() bool {
		_, err := secrets(planter).Create(ctx, keySecret(t, controlPlaneKey), metav1.CreateOptions{})
		if err == nil {
			require.NoError(t, secrets(admin).Delete(ctx, controlPlaneKey, metav1.DeleteOptions{}))
		}
		return apierrors.IsForbidden(err)
	}, time.Minute, 200*time.Millisecond, "the key policy refuses a planted key")

	t.Run("Plant", func(t *testing.T) {
		for _, name := range keyNames {
			_, err := secrets(planter).Create(ctx, keySecret(t, name), metav1.CreateOptions{})
			attack.Refused(t, err)
			requireAbsent(t, name)
		}
		// A name the API server generates is the object's by then.
		gen := keySecret(t, "")
		gen.GenerateName = keys.KeyringSecretPrefix
		_, err := secrets(planter).Create(ctx, gen, metav1.CreateOptions{})
		attack.Refused(t, err)
	})

	t.Run("Allowed", func(t *testing.T) {
		for who, c := range allowed {
			for _, name := range []string{clusterKey, controlPlaneKey} {
				created, err := secrets(c).Create(ctx, keySecret(t, name), metav1.CreateOptions{})
				require.NoError(t, err, "%s creates %s", who, name)
				created.Data = keySecret(t, name).Data
				_, err = secrets(c).Update(ctx, created, metav1.UpdateOptions{})
				require.NoError(t, err, "%s updates %s", who, name)
				require.NoError(t, secrets(c).Delete(ctx, name, metav1.DeleteOptions{}), "%s deletes %s", who, name)
			}
		}
		// The controller's own store, as it makes the identity keys.
		k, err := keys.Generate(nil, keys.Ed25519)
		require.NoError(t, err)
		ring := kube.NewKeyring(controller, ns)
		require.NoError(t, ring.Create(ctx, "controlplane-cl-keypolicy", keys.Stored{Key: k}))
		require.NoError(t, ring.Delete(ctx, "controlplane-cl-keypolicy"))
	})

	t.Run("Overwrite", func(t *testing.T) {
		// Keys the controller made: eve, who may update and delete
		// Secrets there, changes and deletes none of them, in any way.
		want := map[string]map[string][]byte{}
		for _, name := range keyNames {
			made, err := secrets(controller).Create(ctx, keySecret(t, name), metav1.CreateOptions{})
			require.NoError(t, err)
			want[name] = made.Data
		}
		for _, name := range keyNames {
			cur, err := secrets(writer).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			cur.Data = keySecret(t, name).Data
			_, err = secrets(writer).Update(ctx, cur, metav1.UpdateOptions{})
			attack.Refused(t, err)
			_, err = secrets(writer).Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"privateKey":"Zm9yZ2Vk"}}`), metav1.PatchOptions{})
			attack.Refused(t, err)
			attack.Refused(t, secrets(writer).Delete(ctx, name, metav1.DeleteOptions{}))
		}
		attack.Refused(t, secrets(writer).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: keyPolicyLabel}))
		for name, data := range want {
			got, err := secrets(admin).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err, "%s stays", name)
			require.Equal(t, data, got.Data, "%s is the controller's", name)
		}
		for _, name := range keyNames {
			require.NoError(t, secrets(controller).Delete(ctx, name, metav1.DeleteOptions{}))
		}
	})

	t.Run("Unrelated", func(t *testing.T) {
		// Other Secrets of the key namespace, names close to the keys'
		// included, and the keys' names in another namespace, are RBAC's
		// alone.
		for _, name := range []string{"unrelated", clusterKey + "-backup", "kubepact-keyring", "kubepact-cluster-key"} {
			sec := keySecret(t, name)
			_, err := secrets(planter).Create(ctx, sec, metav1.CreateOptions{})
			require.NoError(t, err, "mallory creates %s", name)
			cur, err := secrets(writer).Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			cur.Data = keySecret(t, name).Data
			_, err = secrets(writer).Update(ctx, cur, metav1.UpdateOptions{})
			require.NoError(t, err, "eve updates %s", name)
			require.NoError(t, secrets(writer).Delete(ctx, name, metav1.DeleteOptions{}), "eve deletes %s", name)
		}
		for _, name := range []string{clusterKey, controlPlaneKey} {
			sec := keySecret(t, name)
			sec.Namespace = elsewhere
			_, err := planter.CoreV1().Secrets(elsewhere).Create(ctx, sec, metav1.CreateOptions{})
			require.NoError(t, err, "mallory creates %s in %s", name, elsewhere)
		}
	})

	// Without the policy's binding, RBAC alone lets mallory plant both
	// kinds of key: what refused her above is the policy.
	t.Run("WithoutPolicy", func(t *testing.T) {
		b, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Get(ctx, keyPolicy, metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, keyPolicy, metav1.DeleteOptions{}))
		t.Cleanup(func() {
			b.ResourceVersion, b.UID = "", ""
			_, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(context.Background(), b, metav1.CreateOptions{})
			require.NoError(t, err, "the binding, put back")
		})
		for _, name := range []string{clusterKey, controlPlaneKey} {
			require.Eventually(t, func() bool {
				_, err := secrets(planter).Create(ctx, keySecret(t, name), metav1.CreateOptions{})
				if err != nil && !apierrors.IsForbidden(err) {
					require.NoError(t, err)
				}
				return err == nil
			}, time.Minute, 200*time.Millisecond, "without the binding, mallory plants %s", name)
			require.NoError(t, secrets(admin).Delete(ctx, name, metav1.DeleteOptions{}))
		}
	})
}

// TestKeyNamespaceDeletion: with the key policy in force, deleting the key
// namespace still empties it. A namespace controller that is no allowed
// requester (as kube-controller-manager's namespace-controller
// ServiceAccount, with --use-service-account-credentials) deletes the key
// Secrets once the namespace is terminating, each delete of a
// deletecollection carrying no request name; the same deletes are refused
// while it lives. The test cluster's controller-manager is a
// system:masters member, which the policy admits anyway: so a user with
// delete rights plays the namespace controller, on a namespace that its
// real controller leaves alone (no spec finalizer, held by a metadata
// finalizer). Then the real namespace controller empties the key namespace
// and it goes. On the consumer's cluster, so that the provider's key
// namespace stays for the other tests.
func TestKeyNamespaceDeletion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s := consumerEnv
	admin := s.admin
	ns := keys.DefaultNamespace
	ensureNamespace(ctx, t, s, ns)
	controller, err := kubernetes.NewForConfig(s.sa)
	require.NoError(t, err)
	keyNames := []string{keys.SecretName, keys.KeyringSecretPrefix + "controlplane-cl-keyns"}
	makeKeys := func() {
		for _, name := range keyNames {
			_, err := controller.CoreV1().Secrets(ns).Create(ctx, keySecret(t, name), metav1.CreateOptions{})
			if !apierrors.IsAlreadyExists(err) {
				require.NoError(t, err)
			}
		}
	}
	makeKeys()
	const eve = "namespace-deleter"
	grantSecrets(ctx, t, s, ns, eve, []string{"list", "delete", "deletecollection"}, userSubject(eve))
	deleter := impersonate(t, s, eve).CoreV1().Secrets(ns)
	// The policy is in force: eve may not delete a key while the
	// namespace lives.
	require.Eventually(t, func() bool {
		err := deleter.Delete(ctx, keys.SecretName, metav1.DeleteOptions{})
		if err == nil {
			makeKeys()
		}
		return apierrors.IsForbidden(err)
	}, time.Minute, 200*time.Millisecond, "the key policy refuses deleting the cluster key")
	attack.Refused(t, deleter.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: keyPolicyLabel}))

	t.Run("Terminating", func(t *testing.T) {
		// The namespace's own controller leaves it alone: no spec
		// finalizer. A finalizer of the test's holds it terminating.
		const hold = "kubepact.io/test-hold"
		n, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err)
		n.Spec.Finalizers = nil
		n, err = admin.CoreV1().Namespaces().Finalize(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
		n.Finalizers = append(n.Finalizers, hold)
		_, err = admin.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.NoError(t, admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
		require.NoError(t, deleter.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: keyPolicyLabel}),
			"emptying the terminating key namespace")
		list, err := admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: keyPolicyLabel})
		require.NoError(t, err)
		require.Empty(t, list.Items, "the key Secrets are gone")

		n, err = admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		require.NoError(t, err)
		n.Finalizers = slices.DeleteFunc(n.Finalizers, func(f string) bool { return f == hold })
		_, err = admin.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, time.Minute, 200*time.Millisecond, "the key namespace goes")
	})

	t.Run("NamespaceController", func(t *testing.T) {
		ensureNamespace(ctx, t, s, ns)
		makeKeys()
		require.NoError(t, admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
		require.Eventually(t, func() bool {
			_, err := admin.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, 2*time.Minute, 200*time.Millisecond, "the key namespace, emptied, goes")
	})
	ensureNamespace(ctx, t, s, ns)
}

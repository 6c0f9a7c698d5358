package peeringwriters_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
)

const (
	// writersList is the policy's parameter, as config/ ships it.
	writersList = "kubepact-peering-writers"
	// testLabel marks the objects these tests make, so that a
	// deletecollection reaches only them.
	testLabel = "kubepact.io/test-peering-writers"
)

// kind makes fresh, valid objects of one of the two peering kinds.
type kind struct {
	name string
	new  func(name string) client.Object
	list client.ObjectList
}

var kinds = []kind{
	{"AuthorizedConsumer", func(name string) client.Object {
		return &peeringv1alpha1.AuthorizedConsumer{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{testLabel: "true"}},
			Spec: peeringv1alpha1.AuthorizedConsumerSpec{
				ClusterID:  name,
				PublicKeys: []string{"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n"},
				Request:    peeringv1alpha1.EnrolmentRequest{CSR: "csr", Signature: []byte("signature")},
			},
		}
	}, &peeringv1alpha1.AuthorizedConsumerList{}},
	{"TrustedProvider", func(name string) client.Object {
		return &peeringv1alpha1.TrustedProvider{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{testLabel: "true"}},
			Spec: peeringv1alpha1.TrustedProviderSpec{
				ClusterID:     name,
				Endpoint:      "https://enrol.provider.example:443",
				CASHA256:      "sha256:" + strings.Repeat("ab", 32),
				EnrolmentKeys: []string{"-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n"},
			},
		}
	}, &peeringv1alpha1.TrustedProviderList{}},
}

// refused checks that err is the admission policy's refusal: reason
// Forbidden, so the API server answers 403.
func refused(t *testing.T, err error, what string) {
	t.Helper()
	require.Error(t, err, what)
	require.True(t, apierrors.IsForbidden(err), "%s: want Forbidden, got %v", what, err)
}

// cleanup deletes, as an administrator, the objects of the test's kinds
// that carry testLabel, finalizers and all.
func cleanup(t *testing.T, e *env) {
	t.Cleanup(func() {
		ctx := context.Background()
		for _, k := range kinds {
			list := k.list.DeepCopyObject().(client.ObjectList)
			if e.objects.List(ctx, list, client.HasLabels{testLabel}) != nil {
				continue
			}
			for _, o := range listItems(list) {
				if len(o.GetFinalizers()) > 0 {
					o.SetFinalizers(nil)
					_ = e.objects.Update(ctx, o)
				}
				_ = e.objects.Delete(ctx, o)
			}
		}
	})
}

func listItems(list client.ObjectList) []client.Object {
	var out []client.Object
	switch l := list.(type) {
	case *peeringv1alpha1.AuthorizedConsumerList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	case *peeringv1alpha1.TrustedProviderList:
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
	}
	return out
}

// TestPeeringWriters: whatever RBAC grants, only peering admins (group
// kubepact:peering-admins), system:masters, the ServiceAccounts the
// ConfigMap kubepact-peering-writers lists (Argo CD's and Flux's, as
// shipped) and kubepact-controller's ServiceAccount create, change or
// delete AuthorizedConsumers and TrustedProviders (config/peering-writers,
// applied as config/ ships it). A user bound to every verb on both kinds,
// and a ServiceAccount the list does not name, are refused every write: a
// create, an update, a patch, a delete and a deletecollection. The listed
// ServiceAccounts and a peering admin, bound to the shipped ClusterRole
// kubepact-peering-admin, write them; the controller adds and removes its
// finalizer and writes the status, but cannot change the spec.
func TestPeeringWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := cluster(t)
	cleanup(t, e)

	const (
		mallory = "peering-mallory"
		alice   = "peering-alice"
	)
	// mallory, and a ServiceAccount the list does not name, hold every
	// verb on both kinds and their status.
	e.clusterRole(ctx, t, "test-peering-everything", rbacv1.PolicyRule{
		APIGroups: []string{peeringv1alpha1.GroupName},
		Resources: []string{"authorizedconsumers", "trustedproviders", "authorizedconsumers/status", "trustedproviders/status"},
		Verbs:     []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"},
	})
	e.bindCluster(ctx, t, "test-peering-everything", "test-peering-everything", user(mallory), sa("tools", "deployer"))
	// The allowed writers hold the shipped role.
	e.bindCluster(ctx, t, "test-peering-admin", "kubepact-peering-admin", group("kubepact:peering-admins"),
		sa("argocd", "argocd-application-controller"), sa("flux-system", "kustomize-controller"))

	attacker, _ := e.as(t, mallory)
	deployerUser, deployerGroups := serviceAccount("tools", "deployer")
	unlisted, _ := e.as(t, deployerUser, deployerGroups...)
	argoUser, argoGroups := serviceAccount("argocd", "argocd-application-controller")
	fluxUser, fluxGroups := serviceAccount("flux-system", "kustomize-controller")
	argo, _ := e.as(t, argoUser, argoGroups...)
	flux, _ := e.as(t, fluxUser, fluxGroups...)
	admin, _ := e.as(t, alice, "kubepact:peering-admins")
	controller, _ := e.as(t, controllerUser, "system:serviceaccounts", "system:serviceaccounts:"+namespace)

	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			name := strings.ToLower(k.name)
			// The policy is in force once it refuses what RBAC allows:
			// before, the API server may not have loaded it.
			require.Eventually(t, func() bool {
				err := attacker.Create(ctx, k.new(name+"-planted"))
				if err == nil {
					require.NoError(t, e.objects.Delete(ctx, k.new(name+"-planted")))
				}
				return apierrors.IsForbidden(err)
			}, time.Minute, 200*time.Millisecond, "the policy refuses mallory's create")

			// One object, made by a system:masters administrator, to attack.
			target := k.new(name + "-target")
			require.NoError(t, e.objects.Create(ctx, target))
			for who, c := range map[string]client.Client{"a user with every verb": attacker, "an unlisted ServiceAccount": unlisted} {
				refused(t, c.Create(ctx, k.new(name+"-other")), who+" creates")
				changed := target.DeepCopyObject().(client.Object)
				changed.SetLabels(map[string]string{testLabel: "true", "changed": "true"})
				refused(t, c.Update(ctx, changed), who+" updates")
				refused(t, c.Patch(ctx, target, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"changed":"true"}}}`))), who+" patches")
				refused(t, c.Delete(ctx, target), who+" deletes")
				refused(t, c.DeleteAllOf(ctx, k.new(""), client.MatchingLabels{testLabel: "true"}), who+" deletes the collection")
			}
			got := k.new("")
			require.NoError(t, e.objects.Get(ctx, client.ObjectKeyFromObject(target), got))
			require.Nil(t, got.GetDeletionTimestamp(), "the target is not being deleted")
			require.NotContains(t, got.GetLabels(), "changed")
			err := e.objects.Get(ctx, client.ObjectKey{Name: name + "-other"}, k.new(""))
			require.True(t, apierrors.IsNotFound(err), "nothing created: %v", err)

			// The listed ServiceAccounts (once the API server has the
			// parameter) and a peering admin create, change and delete.
			for who, c := range map[string]client.Client{"Argo CD": argo, "Flux": flux, "a peering admin": admin} {
				o := k.new(name + "-" + strings.ToLower(strings.ReplaceAll(who, " ", "-")))
				require.Eventually(t, func() bool { return c.Create(ctx, o) == nil }, time.Minute, 200*time.Millisecond, "%s creates", who)
				o.SetLabels(map[string]string{testLabel: "true", "changed": "true"})
				require.NoError(t, c.Update(ctx, o), "%s updates", who)
				require.NoError(t, c.Delete(ctx, o), "%s deletes", who)
			}

			// The controller adds its finalizer, writes the status, and
			// removes its finalizer once the object is being deleted.
			require.NoError(t, e.objects.Get(ctx, client.ObjectKeyFromObject(target), target))
			target.SetFinalizers([]string{peeringv1alpha1.Finalizer})
			require.NoError(t, controller.Update(ctx, target), "the controller adds its finalizer")
			// Never the spec, which Git owns (the controller's own
			// policy, kubepact-controller).
			forged := target.DeepCopyObject().(client.Object)
			forgeSpec(forged)
			refused(t, controller.Update(ctx, forged), "the controller changes the spec")
			setReady(target)
			require.NoError(t, controller.Status().Update(ctx, target), "the controller writes the status")
			require.NoError(t, e.objects.Delete(ctx, target))
			require.NoError(t, e.objects.Get(ctx, client.ObjectKeyFromObject(target), target))
			require.NotNil(t, target.GetDeletionTimestamp(), "held by the finalizer")
			target.SetFinalizers(nil)
			require.NoError(t, controller.Update(ctx, target), "the controller removes its finalizer")
			err = e.objects.Get(ctx, client.ObjectKeyFromObject(target), k.new(""))
			require.True(t, apierrors.IsNotFound(err), "deleted once the finalizer is gone: %v", err)
		})
	}
}

// setReady sets a Ready condition in o's status.
func setReady(o client.Object) {
	c := metav1.Condition{Type: peeringv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Test", Message: "set by the test",
		LastTransitionTime: metav1.Now(), ObservedGeneration: o.GetGeneration()}
	switch o := o.(type) {
	case *peeringv1alpha1.AuthorizedConsumer:
		o.Status.Conditions = []metav1.Condition{c}
	case *peeringv1alpha1.TrustedProvider:
		o.Status.Conditions = []metav1.Condition{c}
	}
}

// TestPeeringWritersList: the list the policy reads is the ConfigMap
// kubepact-peering-writers, and only peering admins, system:masters and
// the ServiceAccounts it lists change it. A ServiceAccount an
// administrator adds may write the kinds once the API server has the new
// list; a user whom RBAC lets write every ConfigMap of the controller's
// namespace can neither add herself nor delete the list, while her other
// ConfigMaps there stay what RBAC makes them.
func TestPeeringWritersList(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e := cluster(t)
	cleanup(t, e)

	const mallory = "list-mallory"
	configMapRules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
		Verbs: []string{"get", "list", "create", "update", "patch", "delete", "deletecollection"}}}
	e.role(ctx, t, namespace, "test-list-writer", configMapRules, user(mallory),
		sa("argocd", "argocd-application-controller"), sa("tools", "builder"))
	e.bindCluster(ctx, t, "test-list-peering-admin", "kubepact-peering-admin", sa("tools", "builder"))
	_, attacker := e.as(t, mallory)
	argoUser, argoGroups := serviceAccount("argocd", "argocd-application-controller")
	_, argo := e.as(t, argoUser, argoGroups...)
	builderUser, builderGroups := serviceAccount("tools", "builder")
	builderObjects, builder := e.as(t, builderUser, builderGroups...)

	shipped, err := e.admin.CoreV1().ConfigMaps(namespace).Get(ctx, writersList, metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "argocd/argocd-application-controller,flux-system/kustomize-controller", shipped.Data["serviceAccounts"])
	t.Cleanup(func() {
		ctx := context.Background()
		cm, err := e.admin.CoreV1().ConfigMaps(namespace).Get(ctx, writersList, metav1.GetOptions{})
		require.NoError(t, err)
		cm.Data = shipped.Data
		_, err = e.admin.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(t, err, "the shipped list, put back")
	})

	// mallory (or an unlisted ServiceAccount) cannot name herself a writer,
	// empty the list, or delete it.
	for who, as := range map[string]string{"a user with every ConfigMap verb": mallory, "an unlisted ServiceAccount": builderUser} {
		c := attacker
		if as == builderUser {
			c = builder
		}
		cm, err := c.CoreV1().ConfigMaps(namespace).Get(ctx, writersList, metav1.GetOptions{})
		require.NoError(t, err)
		cm.Data = map[string]string{"serviceAccounts": "tools/builder"}
		_, err = c.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
		refused(t, err, who+" rewrites the list")
		_, err = c.CoreV1().ConfigMaps(namespace).Patch(ctx, writersList, types.MergePatchType, []byte(`{"data":{"serviceAccounts":""}}`), metav1.PatchOptions{})
		refused(t, err, who+" empties the list")
		refused(t, c.CoreV1().ConfigMaps(namespace).Delete(ctx, writersList, metav1.DeleteOptions{}), who+" deletes the list")
		refused(t, c.CoreV1().ConfigMaps(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}), who+" deletes every ConfigMap")
	}
	// Other ConfigMaps of the namespace are RBAC's.
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "list-mallory-other"}, Data: map[string]string{"a": "b"}}
	_, err = attacker.CoreV1().ConfigMaps(namespace).Create(ctx, other, metav1.CreateOptions{})
	require.NoError(t, err, "another ConfigMap")
	require.NoError(t, attacker.CoreV1().ConfigMaps(namespace).Delete(ctx, other.Name, metav1.DeleteOptions{}))

	// Unlisted, the builder cannot create; an administrator lists it (an
	// entry that is not namespace/name is ignored), and it can.
	refused(t, builderObjects.Create(ctx, kinds[0].new("list-builder")), "the unlisted builder creates")
	cm, err := e.admin.CoreV1().ConfigMaps(namespace).Get(ctx, writersList, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data = map[string]string{"serviceAccounts": shipped.Data["serviceAccounts"] + ", tools/builder ,nonsense,a/b/c"}
	_, err = e.admin.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return builderObjects.Create(ctx, kinds[0].new("list-builder")) == nil },
		time.Minute, 200*time.Millisecond, "the listed builder creates")

	// A listed ServiceAccount (the GitOps controller that installed
	// kubepact) keeps the list in sync: it may change it.
	cm, err = argo.CoreV1().ConfigMaps(namespace).Get(ctx, writersList, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data = shipped.Data
	_, err = argo.CoreV1().ConfigMaps(namespace).Update(ctx, cm, metav1.UpdateOptions{})
	require.NoError(t, err, "Argo CD, listed, syncs the list")
	// Dropped from the list, the builder is refused again.
	require.Eventually(t, func() bool {
		return apierrors.IsForbidden(builderObjects.Create(ctx, kinds[1].new("list-builder")))
	}, time.Minute, 200*time.Millisecond, "the builder, dropped from the list, is refused")
}

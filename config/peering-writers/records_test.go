package peeringwriters_test

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

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
)

// record is one of the records of peering from Git in the controller's
// namespace that only the controller writes.
type record struct {
	kind, name string
}

var records = []record{
	{"ConfigMap", "kubepact-enrolment-public-key"},
	{"Secret", "kubepact-enrolment-key"},
	{"Secret", "kubepact-enrolment-key-next"},
	{"Secret", "kubepact-enrolment-tls"},
}

func (r record) create(ctx context.Context, c kubernetes.Interface) error {
	meta := metav1.ObjectMeta{Name: r.name, Labels: map[string]string{testLabel: "true"}}
	var err error
	if r.kind == "ConfigMap" {
		_, err = c.CoreV1().ConfigMaps(namespace).Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"publicKey": "planted"}}, metav1.CreateOptions{})
	} else {
		_, err = c.CoreV1().Secrets(namespace).Create(ctx, &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: []byte("planted"), corev1.TLSPrivateKeyKey: []byte("planted")}}, metav1.CreateOptions{})
	}
	return err
}

func (r record) patch(ctx context.Context, c kubernetes.Interface) error {
	p := []byte(`{"metadata":{"labels":{"changed":"true"}}}`)
	var err error
	if r.kind == "ConfigMap" {
		_, err = c.CoreV1().ConfigMaps(namespace).Patch(ctx, r.name, types.MergePatchType, p, metav1.PatchOptions{})
	} else {
		_, err = c.CoreV1().Secrets(namespace).Patch(ctx, r.name, types.MergePatchType, p, metav1.PatchOptions{})
	}
	return err
}

func (r record) delete(ctx context.Context, c kubernetes.Interface) error {
	if r.kind == "ConfigMap" {
		return c.CoreV1().ConfigMaps(namespace).Delete(ctx, r.name, metav1.DeleteOptions{})
	}
	return c.CoreV1().Secrets(namespace).Delete(ctx, r.name, metav1.DeleteOptions{})
}

func (r record) deleteCollection(ctx context.Context, c kubernetes.Interface) error {
	sel := metav1.ListOptions{LabelSelector: testLabel}
	if r.kind == "ConfigMap" {
		return c.CoreV1().ConfigMaps(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
	}
	return c.CoreV1().Secrets(namespace).DeleteCollection(ctx, metav1.DeleteOptions{}, sel)
}

func (r record) get(ctx context.Context, c kubernetes.Interface) (metav1.Object, error) {
	if r.kind == "ConfigMap" {
		return c.CoreV1().ConfigMaps(namespace).Get(ctx, r.name, metav1.GetOptions{})
	}
	return c.CoreV1().Secrets(namespace).Get(ctx, r.name, metav1.GetOptions{})
}

// TestEnrolmentRecordWriters: the enrolment key (Secret
// kubepact-enrolment-key, and kubepact-enrolment-key-next through a
// rotation), its public record (ConfigMap
// kubepact-enrolment-public-key) and the endpoint's serving certificate
// (Secret kubepact-enrolment-tls), in the controller's namespace, are
// written by kubepact-controller's ServiceAccount alone (the policy
// kubepact-enrolment-records of config/controller/admission, as config/
// ships it). A user whom RBAC lets create, update, patch and delete every
// Secret and ConfigMap of that namespace can neither plant one before the
// controller makes it, nor change or delete the one it made; a
// system:masters administrator cannot plant one either. Her other Secrets
// and ConfigMaps there stay RBAC's.
func TestEnrolmentRecordWriters(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := cluster(t)
	const mallory = "records-mallory"
	e.role(ctx, t, namespace, "test-records-writer", []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"},
		Verbs: []string{"get", "list", "create", "update", "patch", "delete", "deletecollection"}}}, user(mallory))
	_, attacker := e.as(t, mallory)
	_, controller := e.as(t, controllerUser, "system:serviceaccounts", "system:serviceaccounts:"+namespace)
	t.Cleanup(func() {
		for _, r := range records {
			_ = r.delete(context.Background(), controller)
		}
	})

	// The policy is in force once it refuses what RBAC allows.
	require.Eventually(t, func() bool {
		err := records[0].create(ctx, attacker)
		if err == nil {
			require.NoError(t, records[0].delete(ctx, controller))
		}
		return apierrors.IsForbidden(err)
	}, time.Minute, 200*time.Millisecond, "the policy refuses a planted record")

	for _, r := range records {
		t.Run(r.name, func(t *testing.T) {
			refused(t, r.create(ctx, attacker), "mallory plants "+r.name)
			refused(t, r.create(ctx, e.admin), "system:masters plants "+r.name)
			_, err := r.get(ctx, e.admin)
			require.True(t, apierrors.IsNotFound(err), "nothing planted: %v", err)

			require.NoError(t, r.create(ctx, controller), "the controller creates %s", r.name)
			refused(t, r.patch(ctx, attacker), "mallory changes "+r.name)
			refused(t, r.delete(ctx, attacker), "mallory deletes "+r.name)
			refused(t, r.deleteCollection(ctx, attacker), "mallory deletes the collection with "+r.name)
			o, err := r.get(ctx, e.admin)
			require.NoError(t, err, "still there")
			require.NotContains(t, o.GetLabels(), "changed")
			require.NoError(t, r.patch(ctx, controller), "the controller changes %s", r.name)
			require.NoError(t, r.delete(ctx, controller), "the controller deletes %s", r.name)
		})
	}

	// Her other Secrets and ConfigMaps of the namespace.
	other := record{"ConfigMap", "records-mallory-other"}
	require.NoError(t, other.create(ctx, attacker))
	require.NoError(t, other.delete(ctx, attacker))
	other = record{"Secret", "records-mallory-other"}
	require.NoError(t, other.create(ctx, attacker))
	require.NoError(t, other.delete(ctx, attacker))
}

// TestEnrolmentEndpointIdentity: the enrolment endpoint's ServiceAccount,
// as config/enrolment installs it, reads AuthorizedConsumers and nothing
// else: it writes none, reads no TrustedProvider, no Secret (not even its
// own TLS Secret, which the kubelet mounts) and no ConfigMap.
func TestEnrolmentEndpointIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e := cluster(t)
	objects, typed := e.as(t, enrolmentUser, "system:serviceaccounts", "system:serviceaccounts:"+namespace)

	require.NoError(t, objects.List(ctx, &peeringv1alpha1.AuthorizedConsumerList{}), "the endpoint lists AuthorizedConsumers")
	for what, err := range map[string]error{
		"create an AuthorizedConsumer": objects.Create(ctx, kinds[0].new("enrolment-made")),
		"list TrustedProviders":        objects.List(ctx, &peeringv1alpha1.TrustedProviderList{}),
		"get its TLS Secret": func() error {
			_, err := typed.CoreV1().Secrets(namespace).Get(ctx, "kubepact-enrolment-tls", metav1.GetOptions{})
			return err
		}(),
		"list Secrets": func() error {
			_, err := typed.CoreV1().Secrets(namespace).List(ctx, metav1.ListOptions{})
			return err
		}(),
		"list ConfigMaps": func() error {
			_, err := typed.CoreV1().ConfigMaps(namespace).List(ctx, metav1.ListOptions{})
			return err
		}(),
	} {
		require.True(t, apierrors.IsForbidden(err), "the endpoint may %s: %v", what, err)
	}
}

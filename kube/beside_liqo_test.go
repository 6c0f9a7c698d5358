package kube_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/config/crd"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// The field managers of Liqo's chart and of Liqo's controllers, and a
// field only Liqo's CRDs declare.
const (
	helmManager = "helm"
	liqoManager = "liqo-controller-manager"
	liqoOnly    = "liqoOnly"
	// touched is the label and annotation Liqo's controllers put on shared
	// objects in this test.
	touched = "liqo.io/touched-by-liqo"
)

// liqoCRDs returns the four authentication.liqo.io CRDs as Liqo v1.2's chart
// installs them: the schemas of SPEC §7, which kubepact's follow, plus a
// spec and a status field only Liqo knows, with Helm's labels and
// annotations.
func liqoCRDs(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, m := range crd.Manifests() {
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(m, &u.Object))
		u.SetLabels(map[string]string{"app.kubernetes.io/managed-by": "Helm", "app.kubernetes.io/name": "liqo"})
		u.SetAnnotations(map[string]string{"meta.helm.sh/release-name": "liqo", "meta.helm.sh/release-namespace": "liqo"})
		s := v1beta1Schema(t, u)
		for _, part := range []string{"spec", "status"} {
			if _, found, _ := unstructured.NestedMap(s, "properties", part, "properties"); found {
				require.NoError(t, unstructured.SetNestedField(s, map[string]any{"type": "string"}, "properties", part, "properties", liqoOnly))
			}
		}
		setSchema(t, u, s)
		out = append(out, u)
	}
	require.Len(t, out, 4)
	return out
}

// liqoSide is one cluster of TestBesideLiqo, with what Liqo installed on it.
type liqoSide struct {
	cluster *testcluster.Cluster
	client  kubernetes.Interface
	dynamic dynamic.Interface
	typed   client.Client
	crds    []*unstructured.Unstructured // as stored once established
}

// installLiqo starts a cluster and installs Liqo's CRDs on it as Helm does.
func installLiqo(ctx context.Context, t *testing.T, c *testcluster.Cluster) *liqoSide {
	t.Helper()
	s := &liqoSide{cluster: c}
	var err error
	s.client, err = kubernetes.NewForConfig(c.AdminConfig())
	require.NoError(t, err)
	s.dynamic, err = dynamic.NewForConfig(c.AdminConfig())
	require.NoError(t, err)
	s.typed, err = kube.NewClient(c.AdminConfig(), nil)
	require.NoError(t, err)
	api := s.dynamic.Resource(crdsResource)
	for _, u := range liqoCRDs(t) {
		_, err := api.Create(ctx, u, metav1.CreateOptions{FieldManager: helmManager})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		for _, u := range liqoCRDs(t) {
			got, err := api.Get(ctx, u.GetName(), metav1.GetOptions{})
			if err != nil || !established(got) {
				return false
			}
		}
		return true
	}, time.Minute, 50*time.Millisecond)
	time.Sleep(time.Second) // let trailing status writes land before the reference copies
	for _, u := range liqoCRDs(t) {
		got, err := api.Get(ctx, u.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		s.crds = append(s.crds, got)
	}
	return s
}

func established(crd *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
	for _, c := range conds {
		if m := c.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// requireCRDsIntact checks that every CRD Liqo installed is as it was.
func (s *liqoSide) requireCRDsIntact(t *testing.T) {
	t.Helper()
	for _, want := range s.crds {
		got, err := s.dynamic.Resource(crdsResource).Get(t.Context(), want.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, want.GetResourceVersion(), got.GetResourceVersion(), "CRD %s was written", want.GetName())
		require.Equal(t, want.Object["spec"], got.Object["spec"], "CRD %s", want.GetName())
		require.Equal(t, want.GetLabels(), got.GetLabels(), "CRD %s", want.GetName())
		require.Equal(t, want.GetAnnotations(), got.GetAnnotations(), "CRD %s", want.GetName())
	}
}

// liqoTouch changes the object name in namespace of resource gvr as one of
// Liqo's controllers does, with an update under liqoManager: it adds the
// touched label and annotation, a finalizer when finalizer is set, and
// Liqo-only spec and status fields when liqoFields is set.
func liqoTouch(ctx context.Context, t *testing.T, d dynamic.Interface, gvr schema.GroupVersionResource, namespace, name, finalizer string, liqoFields bool) {
	t.Helper()
	api := d.Resource(gvr).Namespace(namespace)
	u, err := api.Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err, "%s %s/%s", gvr.Resource, namespace, name)
	u.SetLabels(setKey(u.GetLabels(), touched, "yes"))
	u.SetAnnotations(setKey(u.GetAnnotations(), touched, "yes"))
	if finalizer != "" {
		u.SetFinalizers(append(u.GetFinalizers(), finalizer))
	}
	if liqoFields {
		require.NoError(t, unstructured.SetNestedField(u.Object, "spec-kept", "spec", liqoOnly))
	}
	u, err = api.Update(ctx, u, metav1.UpdateOptions{FieldManager: liqoManager})
	require.NoError(t, err, "%s %s/%s", gvr.Resource, namespace, name)
	if liqoFields {
		require.NoError(t, unstructured.SetNestedField(u.Object, "status-kept", "status", liqoOnly))
		_, err = api.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: liqoManager})
		require.NoError(t, err, "status of %s %s/%s", gvr.Resource, namespace, name)
	}
}

// requireTouched checks that what liqoTouch put on the object is there.
func requireTouched(t *testing.T, d dynamic.Interface, gvr schema.GroupVersionResource, namespace, name, finalizer string, liqoFields bool) *unstructured.Unstructured {
	t.Helper()
	u, err := d.Resource(gvr).Namespace(namespace).Get(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err, "%s %s/%s", gvr.Resource, namespace, name)
	what := fmt.Sprintf("%s %s/%s", gvr.Resource, namespace, name)
	require.Equal(t, "yes", u.GetLabels()[touched], "Liqo's label on %s", what)
	require.Equal(t, "yes", u.GetAnnotations()[touched], "Liqo's annotation on %s", what)
	if finalizer != "" {
		require.Contains(t, u.GetFinalizers(), finalizer, "Liqo's finalizer on %s", what)
	}
	if liqoFields {
		v, _, _ := unstructured.NestedString(u.Object, "spec", liqoOnly)
		require.Equal(t, "spec-kept", v, "spec.%s of %s", liqoOnly, what)
		v, _, _ = unstructured.NestedString(u.Object, "status", liqoOnly)
		require.Equal(t, "status-kept", v, "status.%s of %s", liqoOnly, what)
	}
	return u
}

func setKey(m map[string]string, k, v string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[k] = v
	return m
}

var (
	secretsResource      = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	namespacesResource   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	roleBindingsResource = rbacv1.SchemeGroupVersion.WithResource("rolebindings")
	tenantsResource      = authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.TenantResource)
	identitiesResource   = authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.IdentityResource)
)

// TestBesideLiqo runs kubepact in both roles on two clusters where Liqo is
// installed (its CRDs, with fields only Liqo knows, and its
// liqo-remote-controlplane ClusterRole, with rules of its own), while Liqo's
// controllers put their labels, annotations, finalizers and fields on the
// objects kubepact shares with them. After a kubepact consumer
// authenticates three times and a consumer that behaves as Liqo's does
// three times, everything Liqo put there is intact; the ControlPlane
// RoleBinding carries Liqo's labels and is owned by its Tenant, so the
// garbage collector deletes it with the Tenant.
func TestBesideLiqo(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	clusters, err := testcluster.StartAll(ctx, "liqo-provider", "liqo-consumer")
	require.NoError(t, err)
	t.Cleanup(func() { _ = testcluster.StopAll(clusters) })
	prov, cons := installLiqo(ctx, t, clusters[0]), installLiqo(ctx, t, clusters[1])

	// Liqo's chart installs the ControlPlane role with rules of its own.
	liqoRole := rbac.ControlPlaneClusterRole()
	liqoRole.Labels = map[string]string{rbac.NameLabel: rbac.ControlPlaneNameValue, "app.kubernetes.io/managed-by": "Helm"}
	liqoRole.Annotations = map[string]string{"meta.helm.sh/release-name": "liqo"}
	liqoRole.Rules = append(liqoRole.Rules, rbacv1.PolicyRule{
		APIGroups: []string{"authentication.liqo.io"}, Resources: []string{"tenants"}, Verbs: []string{"get"},
	})
	// It, not kubepact's config/roles, put the role there.
	require.NoError(t, prov.client.RbacV1().ClusterRoles().Delete(ctx, liqoRole.Name, metav1.DeleteOptions{}))
	_, err = prov.client.RbacV1().ClusterRoles().Create(ctx, liqoRole, metav1.CreateOptions{FieldManager: helmManager})
	require.NoError(t, err)

	require.NoError(t, kube.InstallCRDs(ctx, prov.cluster.AdminConfig()))
	require.NoError(t, kube.InstallCRDs(ctx, cons.cluster.AdminConfig()))
	prov.requireCRDsIntact(t)
	cons.requireCRDsIntact(t)

	const providerID, consumerID, liqoConsumerID = "cl-provider-beside", "cl-consumer-beside", "cl-liqo-consumer-beside"
	pc := prov.client
	nonces := kube.NewNonceStore(pc)
	p, err := provider.New(providerID, provider.Endpoint{Server: prov.cluster.Host(), CA: prov.cluster.CA()}, provider.Ports{
		Core: provider.Core{
			Namespaces:   kube.NewNamespaces(pc),
			Nonces:       nonces,
			Peek:         nonces,
			Tenants:      kube.NewTenantStore(prov.typed),
			Signer:       kube.NewCSRSigner(pc, kube.NewApprover(pc)),
			Certificates: kube.NewCertificateCache(pc),
			RBAC:         kube.NewRBAC(pc),
		},
		Lifecycle: kube.NewLifecyclePorts(pc, prov.typed),
	}, nil)
	require.NoError(t, err)
	c, err := consumer.New(consumerID, consumer.Ports{
		Core: consumer.Core{
			Namespaces: kube.NewNamespaces(cons.client),
			Keys:       kube.NewKeyStore(cons.client, "liqo"),
			Identities: kube.NewIdentityStore(cons.typed),
			Secrets:    kube.NewSecretWriter(cons.client),
		},
		IdentityKeys: kube.NewKeyring(cons.client, "liqo"),
	}, nil)
	require.NoError(t, err)

	got, err := kubepact.Authenticate(ctx, c, p, nil)
	require.NoError(t, err, "first authentication")

	// Liqo's controllers touch every object kubepact shares with them.
	tenantNS, consumerNS := clusterid.TenantNamespace(consumerID), clusterid.TenantNamespace(providerID)
	binding := rbac.BindingName(rbac.ControlPlaneClusterRoleName)
	const liqoFinalizer = "liqo.io/test-finalizer"
	liqoTouch(ctx, t, prov.dynamic, tenantsResource, tenantNS, consumerID, liqoFinalizer, true)
	liqoTouch(ctx, t, prov.dynamic, roleBindingsResource, tenantNS, binding, "", false)
	liqoTouch(ctx, t, prov.dynamic, secretsResource, tenantNS, nonce.SecretName, "", false)
	liqoTouch(ctx, t, prov.dynamic, namespacesResource, "", tenantNS, "", false)
	liqoTouch(ctx, t, cons.dynamic, identitiesResource, consumerNS, identity.ControlPlaneName(providerID), liqoFinalizer, false)
	liqoTouch(ctx, t, cons.dynamic, secretsResource, consumerNS, got.Secret.Name, "", false)
	liqoTouch(ctx, t, cons.dynamic, secretsResource, consumerNS, nonce.SignedSecretName, "", false)
	liqoTouch(ctx, t, cons.dynamic, namespacesResource, "", consumerNS, "", false)

	for i := 2; i <= 3; i++ {
		_, err := kubepact.Authenticate(ctx, c, p, nil)
		require.NoError(t, err, "authentication %d", i)
	}

	// A consumer that behaves as Liqo's does re-authenticates with the
	// nonce it keeps. Its own cluster is stood for by a namespace of the
	// consumer cluster.
	liqoNS := "liqo-shaped-consumer"
	_, err = cons.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: liqoNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	key := testkeys.Generate(t, keys.Ed25519)
	for i := 1; i <= 3; i++ {
		n, err := p.IssueNonce(ctx, liqoConsumerID)
		require.NoError(t, err)
		_, err = liqoSignNonce(ctx, cons.client.CoreV1().Secrets(liqoNS), providerID, key, n)
		require.NoError(t, err, "Liqo-shaped authentication %d", i)
		tn, err := tenant.Build(liqoConsumerID, key, n, nil)
		require.NoError(t, err)
		_, err = p.Accept(ctx, tn)
		require.NoError(t, err, "Liqo-shaped authentication %d", i)
	}

	prov.requireCRDsIntact(t)
	cons.requireCRDsIntact(t)
	role, err := pc.RbacV1().ClusterRoles().Get(ctx, rbac.ControlPlaneClusterRoleName, metav1.GetOptions{})
	require.NoError(t, err)
	require.True(t, equality.Semantic.DeepEqual(liqoRole.Rules, role.Rules), "Liqo's rules: got %v", role.Rules)
	for k, v := range liqoRole.Labels {
		require.Equal(t, v, role.Labels[k], "Liqo's label %s on the ClusterRole", k)
	}
	require.True(t, maps.Equal(liqoRole.Annotations, role.Annotations), "Liqo's annotations on the ClusterRole: %v", role.Annotations)

	stored := requireTouched(t, prov.dynamic, tenantsResource, tenantNS, consumerID, liqoFinalizer, true)
	require.NotContains(t, stored.GetFinalizers(), tenant.Finalizer, "Authenticate ran in-process: no controller here would remove it")
	_, found, _ := unstructured.NestedString(stored.Object, "status", "tenantNamespace")
	require.True(t, found, "kubepact's status of the Tenant")
	rb := requireTouched(t, prov.dynamic, roleBindingsResource, tenantNS, binding, "", false)
	require.Equal(t, rbac.ManagedByValue, rb.GetLabels()[rbac.ManagedByLabel])
	requireOwnedBy(t, rb, stored)
	requireTouched(t, prov.dynamic, secretsResource, tenantNS, nonce.SecretName, "", false)
	requireTouched(t, prov.dynamic, namespacesResource, "", tenantNS, "", false)
	requireTouched(t, cons.dynamic, identitiesResource, consumerNS, identity.ControlPlaneName(providerID), liqoFinalizer, false)
	requireTouched(t, cons.dynamic, secretsResource, consumerNS, got.Secret.Name, "", false)
	requireTouched(t, cons.dynamic, secretsResource, consumerNS, nonce.SignedSecretName, "", false)
	requireTouched(t, cons.dynamic, namespacesResource, "", consumerNS, "", false)

	t.Run("UnauthenticateLeavesLiqosFinalizers", func(t *testing.T) {
		require.NoError(t, kubepact.Unauthenticate(ctx, c, p))
		for _, o := range []struct {
			d         dynamic.Interface
			gvr       schema.GroupVersionResource
			namespace string
			name      string
		}{
			{prov.dynamic, tenantsResource, tenantNS, consumerID},
			{cons.dynamic, identitiesResource, consumerNS, identity.ControlPlaneName(providerID)},
		} {
			u, err := o.d.Resource(o.gvr).Namespace(o.namespace).Get(ctx, o.name, metav1.GetOptions{})
			require.NoError(t, err, "%s stays while Liqo's finalizer does", o.gvr.Resource)
			require.Equal(t, []string{liqoFinalizer}, u.GetFinalizers(), "%s", o.gvr.Resource)
			require.NotNil(t, u.GetDeletionTimestamp(), "%s is terminating", o.gvr.Resource)
			// Liqo's controller finishes its cleanup.
			u.SetFinalizers(nil)
			_, err = o.d.Resource(o.gvr).Namespace(o.namespace).Update(ctx, u, metav1.UpdateOptions{FieldManager: liqoManager})
			require.NoError(t, err)
		}
	})

	t.Run("DeletingTheTenantCollectsItsBinding", func(t *testing.T) {
		ns := clusterid.TenantNamespace(liqoConsumerID)
		owner, err := prov.dynamic.Resource(tenantsResource).Namespace(ns).Get(ctx, liqoConsumerID, metav1.GetOptions{})
		require.NoError(t, err)
		b, err := pc.RbacV1().RoleBindings(ns).Get(ctx, binding, metav1.GetOptions{})
		require.NoError(t, err)
		u := &unstructured.Unstructured{}
		u.SetOwnerReferences(b.OwnerReferences)
		requireOwnedBy(t, u, owner)

		// Deleted as a user would, its finalizer removed as a controller
		// would, with no call to kubepact.
		require.NoError(t, prov.dynamic.Resource(tenantsResource).Namespace(ns).Delete(ctx, liqoConsumerID, metav1.DeleteOptions{}))
		owner, err = prov.dynamic.Resource(tenantsResource).Namespace(ns).Get(ctx, liqoConsumerID, metav1.GetOptions{})
		require.NoError(t, err)
		owner.SetFinalizers(nil)
		_, err = prov.dynamic.Resource(tenantsResource).Namespace(ns).Update(ctx, owner, metav1.UpdateOptions{})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			_, err := pc.RbacV1().RoleBindings(ns).Get(ctx, binding, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		}, time.Minute, 100*time.Millisecond, "the garbage collector deletes the binding of a deleted Tenant")
	})
}

// requireOwnedBy checks that u's controller is the Tenant owner.
func requireOwnedBy(t *testing.T, u, owner *unstructured.Unstructured) {
	t.Helper()
	ref := metav1.GetControllerOfNoCopy(u)
	require.NotNil(t, ref, "no controller reference on %s", u.GetName())
	require.Equal(t, owner.GetUID(), ref.UID)
	require.Equal(t, authv1beta1.TenantKind, ref.Kind)
	require.Equal(t, authv1beta1.SchemeGroupVersion.String(), ref.APIVersion)
}

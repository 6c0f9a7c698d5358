package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

// sliceConfig makes a ResourceSlice identity by hand, as a provider does:
// a key, a CSR for the slice signed by the provider's CSR API, and the
// slice RBAC (group = consumer ID) in namespace and cluster-wide. It returns
// the identity's client configuration.
func sliceConfig(t *testing.T, ctx context.Context, consumerID, sliceName, namespace string) *rest.Config {
	t.Helper()
	key, err := keys.Generate(rand.Reader, keys.ECDSAP256)
	require.NoError(t, err)
	req, err := csr.Create(rand.Reader, key, csr.ResourceSliceSubject(consumerID, sliceName))
	require.NoError(t, err)
	checked, err := csr.Check(req, csr.ResourceSlicePolicy(consumerID, sliceName, key.Public()))
	require.NoError(t, err)
	cert, err := kube.NewCSRSigner(providerEnv.client, kube.NewApprover(providerEnv.client)).Sign(ctx, csr.Request{CSR: checked, Lifetime: time.Hour})
	require.NoError(t, err)
	keyPEM, err := keys.MarshalPrivateKey(key)
	require.NoError(t, err)

	binder := kube.NewRBAC(providerEnv.client)
	for _, b := range rbac.ResourceSliceRoleBindings(consumerID, "edit", []string{namespace}) {
		require.NoError(t, binder.ApplyRoleBinding(ctx, b))
	}
	// The Tenant's acceptance made the cluster-wide binding; its roleRef
	// is immutable, so it is made again to one that grants something here.
	require.NoError(t, providerEnv.client.RbacV1().ClusterRoleBindings().Delete(ctx, "liqo-binding-liqo-virtual-kubelet-remote-clusterwide-"+consumerID, metav1.DeleteOptions{}))
	_, err = providerEnv.client.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "liqo-binding-liqo-virtual-kubelet-remote-clusterwide-" + consumerID,
			Labels: map[string]string{clusterid.Label: consumerID, rbac.ManagedByLabel: rbac.ManagedByValue}},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return &rest.Config{Host: providerEnv.cluster.Host(), TLSClientConfig: rest.TLSClientConfig{
		CAData: providerEnv.cluster.CA(), CertData: cert, KeyData: keyPEM}}
}

// requirePowerless checks that cfg is allowed nothing beyond what every
// authenticated user may do: a few requests are Forbidden, and its
// SelfSubjectRulesReview lists no resource rule beyond the self-reviews.
func requirePowerless(t *testing.T, ctx context.Context, cfg *rest.Config, namespaces ...string) {
	t.Helper()
	core, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	for _, ns := range namespaces {
		_, err = dyn.Resource(resourceSlices).Namespace(ns).List(ctx, metav1.ListOptions{})
		require.True(t, apierrors.IsForbidden(err), "listing ResourceSlices in %s: %v", ns, err)
		_, err = dyn.Resource(resourceSlices).Namespace(ns).Create(ctx, resourceSlice("after-drain"), metav1.CreateOptions{})
		require.True(t, apierrors.IsForbidden(err), "creating a ResourceSlice in %s: %v", ns, err)
		_, err = core.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		require.True(t, apierrors.IsForbidden(err), "listing ConfigMaps in %s: %v", ns, err)
		_, err = core.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		require.True(t, apierrors.IsForbidden(err), "listing Pods in %s: %v", ns, err)
		review, err := core.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		for _, r := range review.Status.ResourceRules {
			for _, g := range r.APIGroups {
				require.Contains(t, []string{"authorization.k8s.io", "authentication.k8s.io"}, g, "rule %+v in %s", r, ns)
			}
		}
	}
	_, err = core.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.True(t, apierrors.IsForbidden(err), "listing Namespaces: %v", err)
}

func sliceAnnotations(t *testing.T, ctx context.Context, namespace string) map[string]map[string]string {
	t.Helper()
	l, err := providerEnv.dynamic.Resource(resourceSlices).Namespace(namespace).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	out := map[string]map[string]string{}
	for _, s := range l.Items {
		out[s.GetName()] = s.GetAnnotations()
		require.Equal(t, "kept", s.GetLabels()["example.com/label"])
	}
	return out
}

// TestCordonDrainReadmit runs the tenant lifecycle with the CLI on real
// clusters: cordon and uncordon mark and unmark the consumer's slices,
// drain leaves every certificate it holds powerless, a new Tenant for it is
// refused until the administrator readmits it.
func TestCordonDrainReadmit(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID, namespace := unique("cl-consumer-drain"), unique("cl-provider-drain"), unique("liqo-drain")
	tenantNS := clusterid.TenantNamespace(consumerID)
	offloaded := unique("offloaded")
	_, err := providerEnv.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: offloaded}}, metav1.CreateOptions{})
	require.NoError(t, err)
	lifecycleArgs := func(verb string) []string {
		return []string{verb, "tenant", "--kubeconfig", providerEnv.kubeconfig, "--cluster-id", providerID, "--remote-cluster-id", consumerID}
	}

	cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...).ok(t)
	controlPlane, _ := issuedConfig(t, ctx, providerID)
	slice := sliceConfig(t, ctx, consumerID, "slice-a", offloaded)
	sliceCore, err := kubernetes.NewForConfig(slice)
	require.NoError(t, err)
	_, err = sliceCore.CoreV1().ConfigMaps(offloaded).List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "the slice identity works before the drain")

	// The consumer's slices, replicated by its ControlPlane identity.
	cpDyn, err := dynamic.NewForConfig(controlPlane)
	require.NoError(t, err)
	for _, name := range []string{"slice-a", "slice-b"} {
		s := resourceSlice(name)
		s.SetLabels(map[string]string{"example.com/label": "kept"})
		s.SetAnnotations(map[string]string{"example.com/note": "kept"})
		_, err := cpDyn.Resource(resourceSlices).Namespace(tenantNS).Create(ctx, s, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	// A binding labelled for the consumer, but not its own, survives the drain.
	_, err = providerEnv.client.RbacV1().RoleBindings(offloaded).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice", Labels: map[string]string{clusterid.Label: consumerID, rbac.ManagedByLabel: rbac.ManagedByValue}},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// Uncordon from Active is refused; cordon, then cordon again is refused.
	r := cli(t, "", lifecycleArgs("uncordon")...)
	require.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "Active to Active")
	r = cli(t, "", lifecycleArgs("cordon")...).ok(t)
	assert.Contains(t, r.stdout, "Tenant of "+consumerID+" cordoned")
	for name, a := range sliceAnnotations(t, ctx, tenantNS) {
		assert.Equal(t, map[string]string{lifecycle.CordonAnnotation: "true", "example.com/note": "kept"}, a, name)
	}
	r = cli(t, "", lifecycleArgs("cordon")...)
	require.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "Cordoned to Cordoned")
	cli(t, "", lifecycleArgs("uncordon")...).ok(t)
	for name, a := range sliceAnnotations(t, ctx, tenantNS) {
		assert.Equal(t, map[string]string{"example.com/note": "kept"}, a, name)
	}

	r = cli(t, "", lifecycleArgs("drain")...).ok(t)
	assert.Contains(t, r.stdout, "Tenant of "+consumerID+" drained")
	assert.Contains(t, r.stdout, "recorded as revoked until")
	requirePowerless(t, ctx, controlPlane, tenantNS, offloaded)
	requirePowerless(t, ctx, slice, tenantNS, offloaded)
	l, err := providerEnv.dynamic.Resource(resourceSlices).Namespace(tenantNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Empty(t, l.Items)
	_, err = providerEnv.client.RbacV1().RoleBindings(offloaded).Get(ctx, "alice", metav1.GetOptions{})
	require.NoError(t, err, "a binding that is not the consumer's survives")
	r = cli(t, "", lifecycleArgs("cordon")...)
	require.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "Drained to Cordoned")

	// Authenticating again is refused: the Tenant is drained; once it is
	// deleted, the revocation record still refuses it; readmitted, it works.
	r = cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...)
	require.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, lifecycle.ErrDrained.Error())
	requirePowerless(t, ctx, controlPlane, tenantNS)
	cli(t, "", authenticateArgs("unauthenticate", consumerID, providerID, namespace)...).ok(t)
	r = cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...)
	require.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, lifecycle.ErrRevoked.Error())
	requirePowerless(t, ctx, controlPlane, tenantNS)
	cm, err := providerEnv.client.CoreV1().ConfigMaps(tenantNS).Get(ctx, kube.RevocationName, metav1.GetOptions{})
	require.NoError(t, err)
	until, err := time.Parse(time.RFC3339, cm.Data[kube.RevocationUntilKey])
	require.NoError(t, err)
	require.True(t, until.After(time.Now().Add(provider.DefaultCertificateLifetime-time.Hour)), "revoked until %s", until)

	cli(t, "", lifecycleArgs("readmit")...).ok(t)
	cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...).ok(t)
	st, err := kube.NewTenantStore(providerEnv.typed).Get(ctx, tenantNS, consumerID)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.TenantConditionActive, st.Spec.TenantCondition)
}

// The Tenant a consumer hands over says Active: applied on the provider it
// must not undo the provider's cordon or drain.
func TestCleanTenantLeavesTheConditionOut(t *testing.T) {
	t.Parallel()
	key, err := keys.Generate(rand.Reader, keys.Ed25519)
	require.NoError(t, err)
	pub, err := keys.MarshalPublicKey(key.Public())
	require.NoError(t, err)
	req, err := csr.Create(rand.Reader, key, csr.ControlPlaneSubject("cl-c"))
	require.NoError(t, err)
	tn := &authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{ClusterID: "cl-c", PublicKey: pub, CSR: req, Signature: []byte("sig"),
		TenantCondition: authv1beta1.TenantConditionActive}}
	out, err := cleanTenant(tn)
	require.NoError(t, err)
	require.Empty(t, out.Spec.TenantCondition)
	require.Equal(t, pub, out.Spec.PublicKey)
}

func TestLifecycleAdvice(t *testing.T) {
	t.Parallel()
	revoked := &lifecycle.RevokedError{ConsumerID: "cl-consumer", Until: time.Now(), Reason: lifecycle.ReasonDrained}
	assert.Contains(t, advice(revoked, "cl-consumer"), "kubepact readmit tenant --remote-cluster-id cl-consumer")
	assert.Contains(t, advice(lifecycle.ErrDrained, "cl-consumer"), "never bound again")
	assert.Contains(t, advice(&tenant.NamespaceError{Namespace: "liqo-tenant-cl-provider", RemoteID: "cl-provider", Label: tenant.NamespaceLabel}, ""), "find who created it")
	assert.Contains(t, advice(fmt.Errorf("consumer cluster: %w", errUntrustedTenant), ""), "delete the Secret liqo-signed-nonce")
	assert.Contains(t, advice(&lifecycle.TransitionError{From: "Drained", To: "Cordoned"}, ""), "cordon only an Active Tenant")
}

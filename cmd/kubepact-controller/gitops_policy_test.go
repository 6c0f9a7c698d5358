package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/rbac"
)

// scrapeMetrics is what the cluster-wide slice role grants: reading
// metrics.liqo.io scrape/metrics.
var scrapeMetrics = authorizationv1.ResourceAttributes{Verb: "get", Group: "metrics.liqo.io", Resource: "scrape", Subresource: "metrics"}

// sliceScrapes reports whether cs, a slice identity's client, may read
// metrics.liqo.io scrape/metrics, as it asks the API server itself.
func sliceScrapes(ctx context.Context, t *testing.T, cs kubernetes.Interface) bool {
	t.Helper()
	r, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &scrapeMetrics},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return r.Status.Allowed
}

// groupScrapes reports whether on p any user in group consumerID, the O of
// every slice certificate of that consumer, may read metrics.liqo.io
// scrape/metrics: a slice identity of its own making, whatever its CN.
func groupScrapes(ctx context.Context, t *testing.T, p peer, consumerID string) bool {
	t.Helper()
	attrs := scrapeMetrics
	r, err := p.admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "forged-slice-" + consumerID, Groups: []string{consumerID, "system:authenticated"},
			ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return r.Status.Allowed
}

// sliceClusterBinding reports whether p stores the ClusterRoleBinding of
// consumerID's slice identities.
func sliceClusterBinding(ctx context.Context, t *testing.T, p peer, consumerID string) bool {
	t.Helper()
	_, err := p.admin.RbacV1().ClusterRoleBindings().Get(ctx, rbac.ResourceSliceClusterRoleBindingName(consumerID), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

// setPolicy sets ac's spec.policy on p, as a commit applied by a GitOps
// tool does, leaving the rest as it is.
func setPolicy(ctx context.Context, t *testing.T, p peer, ac *peeringv1alpha1.AuthorizedConsumer, policy *peeringv1alpha1.ConsumerPolicy) {
	t.Helper()
	require.NoError(t, p.typed.Get(ctx, client.ObjectKeyFromObject(ac), ac))
	before := ac.DeepCopy()
	ac.Spec.Policy = policy
	require.NoError(t, p.typed.Patch(ctx, ac, client.MergeFrom(before)))
}

// TestPeeringFromGitWithholdsClusterWideRole peers a consumer from Git,
// both controllers as config/ ships them, under an AuthorizedConsumer
// whose policy sets resourceSliceClusterWideRole false: the consumer is
// peered, its ControlPlane identity works, its slice gets its kubeconfig,
// and the provider holds no slice ClusterRoleBinding for it. From the
// consumer's side, its slice identity, and any identity in its group, is
// refused metrics.liqo.io scrape/metrics. With the field removed (the
// provider's default) the next reconcile binds it and the same slice
// identity may read metrics; set false again, the binding is deleted and
// the slice refused, while the ControlPlane identity keeps working.
func TestPeeringFromGitWithholdsClusterWideRole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, b := peer{providerEnv, "ctl-nometrics-p"}, peer{consumerEnv, "ctl-nometrics-c"}
	startCurrent(ctx, t, a)
	startCurrent(ctx, t, b)
	withheld := func() *peeringv1alpha1.ConsumerPolicy {
		no := false
		return &peeringv1alpha1.ConsumerPolicy{ResourceSliceClusterWideRole: &no}
	}
	_, ac, _ := peerFromGitWith(ctx, t, a, b, enrolhttp.Limits{PerClient: 100, Burst: 100}, withheld())
	requireControlPlaneWorks(ctx, t, a, b)
	const slice = "no-metrics"
	makeSlice(ctx, t, a, b, slice)
	// The slice goes first, through both controllers, before the objects
	// that peer the clusters: none is left retrying once they stop.
	t.Cleanup(func() { forgetSlice(t, a, b, slice) })
	sliceClient, err := kubernetes.NewForConfig(restConfigOf(t, sliceKubeconfig(ctx, t, a, b, slice)))
	require.NoError(t, err)

	require.False(t, sliceClusterBinding(ctx, t, a, b.id), "no ClusterRoleBinding %s", rbac.ResourceSliceClusterRoleBindingName(b.id))
	require.False(t, sliceScrapes(ctx, t, sliceClient), "the slice identity reads no metrics")
	require.False(t, groupScrapes(ctx, t, a, b.id), "nor does any identity in the consumer's group")
	_, err = a.admin.RbacV1().RoleBindings(clusterid.TenantNamespace(b.id)).Get(ctx, rbac.BindingName(rbac.ControlPlaneClusterRoleName), metav1.GetOptions{})
	require.NoError(t, err, "the ControlPlane RoleBinding")

	// The provider's default: bound at the next reconcile.
	setPolicy(ctx, t, a, ac, nil)
	waitFor(t, "the slice ClusterRoleBinding applied", func() bool { return sliceClusterBinding(ctx, t, a, b.id) })
	waitFor(t, "the slice identity reads metrics", func() bool { return sliceScrapes(ctx, t, sliceClient) })
	require.True(t, groupScrapes(ctx, t, a, b.id))

	// Withheld again: deleted at the next reconcile.
	setPolicy(ctx, t, a, ac, withheld())
	waitFor(t, "the slice ClusterRoleBinding deleted", func() bool { return !sliceClusterBinding(ctx, t, a, b.id) })
	require.False(t, sliceScrapes(ctx, t, sliceClient))
	require.False(t, groupScrapes(ctx, t, a, b.id))
	requireControlPlaneWorks(ctx, t, a, b)
	require.True(t, meta.IsStatusConditionTrue(currentConditions(ctx, t, a, ac), peeringv1alpha1.ConditionReady), "the grant stands")
	// The slice's own reconciles (its Tenant's change requeues it) bind
	// nothing cluster-wide meanwhile.
	for range 15 {
		require.False(t, sliceClusterBinding(ctx, t, a, b.id), "bound again")
		time.Sleep(200 * time.Millisecond)
	}
}

// currentConditions returns the conditions of ac as p stores it.
func currentConditions(ctx context.Context, t *testing.T, p peer, ac *peeringv1alpha1.AuthorizedConsumer) []metav1.Condition {
	t.Helper()
	var got peeringv1alpha1.AuthorizedConsumer
	require.NoError(t, p.typed.Get(ctx, client.ObjectKeyFromObject(ac), &got))
	return got.Status.Conditions
}

// forgetSlice deletes consumer c's ResourceSlice name for provider p and
// waits until both its copies are gone.
func forgetSlice(t *testing.T, p, c peer, name string) {
	t.Helper()
	ctx := context.Background()
	local := client.ObjectKey{Namespace: clusterid.TenantNamespace(p.id), Name: name}
	remote := client.ObjectKey{Namespace: clusterid.TenantNamespace(c.id), Name: name}
	require.NoError(t, client.IgnoreNotFound(c.typed.Delete(ctx, &authv1beta1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: local.Namespace, Name: local.Name}})))
	waitFor(t, "the ResourceSlice gone on both clusters", func() bool {
		return apierrors.IsNotFound(c.typed.Get(ctx, local, &authv1beta1.ResourceSlice{})) &&
			apierrors.IsNotFound(p.typed.Get(ctx, remote, &authv1beta1.ResourceSlice{}))
	})
}

package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/keys"
)

// peeringVerbs are the verbs the API server authorizes on a resource of
// peering.kubepact.io, its status included.
var peeringVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// TestFlowServiceAccountsOnlyGetAuthorizedConsumers: config/token-server
// and config/serviceaccount-identity grant their ServiceAccount get on
// authorizedconsumers, so that each refuses a consumer ID committed from
// Git, and nothing more of peering.kubepact.io. Applied as shipped, as
// each ServiceAccount (by impersonation): it gets an AuthorizedConsumer by
// name; every other verb on authorizedconsumers (list, watch, create,
// update, patch, server-side apply, delete, deletecollection), every verb
// on authorizedconsumers/status and every verb on trustedproviders and
// trustedproviders/status is Forbidden, and the objects are unchanged.
// Writes are dry runs, so that a wider grant leaves nothing behind. The
// API server's authorizer agrees on every verb (SubjectAccessReview): no
// admission policy, now or later, hides a wider RBAC grant.
func TestFlowServiceAccountsOnlyGetAuthorizedConsumers(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	applyConfig(t, ctx, providerEnv, "token-server")
	applyConfig(t, ctx, providerEnv, "serviceaccount-identity")

	ac, tp := committedPeering(t, ctx, unique("cl-ac-grant"), unique("cl-tp-grant"))
	acs := peeringv1alpha1.SchemeGroupVersion.WithResource(peeringv1alpha1.AuthorizedConsumerResource)
	tps := peeringv1alpha1.SchemeGroupVersion.WithResource(peeringv1alpha1.TrustedProviderResource)
	admin := providerEnv.dynamic
	before := map[schema.GroupVersionResource]*unstructured.Unstructured{}
	for gvr, name := range map[schema.GroupVersionResource]string{acs: ac.Name, tps: tp.Name} {
		u, err := admin.Resource(gvr).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		before[gvr] = u
	}

	for _, who := range []struct {
		name string
		user rest.ImpersonationConfig
	}{{"kubepact-token-server", tokenServer}, {"kubepact-serviceaccount-issuer", issuer}} {
		t.Run(who.name, func(t *testing.T) {
			cfg := rest.CopyConfig(providerEnv.cluster.AdminConfig())
			cfg.Impersonate = who.user
			sa, err := dynamic.NewForConfig(cfg)
			require.NoError(t, err)

			// What the grant says: get, by name. The binding may take a
			// moment to reach the API server's authorizer.
			var got *unstructured.Unstructured
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				got, err = sa.Resource(acs).Get(ctx, ac.Name, metav1.GetOptions{})
				assert.NoError(c, err)
			}, time.Minute, 200*time.Millisecond, "%s gets an AuthorizedConsumer", who.name)
			assert.Equal(t, ac.Name, got.GetName())
			spec, _, err := unstructured.NestedMap(got.Object, "spec")
			require.NoError(t, err)
			assert.Equal(t, ac.Spec.ClusterID, spec["clusterID"])
			// An ID nobody committed is not found, not refused: the
			// grant is on every name.
			_, err = sa.Resource(acs).Get(ctx, unique("cl-never-committed"), metav1.GetOptions{})
			assert.True(t, apierrors.IsNotFound(err), "get of an uncommitted ID: %v", err)

			for gvr, cur := range before {
				for name, call := range refusedCalls(ctx, sa.Resource(gvr), cur, gvr == acs) {
					err := call()
					assert.Truef(t, apierrors.IsForbidden(err), "%s: %s %s: got %v, want Forbidden", who.name, gvr.Resource, name, err)
				}
			}

			// The authorizer, asked about every verb: only get on
			// authorizedconsumers.
			for _, resource := range []string{peeringv1alpha1.AuthorizedConsumerResource, peeringv1alpha1.TrustedProviderResource} {
				for _, sub := range []string{"", "status"} {
					for _, verb := range append(slices.Clone(peeringVerbs), "*") {
						review, err := providerEnv.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
							Spec: authorizationv1.SubjectAccessReviewSpec{
								User: who.user.UserName, Groups: who.user.Groups,
								ResourceAttributes: &authorizationv1.ResourceAttributes{
									Verb: verb, Group: peeringv1alpha1.GroupName, Version: peeringv1alpha1.SchemeGroupVersion.Version,
									Resource: resource, Subresource: sub, Name: ac.Name,
								},
							},
						}, metav1.CreateOptions{})
						require.NoError(t, err)
						want := resource == peeringv1alpha1.AuthorizedConsumerResource && sub == "" && verb == "get"
						assert.Equalf(t, want, review.Status.Allowed, "%s may %s %s/%s", who.name, verb, resource, sub)
					}
				}
			}
		})
	}

	// Nothing was written.
	for gvr, u := range before {
		after, err := admin.Resource(gvr).Get(ctx, u.GetName(), metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, u.GetResourceVersion(), after.GetResourceVersion(), "%s %s unchanged", gvr.Resource, u.GetName())
	}
}

// refusedCalls are every request on api, the resource of the object cur,
// and on its status, writes as dry runs, but a get of the object when
// getAllowed: what a ServiceAccount granted get, or nothing, on that
// resource must be refused.
func refusedCalls(ctx context.Context, api dynamic.NamespaceableResourceInterface, cur *unstructured.Unstructured, getAllowed bool) map[string]func() error {
	dry := []string{metav1.DryRunAll}
	name := cur.GetName()
	changed := func() *unstructured.Unstructured {
		u := cur.DeepCopy()
		labels := u.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["example.com/attack"] = "true"
		u.SetLabels(labels)
		return u
	}
	fresh := func() *unstructured.Unstructured {
		u := cur.DeepCopy()
		u.SetName(name + "-x")
		u.SetResourceVersion("")
		u.SetUID("")
		u.SetCreationTimestamp(metav1.Time{})
		u.SetManagedFields(nil)
		_ = unstructured.SetNestedField(u.Object, name+"-x", "spec", "clusterID")
		unstructured.RemoveNestedField(u.Object, "status")
		return u
	}
	withStatus := func() *unstructured.Unstructured {
		u := cur.DeepCopy()
		_ = unstructured.SetNestedField(u.Object, int64(99), "status", "observedGeneration")
		return u
	}
	labelPatch := []byte(`{"metadata":{"labels":{"example.com/attack":"true"}}}`)
	statusPatch := []byte(`{"status":{"observedGeneration":99}}`)
	applied := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(cur.GetAPIVersion())
		u.SetKind(cur.GetKind())
		u.SetName(name)
		u.SetLabels(map[string]string{"example.com/attack": "true"})
		return u
	}
	calls := map[string]func() error{
		"list": func() error {
			_, err := api.List(ctx, metav1.ListOptions{})
			return err
		},
		"list by name": func() error {
			_, err := api.List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
			return err
		},
		"watch": func() error {
			w, err := api.Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		},
		"watch by name": func() error {
			w, err := api.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
			if err == nil {
				w.Stop()
			}
			return err
		},
		"create": func() error {
			_, err := api.Create(ctx, fresh(), metav1.CreateOptions{DryRun: dry})
			return err
		},
		"update": func() error {
			_, err := api.Update(ctx, changed(), metav1.UpdateOptions{DryRun: dry})
			return err
		},
		"patch": func() error {
			_, err := api.Patch(ctx, name, types.MergePatchType, labelPatch, metav1.PatchOptions{DryRun: dry})
			return err
		},
		"server-side apply": func() error {
			_, err := api.Apply(ctx, name, applied(), metav1.ApplyOptions{FieldManager: "attack", Force: true, DryRun: dry})
			return err
		},
		"delete": func() error {
			return api.Delete(ctx, name, metav1.DeleteOptions{DryRun: dry})
		},
		"deletecollection": func() error {
			return api.DeleteCollection(ctx, metav1.DeleteOptions{DryRun: dry}, metav1.ListOptions{})
		},
		"get status": func() error {
			_, err := api.Get(ctx, name, metav1.GetOptions{}, "status")
			return err
		},
		"update status": func() error {
			_, err := api.UpdateStatus(ctx, withStatus(), metav1.UpdateOptions{DryRun: dry})
			return err
		},
		"patch status": func() error {
			_, err := api.Patch(ctx, name, types.MergePatchType, statusPatch, metav1.PatchOptions{DryRun: dry}, "status")
			return err
		},
		"apply status": func() error {
			u := applied()
			u.SetLabels(nil)
			_ = unstructured.SetNestedField(u.Object, int64(99), "status", "observedGeneration")
			_, err := api.ApplyStatus(ctx, name, u, metav1.ApplyOptions{FieldManager: "attack", Force: true, DryRun: dry})
			return err
		},
	}
	if !getAllowed {
		calls["get"] = func() error {
			_, err := api.Get(ctx, name, metav1.GetOptions{})
			return err
		}
	}
	return calls
}

// committedPeering creates, as the administrator, a valid AuthorizedConsumer
// consumerID (a request signed by its cluster key) and TrustedProvider
// providerID on the provider, and deletes them when the test ends.
func committedPeering(t *testing.T, ctx context.Context, consumerID, providerID string) (*peeringv1alpha1.AuthorizedConsumer, *peeringv1alpha1.TrustedProvider) {
	t.Helper()
	generate := func() *keys.PrivateKey {
		k, err := keys.Generate(nil, keys.Ed25519)
		require.NoError(t, err)
		return k
	}
	publicPEM := func(k *keys.PrivateKey) string {
		b, err := keys.MarshalPublicKey(k.Public())
		require.NoError(t, err)
		return string(b)
	}
	clusterKey := generate()
	req, err := enrol.NewRequest(nil, providerID, consumerID, clusterKey, generate())
	require.NoError(t, err)
	pin, err := enrol.CAPin(providerEnv.cluster.CA())
	require.NoError(t, err)
	ac := &peeringv1alpha1.AuthorizedConsumer{
		ObjectMeta: metav1.ObjectMeta{Name: consumerID},
		Spec: peeringv1alpha1.AuthorizedConsumerSpec{
			ClusterID: consumerID, PublicKeys: []string{publicPEM(clusterKey)}, Request: req.API(),
		},
	}
	tp := &peeringv1alpha1.TrustedProvider{
		ObjectMeta: metav1.ObjectMeta{Name: providerID},
		Spec: peeringv1alpha1.TrustedProviderSpec{
			ClusterID: providerID, Endpoint: "https://enrol.provider.example", CASHA256: pin, EnrolmentKeys: []string{publicPEM(generate())},
		},
	}
	for _, o := range []client.Object{ac, tp} {
		require.NoError(t, providerEnv.typed.Create(ctx, o), "%T", o)
		t.Cleanup(func() { _ = providerEnv.typed.Delete(context.Background(), o) })
	}
	// Each with a status, so that a status request has one to act on.
	for _, o := range []struct {
		resource, name string
	}{{peeringv1alpha1.AuthorizedConsumerResource, consumerID}, {peeringv1alpha1.TrustedProviderResource, providerID}} {
		api := providerEnv.dynamic.Resource(peeringv1alpha1.SchemeGroupVersion.WithResource(o.resource))
		u, err := api.Get(ctx, o.name, metav1.GetOptions{})
		require.NoError(t, err)
		require.NoError(t, unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration"))
		_, err = api.UpdateStatus(ctx, u, metav1.UpdateOptions{})
		require.NoError(t, err, "%s %s status", o.resource, o.name)
	}
	return ac, tp
}

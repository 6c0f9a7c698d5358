package peeringwriters_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
)

// TestPeeringValidation: what the CRDs' schemas refuse, whoever writes: a
// peering admin, whom the admission policy admits, sends each malformed
// object and the API server refuses it as Invalid. A TrustedProvider whose
// endpoint is not https, an object whose name is not its spec.clusterID,
// an AuthorizedConsumer with three public keys, and a change of
// spec.clusterID of either kind.
func TestPeeringValidation(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e := cluster(t)
	cleanup(t, e)
	e.bindCluster(ctx, t, "test-validation-peering-admin", "kubepact-peering-admin", group("kubepact:peering-admins"))
	admin, _ := e.as(t, "validation-alice", "kubepact:peering-admins")
	ac := func(name string) *peeringv1alpha1.AuthorizedConsumer {
		return kinds[0].new(name).(*peeringv1alpha1.AuthorizedConsumer)
	}
	tp := func(name string) *peeringv1alpha1.TrustedProvider {
		return kinds[1].new(name).(*peeringv1alpha1.TrustedProvider)
	}

	// A valid object of each kind is admitted (so the refusals below are
	// the schema's): once the API server has the policy's parameter.
	require.Eventually(t, func() bool { return admin.Create(ctx, ac("valid-consumer")) == nil }, time.Minute, 200*time.Millisecond)
	require.NoError(t, admin.Create(ctx, tp("valid-provider")))

	for name, o := range map[string]client.Object{
		"http endpoint": func() client.Object {
			p := tp("http-provider")
			p.Spec.Endpoint = "http://enrol.provider.example/"
			return p
		}(),
		"TrustedProvider named another cluster": func() client.Object {
			p := tp("named-provider")
			p.Spec.ClusterID = "another-provider"
			return p
		}(),
		"AuthorizedConsumer named another cluster": func() client.Object {
			c := ac("named-consumer")
			c.Spec.ClusterID = "another-consumer"
			return c
		}(),
		"three public keys": func() client.Object {
			c := ac("three-keys")
			c.Spec.PublicKeys = []string{"key-1", "key-2", "key-3"}
			return c
		}(),
	} {
		err := admin.Create(ctx, o)
		require.True(t, apierrors.IsInvalid(err), "%s: want Invalid, got %v", name, err)
		err = e.objects.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
		require.True(t, apierrors.IsNotFound(err), "%s: nothing created: %v", name, err)
	}

	// spec.clusterID is immutable (and the name with it).
	c := ac("")
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: "valid-consumer"}, c))
	c.Spec.ClusterID = "another-consumer"
	err := admin.Update(ctx, c)
	require.True(t, apierrors.IsInvalid(err), "AuthorizedConsumer clusterID changed: want Invalid, got %v", err)
	p := tp("")
	require.NoError(t, admin.Get(ctx, client.ObjectKey{Name: "valid-provider"}, p))
	p.Spec.ClusterID = "another-provider"
	err = admin.Update(ctx, p)
	require.True(t, apierrors.IsInvalid(err), "TrustedProvider clusterID changed: want Invalid, got %v", err)
}

package controllers_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/resourceslice"
)

// The replicator is generic: a Renew goes to the provider with its spec
// and the provider's labels, its status comes back, a provider that edits
// the spec of its copy changes nothing on the consumer (and is overwritten),
// and deleting the Renew deletes the copy.
func TestReplicatorRenews(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	peers := peerForSlices(ctx, t, nil)
	providerID, consumerID := peers.providerID, peers.consumerID

	name := identity.ControlPlaneName(providerID)
	local := &authv1beta1.Renew{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterid.TenantNamespace(providerID), Labels: resourceslice.ConsumerLabels(providerID)},
		Spec:       authv1beta1.RenewSpec{ConsumerClusterID: consumerID, IdentityType: authv1beta1.ControlPlaneIdentityType},
	}
	// The consumer's renewal reconciler may have made it first.
	if err := consumerEnv.client.Create(ctx, local); apierrors.IsAlreadyExists(err) {
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(local), local))
	} else {
		require.NoError(t, err)
	}
	remoteKey := client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: name}
	var remote authv1beta1.Renew
	eventually(t, "the Renew on the provider, answered", func() bool {
		return providerEnv.client.Get(ctx, remoteKey, &remote) == nil && remote.Status.AuthParams != nil
	})
	require.Equal(t, resourceslice.ProviderLabels(consumerID), remote.Labels)
	require.Equal(t, local.Spec, remote.Spec)

	// Whatever the provider writes into the status comes back; its Renew
	// reconciler is stopped, so that only the test writes it.
	peers.stopProvider()
	remote.Status.AuthParams = &authv1beta1.AuthParams{APIServer: "https://provider.example", SignedCRT: []byte("renewed")}
	require.NoError(t, providerEnv.client.Status().Update(ctx, &remote))
	eventually(t, "the status back on the consumer", func() bool {
		require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(local), local))
		return local.Status.AuthParams != nil && bytes.Equal(local.Status.AuthParams.SignedCRT, []byte("renewed"))
	})

	require.NoError(t, providerEnv.client.Get(ctx, remoteKey, &remote))
	remote.Spec.ConsumerClusterID = "cl-someone-else"
	require.NoError(t, providerEnv.client.Update(ctx, &remote))
	eventually(t, "the provider's edit overwritten", func() bool {
		require.NoError(t, providerEnv.client.Get(ctx, remoteKey, &remote))
		return remote.Spec.ConsumerClusterID == consumerID
	})
	require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(local), local))
	require.Equal(t, consumerID, local.Spec.ConsumerClusterID, "the local spec is the consumer's")

	// The consumer's renewal reconciler makes its permanent Renew again at
	// once, and the replicator copies that one: the copy of the deleted
	// Renew is gone when none, or another, is found.
	copied := remote.UID
	require.NoError(t, consumerEnv.client.Delete(ctx, local))
	eventually(t, "the copy deleted", func() bool {
		var now authv1beta1.Renew
		err := providerEnv.client.Get(ctx, remoteKey, &now)
		return apierrors.IsNotFound(err) || err == nil && now.UID != copied
	})
}

// A provider writing junk into a slice's status is reported with an Event
// and changes nothing: the kubeconfig Secret stays as it was.
func TestHostileSliceStatus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	peers := peerForSlices(ctx, t, nil)
	providerID, consumerID := peers.providerID, peers.consumerID

	s := newSlice(providerID, "slice-h")
	require.NoError(t, consumerEnv.client.Create(ctx, s))
	waitSliceIdentity(ctx, t, s)
	secretName := kubeconfig.SecretName(identity.ResourceSliceName(s.Name))
	before := secret(ctx, t, consumerEnv, s.Namespace, secretName)
	// The provider turns hostile: kubepact's reconciler, which would compute
	// the status anew at once, stops, and the junk below is its own.
	peers.stopProvider()

	var orig authv1beta1.ResourceSlice
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: s.Name}, &orig))
	var tn authv1beta1.Tenant
	require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: consumerID}, &tn))
	for _, junk := range []struct {
		name   string
		mutate func(p *authv1beta1.AuthParams)
	}{
		{"the ControlPlane certificate", func(p *authv1beta1.AuthParams) { p.SignedCRT = tn.Status.AuthParams.SignedCRT }},
		{"another API server", func(p *authv1beta1.AuthParams) { p.APIServer = "https://attacker.example" }},
		{"junk bytes", func(p *authv1beta1.AuthParams) { p.SignedCRT = bytes.Repeat([]byte{'A'}, 512<<10) }},
	} {
		var remote authv1beta1.ResourceSlice
		require.NoError(t, providerEnv.client.Get(ctx, client.ObjectKey{Namespace: clusterid.TenantNamespace(consumerID), Name: s.Name}, &remote))
		remote.Status.AuthParams = orig.Status.AuthParams.DeepCopy()
		junk.mutate(remote.Status.AuthParams)
		require.NoError(t, providerEnv.client.Status().Update(ctx, &remote), junk.name)
		eventually(t, "the junk on the consumer: "+junk.name, func() bool {
			require.NoError(t, consumerEnv.client.Get(ctx, client.ObjectKeyFromObject(s), s))
			return s.Status.AuthParams != nil && bytes.Equal(s.Status.AuthParams.SignedCRT, remote.Status.AuthParams.SignedCRT) &&
				s.Status.AuthParams.APIServer == remote.Status.AuthParams.APIServer
		})
		waitEvent(ctx, t, consumerEnv, s.Namespace, s.Name, corev1.EventTypeWarning, contract.ReasonSliceIdentityRejected)
		after := secret(ctx, t, consumerEnv, s.Namespace, secretName)
		require.Equal(t, before.Data, after.Data, "the kubeconfig Secret is unchanged: %s", junk.name)
	}
}

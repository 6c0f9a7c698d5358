package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/resourceslice"
)

// The resourceslice commands on the consumer, unauthenticate refusing while
// slices exist, and unauthenticate --force removing only local objects.
func TestResourceSliceCommands(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	consumerID, providerID, namespace := unique("cl-consumer-slices"), unique("cl-provider-slices"), unique("liqo-slices")
	cli(t, "", authenticateArgs("authenticate", consumerID, providerID, namespace)...).ok(t)
	onConsumer := []string{"--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", namespace, "--remote-cluster-id", providerID}
	ns := "liqo-tenant-" + providerID

	r := cli(t, "", append([]string{"create", "resourceslice", "slice-a", "--resource", "cpu=2,memory=4Gi"}, onConsumer...)...).ok(t)
	assert.Contains(t, r.stdout, "ResourceSlice "+ns+"/slice-a created")
	var sa authv1beta1.ResourceSlice
	require.NoError(t, consumerEnv.typed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slice-a"}, &sa))
	assert.Equal(t, resourceslice.ConsumerLabels(providerID), sa.Labels)
	assert.Equal(t, "2", sa.Spec.Resources.Cpu().String())

	r = cli(t, "", append([]string{"create", "resourceslice", "slice-a"}, onConsumer...)...)
	assert.Equal(t, exitError, r.code, "already exists")
	r = cli(t, "", append([]string{"create", "resourceslice", "slice-b", "--resource", "cpu"}, onConsumer...)...)
	assert.Equal(t, exitUsage, r.code)
	r = cli(t, "", "create", "resourceslice", "slice-b", "--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID)
	assert.Equal(t, exitUsage, r.code, "no provider")

	r = cli(t, "", append([]string{"get", "resourceslice"}, onConsumer...)...).ok(t)
	assert.Contains(t, r.stdout, "NAME")
	assert.Regexp(t, `slice-a\s+Pending\s+Pending\s+-\s+-`, r.stdout)
	r = cli(t, "", append([]string{"get", "resourceslice", "slice-a", "-o", "json"}, onConsumer...)...).ok(t)
	var got authv1beta1.ResourceSlice
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &got))
	assert.Equal(t, authv1beta1.ResourceSliceKind, got.Kind)
	assert.Equal(t, "2", got.Spec.Resources.Cpu().String())
	r = cli(t, "", append([]string{"get", "resourceslice", "-o", "yaml"}, onConsumer...)...).ok(t)
	var list authv1beta1.ResourceSliceList
	require.NoError(t, yaml.Unmarshal([]byte(r.stdout), &list))
	require.Len(t, list.Items, 1)
	assert.Equal(t, "slice-a", list.Items[0].Name)

	cli(t, "", append([]string{"create", "resourceslice", "slice-c"}, onConsumer...)...).ok(t)
	r = cli(t, "", append([]string{"delete", "resourceslice", "slice-c"}, onConsumer...)...).ok(t)
	assert.Contains(t, r.stdout, "ResourceSlice "+ns+"/slice-c deleted")
	err := consumerEnv.typed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slice-c"}, &authv1beta1.ResourceSlice{})
	assert.True(t, apierrors.IsNotFound(err), "deleted: %v", err)

	// unauthenticate refuses while a slice exists, and changes nothing.
	r = cli(t, "", authenticateArgs("unauthenticate", consumerID, providerID, namespace)...)
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "still in use")
	secretName := kubeconfig.SecretName(identity.ControlPlaneName(providerID))
	_, err = consumerEnv.client.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
	require.NoError(t, err)

	// --force needs the provider's ID, and contacts only the consumer.
	r = cli(t, "", "unauthenticate", "--force", "--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", namespace)
	assert.Equal(t, exitUsage, r.code)
	r = cli(t, "", "unauthenticate", "--force", "--kubeconfig", consumerEnv.kubeconfig, "--cluster-id", consumerID, "-n", namespace,
		"--remote-cluster-id", providerID).ok(t)
	assert.Contains(t, r.stderr, "NOT contacted")
	assert.Contains(t, r.stdout, "slices:     slice-a")
	err = consumerEnv.typed.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slice-a"}, &authv1beta1.ResourceSlice{})
	assert.True(t, apierrors.IsNotFound(err), "the slice is gone: %v", err)
	_, err = consumerEnv.client.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the kubeconfig Secret is gone: %v", err)
	ids, err := kube.NewIdentityStore(consumerEnv.typed).List(ctx, ns)
	require.NoError(t, err)
	assert.Empty(t, ids)
	// The provider still holds the Tenant: it was not contacted.
	_, err = kube.NewTenantStore(providerEnv.typed).Get(ctx, "liqo-tenant-"+consumerID, consumerID)
	require.NoError(t, err)

	// delete resourceslice of a slice that does not exist.
	r = cli(t, "", append([]string{"delete", "resourceslice", "slice-a"}, onConsumer...)...)
	assert.Equal(t, exitError, r.code)
	assert.Contains(t, r.stderr, "no such ResourceSlice")
}

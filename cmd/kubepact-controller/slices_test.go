package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/resourceslice"
)

// TestControllerSlices runs kubepact-controller on both clusters with the
// permissions config/ grants its ServiceAccount, and a ResourceSlice made
// by hand on the consumer becomes, through the replicator and the
// provider's reconciler, a slice Identity and kubeconfig Secret.
func TestControllerSlices(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const providerID, consumerID = "cl-ctl-slices-provider", "cl-ctl-slices-consumer"
	caFile := writeFile(t, provider.cluster.CA())
	start(t, provider, "--cluster-id="+providerID, "--roles=provider",
		"--api-server-url="+provider.cluster.Host(), "--api-server-ca-file="+caFile,
		"--leader-election-namespace=kubepact-system", "--metrics-bind-address=0", "--health-probe-bind-address=0")
	start(t, consumer, "--cluster-id="+consumerID, "--roles=consumer", "--leader-election-namespace=kubepact-system",
		"--metrics-bind-address=0", "--health-probe-bind-address=0")
	handshake(ctx, t, providerID, consumerID)

	ns := clusterid.TenantNamespace(providerID)
	s := &authv1beta1.ResourceSlice{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.ResourceSliceKind},
		ObjectMeta: metav1.ObjectMeta{Name: "slice-ctl", Namespace: ns, Labels: resourceslice.ConsumerLabels(providerID)},
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s)
	require.NoError(t, err)
	slices := consumer.dynamic.Resource(authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.ResourceSliceResource))
	_, err = slices.Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: m}, metav1.CreateOptions{})
	require.NoError(t, err)
	secretName := kubeconfig.SecretName(identity.ResourceSliceName(s.Name))
	require.Eventually(t, func() bool {
		_, err := consumer.admin.CoreV1().Secrets(ns).Get(ctx, secretName, metav1.GetOptions{})
		return err == nil
	}, time.Minute, 100*time.Millisecond, "the slice's kubeconfig Secret")
	_, err = provider.admin.RbacV1().RoleBindings(clusterid.TenantNamespace(consumerID)).Get(ctx, "liqo-binding-liqo-virtual-kubelet-remote", metav1.GetOptions{})
	require.NoError(t, err)
}

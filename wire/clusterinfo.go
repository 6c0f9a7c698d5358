package wire

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
)

// The ConfigMap kubeadm publishes for clients joining the cluster: its
// kubeconfig names the API server's URL and CA.
const (
	ClusterInfoNamespace = "kube-public"
	ClusterInfoName      = "cluster-info"
	ClusterInfoKey       = "kubeconfig"
)

// ErrNoClusterInfo reports a cluster without kubeadm's cluster-info
// ConfigMap (managed clusters, or clusters not made by kubeadm).
var ErrNoClusterInfo = errors.New("no kube-public/cluster-info")

// EndpointFromClusterInfo returns the API server's URL and CA as kubeadm
// publishes them in kube-public/cluster-info, checked as EndpointFromConfig
// checks a config. It returns an error wrapping ErrNoClusterInfo when there
// is no such ConfigMap, and kube.ErrNoServer when it names no cluster. Note that
// kind's names the endpoint inside its Docker network, which other clusters
// may not reach: a flag naming the URL wins over it.
func EndpointFromClusterInfo(ctx context.Context, client kubernetes.Interface) (provider.Endpoint, error) {
	cm, err := client.CoreV1().ConfigMaps(ClusterInfoNamespace).Get(ctx, ClusterInfoName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return provider.Endpoint{}, fmt.Errorf("%w: %w", ErrNoClusterInfo, err)
	}
	if err != nil {
		return provider.Endpoint{}, fmt.Errorf("reading ConfigMap %s/%s: %w", ClusterInfoNamespace, ClusterInfoName, err)
	}
	cfg, err := clientcmd.Load([]byte(cm.Data[ClusterInfoKey]))
	if err != nil {
		return provider.Endpoint{}, fmt.Errorf("ConfigMap %s/%s: its %s is not a kubeconfig: %w", ClusterInfoNamespace, ClusterInfoName, ClusterInfoKey, err)
	}
	for _, c := range cfg.Clusters {
		// kubeadm writes one cluster, named "".
		return EndpointFromConfig(&rest.Config{Host: c.Server, TLSClientConfig: rest.TLSClientConfig{CAData: c.CertificateAuthorityData}})
	}
	return provider.Endpoint{}, fmt.Errorf("ConfigMap %s/%s: %w: its kubeconfig names no cluster", ClusterInfoNamespace, ClusterInfoName, kube.ErrNoServer)
}

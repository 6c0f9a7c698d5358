package saidentity_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/kubepact/kubepact/internal/testcluster"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/saidentity"
)

// env is one real cluster with admin clients.
type env struct {
	cluster *testcluster.Cluster
	client  kubernetes.Interface
	dynamic dynamic.Interface
}

var provider, consumer *env

// peeringRequests is Liqo v0.2's PeeringRequest resource, which the tests
// install on the provider in a minimal form.
var peeringRequests = schema.GroupVersionResource{Group: saidentity.PeeringRequestGroup, Version: "v1alpha1", Resource: "peeringrequests"}

// TestMain starts two control planes, the provider and the consumer, shared
// by every test of the package.
func TestMain(m *testing.M) {
	os.Exit(testcluster.Main(m, 30*time.Minute, testcluster.Options{}, newEnv, &provider, &consumer))
}

// newEnv returns clients of c, which serves the PeeringRequest CRD.
func newEnv(ctx context.Context, c *testcluster.Cluster) (*env, error) {
	cfg := c.AdminConfig()
	cfg.QPS, cfg.Burst = 500, 1000
	e := &env{cluster: c}
	var err error
	if e.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, err
	}
	if e.dynamic, err = dynamic.NewForConfig(cfg); err != nil {
		return nil, err
	}
	return e, installPeeringRequestCRD(ctx, e.dynamic)
}

// installPeeringRequestCRD installs a minimal cluster-scoped
// discovery.liqo.io PeeringRequest CRD and waits until it is served.
func installPeeringRequestCRD(ctx context.Context, d dynamic.Interface) error {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "peeringrequests.discovery.liqo.io"},
		"spec": map[string]any{
			"group": saidentity.PeeringRequestGroup,
			"scope": "Cluster",
			"names": map[string]any{"plural": "peeringrequests", "singular": "peeringrequest", "kind": "PeeringRequest", "listKind": "PeeringRequestList"},
			"versions": []any{map[string]any{
				"name": "v1alpha1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	crds := d.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for {
		_, err := d.Resource(peeringRequests).List(ctx, metav1.ListOptions{Limit: 1})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the PeeringRequest CRD: %w (last: %w)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// uniqueID returns a cluster ID unique per test name and n.
func uniqueID(testName string, n int) string {
	sum := sha256.Sum256([]byte(testName))
	return fmt.Sprintf("c%x-%d", sum[:5], n)
}

// realProvider returns the provider ports over the real provider cluster.
func realProvider() saidentity.ProviderPorts {
	return saidentity.ProviderPorts{
		Namespaces:      kube.NewNamespaces(provider.client),
		ServiceAccounts: kube.NewServiceAccounts(provider.client),
		RBAC:            kube.NewServiceAccountRBAC(provider.client),
		Admission:       kube.NewAdmission(provider.client),
	}
}

// endpoint is how consumers reach the real provider.
func endpoint() saidentity.Endpoint {
	return saidentity.Endpoint{Server: provider.cluster.Host(), CA: provider.cluster.CA()}
}

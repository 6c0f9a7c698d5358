package controllers

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/peer"
)

// podSecurityEnforceLabel is the label that sets a namespace's Pod Security
// Standard.
const podSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"

// checkPodSecurity accepts the levels of the Pod Security Standards, or
// none.
func checkPodSecurity(level string) error {
	switch level {
	case "", "privileged", "baseline", "restricted":
		return nil
	}
	return fmt.Errorf("%w: TenantPodSecurity %q is not privileged, baseline or restricted", peer.ErrInvalidConfig, level)
}

// tenantNamespaces is the Namespaces port of the reconcilers: level, when
// set, labels the tenant namespaces they create, and only those.
func tenantNamespaces(cs kubernetes.Interface, mgr manager.Manager, level string) (*kube.Namespaces, error) {
	// A controller answers objects in tenant namespaces that exist, and
	// finds them, labelled, in the manager's cache of namespace metadata,
	// registered here so that it is synced when the manager starts, not at
	// the first nonce.
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}}
	if _, err := mgr.GetCache().GetInformer(context.Background(), meta); err != nil {
		return nil, fmt.Errorf("controllers: namespace informer: %w", err)
	}
	ns := kube.NewNamespaces(cs).WithReadFirst().WithReader(mgr.GetClient())
	if level == "" {
		return ns, nil
	}
	return ns.WithCreateLabels(map[string]string{podSecurityEnforceLabel: level}), nil
}

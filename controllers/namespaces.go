package controllers

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/kube"
)

// PodSecurityEnforceLabel is the label that sets a namespace's Pod Security
// Standard.
const PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"

// checkPodSecurity accepts the levels of the Pod Security Standards, or
// none.
func checkPodSecurity(level string) error {
	switch level {
	case "", "privileged", "baseline", "restricted":
		return nil
	}
	return fmt.Errorf("%w: TenantPodSecurity %q is not privileged, baseline or restricted", kubepact.ErrInvalidConfig, level)
}

// tenantNamespaces is the Namespaces port of the reconcilers: level, when
// set, labels the tenant namespaces they create, and only those.
func tenantNamespaces(cs kubernetes.Interface, cache client.Reader, level string) *kube.Namespaces {
	// A controller answers objects in tenant namespaces that exist, and
	// finds them, labelled, in the manager's cache.
	ns := kube.NewNamespaces(cs).WithReadFirst().WithReader(cache)
	if level == "" {
		return ns
	}
	return ns.WithCreateLabels(map[string]string{PodSecurityEnforceLabel: level})
}

package controllers

import (
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
)

// NewScheme returns a new scheme holding client-go's built-in types and
// the authentication.liqo.io/v1beta1 types, for manager.Options.Scheme. It
// leaves client-go's global scheme alone.
func NewScheme() (*runtime.Scheme, error) { return kube.NewScheme() }

// checkScheme fails when mgr's scheme does not know Tenants and Identities.
func checkScheme(mgr manager.Manager) error {
	for _, kind := range []string{authv1beta1.TenantKind, authv1beta1.IdentityKind} {
		if !mgr.GetScheme().Recognizes(authv1beta1.SchemeGroupVersion.WithKind(kind)) {
			return fmt.Errorf("controllers: the manager's scheme lacks %s %s: build it with NewScheme", authv1beta1.SchemeGroupVersion, kind)
		}
	}
	return nil
}

// CacheOptions returns manager cache options that keep only what the
// reconcilers read, so that the cache grows with the peers, not with the
// cluster, as far as the decisions allow: the Secrets labelled
// liqo.io/remote-cluster-id (nonce, signed-nonce and certificate-record
// Secrets, among others) instead of every Secret, the ConfigMaps named as
// revocation records (kube.RevocationName), every RoleBinding and
// ClusterRoleBinding, and the CertificateSigningRequests of peers
// (labelled kube.CSRLabel, as both kubepact and Liqo label theirs; SPEC
// §3) instead of every CSR of the cluster. No object is kept with its
// managedFields, which no reconciler reads, and no binding with its
// annotations. Optional: the reconcilers work with any cache that holds
// those objects.
//
// A record whose absence lets the Tenant reconciler leave a Tenant as it
// is (provider.Provider.Unchanged) is selected by its name, or not at
// all, never by a label: a revocation record written without
// kube.RevocationLabel, or a binding that grants a consumer's user or
// group a privilege, whoever made it and however it is labelled, must be
// seen. The bindings are all kept for that (indexed by the users and
// groups they name, granteeIndex), at the cost of one copy of each binding
// of the cluster, without managedFields and annotations: its name,
// labels, owner references, roleRef and subjects. A label selects only
// records whose absence sends a Tenant to Accept, which reads the API
// server: the nonce and certificate-record Secrets, and the CSRs.
func CacheOptions() cache.Options {
	req, err := labels.NewRequirement(clusterid.Label, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant, valid label key
	}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}:                            {Label: labels.NewSelector().Add(*req)},
			&corev1.ConfigMap{}:                         {Field: fields.OneTermEqualSelector("metadata.name", kube.RevocationName)},
			&rbacv1.RoleBinding{}:                       {Transform: stripBinding},
			&rbacv1.ClusterRoleBinding{}:                {Transform: stripBinding},
			&certificatesv1.CertificateSigningRequest{}: {Label: labels.SelectorFromSet(labels.Set{kube.CSRLabel: "true"})},
		},
	}
}

// stripBinding drops what no reconciler reads of a cached binding: its
// managedFields and annotations (kubectl's last-applied-configuration
// among them).
func stripBinding(in any) (any, error) {
	if o, err := meta.Accessor(in); err == nil {
		if o.GetManagedFields() != nil {
			o.SetManagedFields(nil)
		}
		if o.GetAnnotations() != nil {
			o.SetAnnotations(nil)
		}
	}
	return in, nil
}

package resourceslice

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// DefaultStorageClassAnnotation marks a cluster's default StorageClass.
const DefaultStorageClassAnnotation = "storageclass.kubernetes.io/is-default-class"

// ErrRefused reports resources a Policy refuses to grant a slice.
var ErrRefused = errors.New("resource slice resources refused")

// Policy caps or refuses the resources a provider grants a slice it
// accepts.
//
// Limits returns the most slice s may be granted of each resource. A
// resource the answer leaves out is granted as the slice asks (its spec,
// else the Offer's default quantity); a nil answer caps nothing. A limit
// never raises a grant (Cap). An error wrapping ErrRefused refuses the
// slice: its Resources condition becomes Denied, with the error's text as
// its message, so the text must name no secret. Any other error is a
// failure to decide (I/O): nothing is decided and the caller retries. s
// must not be modified. Implementations are safe for concurrent use.
type Policy interface {
	Limits(ctx context.Context, s *authv1beta1.ResourceSlice) (corev1.ResourceList, error)
}

// StorageClassLister lists the cluster's StorageClasses.
//
// List returns every StorageClass of the cluster, in any order; a cluster
// without any gives none and no error. An error is a failure to read
// them. Implementations are safe for concurrent use.
type StorageClassLister interface {
	List(ctx context.Context) ([]storagev1.StorageClass, error)
}

// Offer is what a provider offers every slice of the default class whose
// resources it accepts, as Liqo's provider does from its
// liqo-controller-manager flags (--default-node-resources,
// --real-storage-class-name, --ingress-classes, --load-balancer-classes,
// --cluster-labels). The zero value offers no default quantity, no class
// and no node label: a slice is granted exactly its spec. DefaultOffer is
// Liqo's Helm chart's configuration.
type Offer struct {
	// DefaultResources are the quantities granted for the resources a
	// slice's spec leaves out.
	DefaultResources corev1.ResourceList
	// LocalStorageClass is the StorageClass offered as the default; empty
	// means the one annotated storageclass.kubernetes.io/is-default-class:
	// "true" (StorageClasses).
	LocalStorageClass string
	// IngressClasses and LoadBalancerClasses are offered as given (name
	// and default flag each): Kubernetes has no object listing
	// load-balancer classes, and Liqo lists neither.
	IngressClasses      []authv1beta1.IngressType
	LoadBalancerClasses []authv1beta1.LoadBalancerType
	// NodeLabels are the labels of the virtual node a consumer makes for
	// the slice.
	NodeLabels map[string]string
}

// DefaultResources returns the quantities Liqo's Helm chart gives every
// virtual node (offloading.defaultNodeResources in
// deployments/liqo/values.yaml of Liqo v1.2, passed to the
// liqo-controller-manager as --default-node-resources): 4 CPUs, 8Gi of
// memory, 110 pods and 20Gi of ephemeral storage.
func DefaultResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
		corev1.ResourceEphemeralStorage: resource.MustParse("20Gi"),
	}
}

// DefaultOffer returns Liqo's Helm chart's offer: DefaultResources, the
// cluster's annotated default StorageClass, and no ingress class,
// load-balancer class or node label.
func DefaultOffer() *Offer {
	return &Offer{DefaultResources: DefaultResources()}
}

// Resources returns what the provider grants a slice of the default class
// that asks for spec: spec's quantities, and the default quantity of each
// resource in defaults that spec leaves out, as Liqo does.
func Resources(spec, defaults corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(spec)+len(defaults))
	for name, q := range defaults {
		out[name] = q.DeepCopy()
	}
	for name, q := range spec {
		out[name] = q.DeepCopy()
	}
	return out
}

// Cap returns granted with each resource that limits names lowered to its
// limit when above it. Resources limits does not name stay; limits never
// raise a grant nor add a resource.
func Cap(granted, limits corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(granted))
	for name, q := range granted {
		if limit, ok := limits[name]; ok && q.Cmp(limit) > 0 {
			q = limit
		}
		out[name] = q.DeepCopy()
	}
	return out
}

// StorageClasses returns the storage classes offered from the cluster's
// classes, sorted by name. The default is the class named local, when not
// empty; otherwise every class annotated
// storageclass.kubernetes.io/is-default-class: "true" (Kubernetes allows
// more than one, and Liqo marks each). None is the default when local
// names no class of the cluster.
func StorageClasses(classes []storagev1.StorageClass, local string) []authv1beta1.StorageType {
	out := make([]authv1beta1.StorageType, 0, len(classes))
	for _, c := range classes {
		def := c.Name == local
		if local == "" {
			def = c.Annotations[DefaultStorageClassAnnotation] == "true"
		}
		out = append(out, authv1beta1.StorageType{StorageClassName: c.Name, Default: def})
	}
	slices.SortFunc(out, func(a, b authv1beta1.StorageType) int {
		return strings.Compare(a.StorageClassName, b.StorageClassName)
	})
	return out
}

// Grant fills the offer fields of status, the status of a slice whose
// resources are Accepted: resources, the storage classes (from
// StorageClasses), and the ingress classes, load-balancer classes and node
// labels of offer (nil is the zero Offer). Nothing is shared with the
// arguments. A nil or empty list or map is left out of the status.
func Grant(status *authv1beta1.ResourceSliceStatus, resources corev1.ResourceList, storage []authv1beta1.StorageType, offer *Offer) {
	if offer == nil {
		offer = &Offer{}
	}
	Withdraw(status)
	if len(resources) > 0 {
		status.Resources = resources.DeepCopy()
	}
	if len(storage) > 0 {
		status.StorageClasses = slices.Clone(storage)
	}
	if len(offer.IngressClasses) > 0 {
		status.IngressClasses = slices.Clone(offer.IngressClasses)
	}
	if len(offer.LoadBalancerClasses) > 0 {
		status.LoadBalancerClasses = slices.Clone(offer.LoadBalancerClasses)
	}
	if len(offer.NodeLabels) > 0 {
		status.NodeLabels = maps.Clone(offer.NodeLabels)
	}
}

// Withdraw clears the offer fields of status (resources, classes, node
// labels and node selector): a slice whose resources are Denied is
// granted nothing. Liqo's provider leaves what an earlier acceptance
// wrote; kubepact does not, so a consumer never builds capacity from a
// denied slice.
func Withdraw(status *authv1beta1.ResourceSliceStatus) {
	status.Resources = nil
	status.StorageClasses = nil
	status.IngressClasses = nil
	status.LoadBalancerClasses = nil
	status.NodeLabels = nil
	status.NodeSelector = nil
}

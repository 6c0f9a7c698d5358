package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of every type in this package.
const GroupName = "authentication.liqo.io"

// SchemeGroupVersion is the group and version of every type in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1beta1"}

// Kinds and resources, as they appear on the wire.
const (
	TenantKind        = "Tenant"
	IdentityKind      = "Identity"
	ResourceSliceKind = "ResourceSlice"
	RenewKind         = "Renew"

	TenantResource        = "tenants"
	IdentityResource      = "identities"
	ResourceSliceResource = "resourceslices"
	RenewResource         = "renews"
)

var (
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers the types of this package in a caller-owned
	// scheme. It never modifies client-go's global scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&Tenant{}, &TenantList{},
		&Identity{}, &IdentityList{},
		&ResourceSlice{}, &ResourceSliceList{},
		&Renew{}, &RenewList{},
	)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// Resource returns the group-qualified resource for an unqualified one.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

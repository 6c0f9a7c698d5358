package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the API group of every type in this package.
const GroupName = "peering.kubepact.io"

// SchemeGroupVersion is the group and version of every type in this package.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1alpha1"}

// Kinds and resources, as they appear on the wire.
const (
	AuthorizedConsumerKind = "AuthorizedConsumer"
	TrustedProviderKind    = "TrustedProvider"

	AuthorizedConsumerResource = "authorizedconsumers"
	TrustedProviderResource    = "trustedproviders"
)

var (
	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme registers the types of this package in a caller-owned
	// scheme. It never modifies client-go's global scheme.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion,
		&AuthorizedConsumer{}, &AuthorizedConsumerList{},
		&TrustedProvider{}, &TrustedProviderList{},
	)
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}

// Resource returns the group-qualified resource for an unqualified one.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}

package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AuthParams carries what a consumer needs to reach the provider's API server:
// the server's CA, the signed client certificate and the server URL.
type AuthParams struct {
	// CA is the PEM certificate bundle of the provider's API server.
	// +optional
	CA []byte `json:"ca,omitempty"`
	// SignedCRT is the PEM client certificate issued for the consumer.
	// +optional
	SignedCRT []byte `json:"signedCRT,omitempty"`
	// APIServer is the URL of the provider's API server.
	// +optional
	APIServer string `json:"apiServer,omitempty"`
	// ProxyURL is the URL of a proxy in front of the API server, if any.
	// +optional
	ProxyURL *string `json:"proxyURL,omitempty"`
	// AwsConfig holds IAM credentials when the provider is an EKS cluster.
	// +optional
	AwsConfig *AwsConfig `json:"awsConfig,omitempty"`
}

// AwsConfig holds the IAM credentials of an identity on an EKS provider.
type AwsConfig struct {
	AwsUserArn         string `json:"awsUserArn"`
	AwsAccessKeyID     string `json:"awsAccessKeyID"`
	AwsSecretAccessKey string `json:"awsSecretAccessKey"`
	AwsRegion          string `json:"awsRegion"`
	AwsClusterName     string `json:"awsClusterName"`
}

// AuthzPolicy is how a provider authorizes a consumer's ResourceSlices.
// +kubebuilder:validation:Enum=KeysExchange;TolerateNoHandshake
type AuthzPolicy string

const (
	// KeysExchange requires the nonce handshake before anything is granted.
	KeysExchange AuthzPolicy = "KeysExchange"
	// TolerateNoHandshake grants ResourceSlices without a handshake.
	TolerateNoHandshake AuthzPolicy = "TolerateNoHandshake"
)

// TenantCondition is the administrative state of a tenant.
// +kubebuilder:validation:Enum=Active;Cordoned;Drained
type TenantCondition string

const (
	TenantConditionActive   TenantCondition = "Active"
	TenantConditionCordoned TenantCondition = "Cordoned"
	TenantConditionDrained  TenantCondition = "Drained"
)

// TenantSpec is what a consumer sends to a provider to be authenticated.
type TenantSpec struct {
	// ClusterID is the consumer's cluster ID. It cannot change.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="ClusterID is immutable"
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// AuthzPolicy selects how ResourceSlices are authorized.
	// +kubebuilder:default=KeysExchange
	// +optional
	AuthzPolicy AuthzPolicy `json:"authzPolicy,omitempty"`
	// PublicKey is the consumer's public key: PEM "PUBLIC KEY" (PKIX), or
	// the raw 32 bytes of an Ed25519 key as older consumers send it.
	// +optional
	PublicKey []byte `json:"publicKey,omitempty"`
	// CSR is the PEM certificate signing request of the consumer.
	// +optional
	CSR []byte `json:"csr,omitempty"`
	// Signature is the consumer's signature over the provider's nonce.
	// +optional
	Signature []byte `json:"signature,omitempty"`
	// ProxyURL is the proxy the consumer uses to reach the provider.
	// +optional
	ProxyURL *string `json:"proxyURL,omitempty"`
	// TenantCondition is the administrative state of the tenant.
	// +kubebuilder:default=Active
	// +optional
	TenantCondition TenantCondition `json:"tenantCondition,omitempty"`
}

// TenantStatus is filled by the provider once the Tenant is accepted.
type TenantStatus struct {
	// AuthParams are the credentials issued to the consumer.
	// +optional
	AuthParams *AuthParams `json:"authParams,omitempty"`
	// TenantNamespace is the consumer's namespace on the provider.
	// +optional
	TenantNamespace string `json:"tenantNamespace,omitempty"`
}

// Tenant is a consumer's request to be authenticated by a provider. It lives
// in the provider's tenant namespace for that consumer.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=liqo,shortName=tn
// +kubebuilder:printcolumn:name="Condition",type=string,JSONPath=`.spec.tenantCondition`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Tenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TenantSpec   `json:"spec,omitempty"`
	Status TenantStatus `json:"status,omitempty"`
}

// TenantList is a list of Tenants.
//
// +kubebuilder:object:root=true
type TenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Tenant `json:"items"`
}

// IdentityType tells what an Identity is used for. An Identity's type is
// one of the two below; a Renew's is not enumerated, as in Liqo's schema,
// and the provider refuses any other (renewal.ErrUnsupported).
type IdentityType string

const (
	// ControlPlaneIdentityType is the consumer's identity for the provider's
	// control plane: one per provider.
	ControlPlaneIdentityType IdentityType = "ControlPlane"
	// ResourceSliceIdentityType is the identity of one ResourceSlice.
	ResourceSliceIdentityType IdentityType = "ResourceSlice"
)

// IdentitySpec is what the consumer needs to act on the provider.
type IdentitySpec struct {
	// ClusterID is the provider's cluster ID.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ClusterID string `json:"clusterID,omitempty"`
	// Type is the kind of identity.
	// +kubebuilder:validation:Enum=ControlPlane;ResourceSlice
	// +optional
	Type IdentityType `json:"type,omitempty"`
	// AuthParams are the credentials issued by the provider.
	// +optional
	AuthParams AuthParams `json:"authParams,omitempty"`
	// Namespace is the consumer's tenant namespace on the provider, used as
	// the default namespace of the kubeconfig.
	// +optional
	Namespace *string `json:"namespace,omitempty"`
}

// IdentityStatus points at what the consumer made from the Identity.
type IdentityStatus struct {
	// KubeconfigSecretRef names the Secret holding the kubeconfig.
	// +optional
	KubeconfigSecretRef *corev1.LocalObjectReference `json:"kubeconfigSecretRef,omitempty"`
}

// Identity is the consumer-side record of credentials issued by a provider.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=liqo,shortName=id
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.type`
// +kubebuilder:printcolumn:name="KubeconfigSecret",type=string,JSONPath=`.status.kubeconfigSecretRef.name`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Identity struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   IdentitySpec   `json:"spec,omitempty"`
	Status IdentityStatus `json:"status,omitempty"`
}

// IdentityList is a list of Identities.
//
// +kubebuilder:object:root=true
type IdentityList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Identity `json:"items"`
}

// ResourceSliceClass is the class of resources a slice asks for.
type ResourceSliceClass string

// DefaultResourceSliceClass is the class used when none is given.
const DefaultResourceSliceClass ResourceSliceClass = "default"

// ResourceSliceSpec is a consumer's request for resources on a provider.
type ResourceSliceSpec struct {
	// ConsumerClusterID is the cluster asking for the resources.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ConsumerClusterID *string `json:"consumerClusterID,omitempty"`
	// ProviderClusterID is the cluster asked for the resources.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ProviderClusterID *string `json:"providerClusterID,omitempty"`
	// Resources are the quantities asked for.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// Class is the class of the slice.
	// +optional
	Class ResourceSliceClass `json:"class,omitempty"`
	// CSR is the PEM certificate signing request for the slice's identity.
	// +optional
	CSR []byte `json:"csr,omitempty"`
}

// ResourceSliceConditionType names a ResourceSlice condition.
// +kubebuilder:validation:Enum=Authentication;Resources
type ResourceSliceConditionType string

const (
	ResourceSliceConditionTypeAuthentication ResourceSliceConditionType = "Authentication"
	ResourceSliceConditionTypeResources      ResourceSliceConditionType = "Resources"
)

// ResourceSliceConditionStatus is the outcome recorded in a condition.
// +kubebuilder:validation:Enum=Accepted;Denied
type ResourceSliceConditionStatus string

const (
	ResourceSliceConditionAccepted ResourceSliceConditionStatus = "Accepted"
	ResourceSliceConditionDenied   ResourceSliceConditionStatus = "Denied"
)

// ResourceSliceCondition is one condition of a ResourceSlice.
type ResourceSliceCondition struct {
	Type   ResourceSliceConditionType   `json:"type"`
	Status ResourceSliceConditionStatus `json:"status"`
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// ResourceSliceStatus is the provider's answer to a ResourceSlice.
type ResourceSliceStatus struct {
	// +optional
	Conditions []ResourceSliceCondition `json:"conditions,omitempty"`
	// AuthParams are the credentials issued for the slice.
	// +optional
	AuthParams *AuthParams `json:"authParams,omitempty"`
	// Resources are the quantities granted.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
	// StorageClasses are the storage classes the provider offers.
	// +optional
	StorageClasses []StorageType `json:"storageClasses,omitempty"`
	// IngressClasses are the ingress classes the provider offers.
	// +optional
	IngressClasses []IngressType `json:"ingressClasses,omitempty"`
	// LoadBalancerClasses are the load balancer classes the provider offers.
	// +optional
	LoadBalancerClasses []LoadBalancerType `json:"loadBalancerClasses,omitempty"`
	// NodeLabels are the labels of the virtual node made for the slice.
	// +optional
	NodeLabels map[string]string `json:"nodeLabels,omitempty"`
	// NodeSelector selects the provider's nodes that back the slice.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// StorageType is a storage class offered by a provider.
type StorageType struct {
	StorageClassName string `json:"storageClassName"`
	// Default tells whether the class is the provider's default.
	// +optional
	Default bool `json:"default,omitempty"`
}

// IngressType is an ingress class offered by a provider.
type IngressType struct {
	IngressClassName string `json:"ingressClassName"`
	// Default tells whether the class is the provider's default.
	// +optional
	Default bool `json:"default,omitempty"`
}

// LoadBalancerType is a load balancer class offered by a provider.
type LoadBalancerType struct {
	LoadBalancerClassName string `json:"loadBalancerClassName"`
	// Default tells whether the class is the provider's default.
	// +optional
	Default bool `json:"default,omitempty"`
}

// ResourceSlice asks a provider for a share of its resources and for an
// identity to use them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=liqo,shortName=rslice
// +kubebuilder:printcolumn:name="Authentication",type=string,JSONPath=`.status.conditions[?(@.type=="Authentication")].status`
// +kubebuilder:printcolumn:name="Resources",type=string,JSONPath=`.status.conditions[?(@.type=="Resources")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ResourceSlice struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ResourceSliceSpec   `json:"spec,omitempty"`
	Status ResourceSliceStatus `json:"status,omitempty"`
}

// ResourceSliceList is a list of ResourceSlices.
//
// +kubebuilder:object:root=true
type ResourceSliceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ResourceSlice `json:"items"`
}

// RenewSpec asks a provider to re-sign a consumer's certificate.
type RenewSpec struct {
	// ConsumerClusterID is the cluster asking for the renewal.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ConsumerClusterID string `json:"consumerClusterID,omitempty"`
	// PublicKey is the consumer's public key.
	// +optional
	PublicKey []byte `json:"publicKey,omitempty"`
	// CSR is the PEM certificate signing request to sign again.
	// +optional
	CSR []byte `json:"csr,omitempty"`
	// IdentityType is the type of the Identity being renewed.
	// +optional
	IdentityType IdentityType `json:"identityType,omitempty"`
	// ResourceSliceRef names the ResourceSlice whose identity is renewed.
	// +optional
	ResourceSliceRef *corev1.LocalObjectReference `json:"resourceSliceRef,omitempty"`
}

// RenewStatus carries the renewed credentials.
type RenewStatus struct {
	// AuthParams are the renewed credentials.
	// +optional
	AuthParams *AuthParams `json:"authParams,omitempty"`
}

// Renew is a consumer's request to renew the certificate of an Identity.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=liqo
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Renew struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RenewSpec   `json:"spec,omitempty"`
	Status RenewStatus `json:"status,omitempty"`
}

// RenewList is a list of Renews.
//
// +kubebuilder:object:root=true
type RenewList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Renew `json:"items"`
}

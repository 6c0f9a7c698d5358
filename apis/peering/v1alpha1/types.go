package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The kstatus condition types of both kinds. Ready is True once the
// peering is in force; Reconciling is True while the controller works
// towards it (waiting for the other side included); Stalled is True when
// it cannot get there until the object changes. kubectl wait
// --for=condition=Ready and the GitOps tools' health checks read them.
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Finalizer is the finalizer kubepact puts on both kinds, so that deleting
// one (a prune included) goes through the controller: it forgets the
// peering on purpose, never by a missed event.
const Finalizer = "peering.kubepact.io/finalizer"

// EnrolmentRequest is a consumer's request for a ControlPlane identity on
// one provider: public, made to be committed to Git. The consumer's
// cluster key signs a domain-separated transcript of the provider ID, the
// consumer ID and the SHA-256 of the CSR (package enrol); the CSR is for a
// key of this identity only, never the cluster key.
type EnrolmentRequest struct {
	// CSR is the PEM certificate signing request of the identity.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=8192
	CSR string `json:"csr"`
	// Signature is the cluster key's signature of the request.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Signature []byte `json:"signature"`
	// HandOver, while the consumer rotates its cluster key, hands its
	// previous key over to the one that signed the request: both sign it.
	// While both keys are committed, the provider lets the new key take
	// over the identity the previous one holds.
	// +optional
	HandOver *ClusterKeyHandOver `json:"handOver,omitempty"`
}

// ClusterKeyHandOver is a consumer's statement, signed by its previous and
// its new cluster key, that the new one takes over from the previous one
// towards one provider (package enrol: the context "kubepact cluster key
// hand-over", the provider and consumer IDs, both keys and the identity
// key the previous one holds). It counts while the AuthorizedConsumer
// lists both cluster keys.
type ClusterKeyHandOver struct {
	// From is the previous cluster key, PKIX PEM.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	From string `json:"from"`
	// Held is the key of the identity From holds on this provider, PKIX
	// PEM; empty when it holds none.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Held string `json:"held,omitempty"`
	// FromSignature is the previous key's signature, ToSignature the new
	// key's (the key that signed the request).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	FromSignature []byte `json:"fromSignature"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	ToSignature []byte `json:"toSignature"`
}

// AuthorizedConsumerSpec says which consumer may peer with this provider,
// with which keys.
type AuthorizedConsumerSpec struct {
	// ClusterID is the consumer's cluster ID. It is the object's name.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	ClusterID string `json:"clusterID"`
	// PublicKeys are the consumer's cluster keys, PKIX PEM as
	// `kubepact get public-key` prints them: one, or two while the
	// consumer rotates its key. Only these keys can get an identity for
	// ClusterID here, whatever the flow (nonce handshake, liqoctl, token
	// server).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MaxLength=1024
	// +listType=set
	PublicKeys []string `json:"publicKeys"`
	// Request is the consumer's enrolment request, as its TrustedProvider's
	// status shows it, signed by one of PublicKeys.
	Request EnrolmentRequest `json:"request"`
	// Policy bounds what the consumer gets, beside the provider's own
	// bounds: the tighter of the two holds.
	// +optional
	Policy *ConsumerPolicy `json:"policy,omitempty"`
	// Revoked revokes the consumer: its grants go, its certificates are
	// recorded as revoked until they expire, and it is refused until then
	// (or until an administrator readmits it, kubepact readmit tenant).
	// Deleting the object only forgets the consumer, which may peer again.
	// +optional
	Revoked bool `json:"revoked,omitempty"`
}

// ConsumerPolicy bounds the ResourceSlices of one committed consumer. An
// unset field leaves the provider's bound (kubepact-controller
// --max-slices-per-consumer, --slice-certificates-per-hour, the
// cluster-wide slice role it binds) alone; a set one holds where it is
// tighter. No field can grant more than the provider grants.
type ConsumerPolicy struct {
	// MaxResourceSlices is how many live ResourceSlices of the consumer
	// may hold a certificate, the oldest first; 0 refuses every slice.
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxResourceSlices *int32 `json:"maxResourceSlices,omitempty"`
	// ResourceSliceCertificatesPerHour is how many certificates for new
	// slice requests of the consumer are signed in any hour.
	// +kubebuilder:validation:Minimum=0
	// +optional
	ResourceSliceCertificatesPerHour *int32 `json:"resourceSliceCertificatesPerHour,omitempty"`
	// ResourceSliceClusterWideRole, false, withholds the cluster-wide
	// slice role (liqo-virtual-kubelet-remote-clusterwide: metrics.liqo.io
	// scrape/metrics) from the consumer's ResourceSlice identities: the
	// provider binds them to no ClusterRole, and deletes the binding it
	// made before. Unset or true binds them as the provider does for every
	// consumer. It can only take the role away: which role is bound, and
	// to whom, is the provider's.
	// +optional
	ResourceSliceClusterWideRole *bool `json:"resourceSliceClusterWideRole,omitempty"`
}

// AuthorizedConsumerStatus is what the provider's controller made of its
// AuthorizedConsumer.
type AuthorizedConsumerStatus struct {
	// ObservedGeneration is the generation the conditions are about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Grant is the consumer's identity, signed by the provider's
	// enrolment key: what the enrolment endpoint serves the consumer.
	// It holds no secret.
	// +optional
	Grant *Grant `json:"grant,omitempty"`
}

// Grant is an identity a provider issued to a consumer, signed with the
// provider's enrolment key over a domain-separated encoding of every
// field (package enrol). A consumer trusts nothing in it until the
// signature verifies with an enrolment key it committed.
type Grant struct {
	// ProviderID and ConsumerID are the two clusters' IDs.
	ProviderID string `json:"providerID"`
	ConsumerID string `json:"consumerID"`
	// CSRSHA256 is the SHA-256 of the request's CSR, hex.
	CSRSHA256 string `json:"csrSHA256"`
	// Namespace is the consumer's tenant namespace on the provider.
	Namespace string `json:"namespace"`
	// APIServer is the URL of the provider's API server, CA its PEM CA
	// bundle, Certificate the consumer's PEM client certificate.
	APIServer   string `json:"apiServer"`
	CA          []byte `json:"ca"`
	Certificate []byte `json:"certificate"`
	// ProxyURL is the proxy in front of the API server, if any.
	// +optional
	ProxyURL *string `json:"proxyURL,omitempty"`
	// Signature is the enrolment key's signature.
	Signature []byte `json:"signature"`
}

// AuthorizedConsumer, on a provider, lets one consumer peer from Git.
// Deleting it forgets the consumer: its grants go, and it may peer again.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kubepact,shortName=ac
// +kubebuilder:metadata:annotations={"helm.sh/resource-policy=keep","argocd.argoproj.io/sync-options=Delete=false,Prune=false","kustomize.toolkit.fluxcd.io/prune=disabled"}
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.clusterID",message="metadata.name must be spec.clusterID"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type AuthorizedConsumer struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   AuthorizedConsumerSpec   `json:"spec"`
	Status AuthorizedConsumerStatus `json:"status,omitempty"`
}

// AuthorizedConsumerList is a list of AuthorizedConsumers.
//
// +kubebuilder:object:root=true
type AuthorizedConsumerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []AuthorizedConsumer `json:"items"`
}

// TrustedProviderSpec says which provider a consumer peers with, and how
// it knows the provider is that one.
type TrustedProviderSpec struct {
	// ClusterID is the provider's cluster ID. It is the object's name.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterID is immutable"
	ClusterID string `json:"clusterID"`
	// Endpoint is the https URL of the provider's enrolment endpoint. The
	// controller follows no redirect and refuses link-local, unspecified
	// and multicast addresses, and cloud metadata names.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.startsWith('https://')",message="endpoint must be an https URL"
	Endpoint string `json:"endpoint"`
	// CASHA256 pins the provider API server's CA, as kubeadm pins a CA:
	// "sha256:" and the hex SHA-256 of the CA certificate's
	// SubjectPublicKeyInfo. The identity's CA must hold a certificate with
	// this key.
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	CASHA256 string `json:"caSHA256"`
	// EnrolmentKeys are the provider's enrolment keys, PKIX PEM as
	// `kubepact get public-key` prints them: one, or two while the
	// provider rotates its key. A grant must be signed by one of them, and
	// the endpoint's TLS certificate issued by one of them.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=2
	// +kubebuilder:validation:items:MaxLength=1024
	// +listType=set
	EnrolmentKeys []string `json:"enrolmentKeys"`
}

// TrustedProviderStatus is what the consumer's controller made of its
// TrustedProvider: the request to commit on the provider, and the
// conditions.
type TrustedProviderStatus struct {
	// ObservedGeneration is the generation the conditions are about.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are Ready, Reconciling and Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ConsumerID and PublicKey are this cluster's ID and cluster key, and
	// Request its enrolment request: what the provider's
	// AuthorizedConsumer takes (`kubepact gitops authorize` prints it).
	// +optional
	ConsumerID string `json:"consumerID,omitempty"`
	// +optional
	PublicKey string `json:"publicKey,omitempty"`
	// NextPublicKey is this cluster's next cluster key while it rotates
	// (kubepact-controller --cluster-key-rotation=prepare): the provider
	// commits it beside PublicKey, and Request is signed by it, with the
	// hand-over from PublicKey.
	// +optional
	NextPublicKey string `json:"nextPublicKey,omitempty"`
	// +optional
	Request *EnrolmentRequest `json:"request,omitempty"`
}

// TrustedProvider, on a consumer, peers with one provider from Git.
// Deleting it forgets the provider's identity on this side.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=kubepact,shortName=tp
// +kubebuilder:metadata:annotations={"helm.sh/resource-policy=keep","argocd.argoproj.io/sync-options=Delete=false,Prune=false","kustomize.toolkit.fluxcd.io/prune=disabled"}
// +kubebuilder:validation:XValidation:rule="self.metadata.name == self.spec.clusterID",message="metadata.name must be spec.clusterID"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TrustedProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   TrustedProviderSpec   `json:"spec"`
	Status TrustedProviderStatus `json:"status,omitempty"`
}

// TrustedProviderList is a list of TrustedProviders.
//
// +kubebuilder:object:root=true
type TrustedProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrustedProvider `json:"items"`
}

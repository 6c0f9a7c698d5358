package step

import "fmt"

// Name names one step. Its value is the message liqoctl prints when the step
// completes; values never change.
type Name string

// The steps of the handshake, in order, and of unauthenticate.
const (
	ProviderNamespace Name = "Tenant namespace correctly ensured on provider cluster"
	NonceGenerated    Name = "Nonce generated"
	ConsumerNamespace Name = "Tenant namespace correctly ensured on consumer cluster"
	NonceRetrieved    Name = "Nonce retrieved"
	NonceSigned       Name = "Nonce signed"
	TenantGenerated   Name = "Tenant correctly generated"
	TenantApplied     Name = "Tenant correctly applied on provider cluster"
	CertificateIssued Name = "Certificate signed"
	RBACBound         Name = "Permissions bound"
	TenantStatus      Name = "Tenant status is filled"
	IdentityGenerated Name = "Identity correctly generated"
	IdentityApplied   Name = "Identity correctly applied on consumer cluster"
	KubeconfigWritten Name = "Kubeconfig Secret written"
	IdentityStatus    Name = "Identity status is filled"
	ForgetIdentity    Name = "Identity removed from consumer cluster"
	ForgetTenant      Name = "Tenant removed from provider cluster"
)

// The steps of a renewal.
const (
	CertificateRenewed Name = "Certificate renewed"
	IdentityRenewed    Name = "Identity renewed"
)

// The steps of a tenant's lifecycle on the provider.
const (
	TenantCondition Name = "Tenant condition set"
	TenantCordoned  Name = "ResourceSlices of the tenant cordoned"
	TenantActive    Name = "ResourceSlices of the tenant uncordoned"
	TenantDrained   Name = "Tenant drained: bindings and ResourceSlices deleted"
	Revoked         Name = "Certificates of the consumer recorded as revoked"
	Readmitted      Name = "Consumer readmitted"
)

// The steps of a ResourceSlice on the provider.
const (
	SliceVerified Name = "ResourceSlice authenticated"
	SliceGranted  Name = "ResourceSlice resources granted"
	SliceBound    Name = "ResourceSlice permissions bound"
	SliceForgot   Name = "ResourceSlice removed from provider cluster"
)

// The steps of a ResourceSlice on the consumer.
const (
	SliceBuilt           Name = "ResourceSlice correctly generated"
	SliceIdentityApplied Name = "ResourceSlice identity applied"
	SliceIdentityRemoved Name = "ResourceSlice identity removed"
	ForgetForced         Name = "Local objects for the provider removed; the provider was not contacted"
)

// Done reports a completed step.
type Done struct {
	// Name is the step.
	Name Name
	// Cluster is the ID of the cluster that ran it.
	Cluster string
}

// actions holds, for every step, what doing it is called: the phrase an
// [Error] starts with. A test keeps it covering every Name declared here.
var actions = map[Name]string{
	ProviderNamespace: "ensuring the tenant namespace on the provider",
	NonceGenerated:    "generating the nonce",
	ConsumerNamespace: "ensuring the tenant namespace on the consumer",
	NonceRetrieved:    "retrieving the nonce",
	NonceSigned:       "signing the nonce",
	TenantGenerated:   "generating the Tenant",
	TenantApplied:     "applying the Tenant on the provider",
	CertificateIssued: "issuing the certificate",
	RBACBound:         "binding RBAC",
	TenantStatus:      "writing the Tenant's status",
	IdentityGenerated: "generating the Identity",
	IdentityApplied:   "applying the Identity on the consumer",
	KubeconfigWritten: "writing the kubeconfig Secret",
	IdentityStatus:    "writing the Identity's status",
	ForgetIdentity:    "removing the Identity from the consumer",
	ForgetTenant:      "removing the Tenant from the provider",

	CertificateRenewed: "renewing the certificate",
	IdentityRenewed:    "renewing the Identity",

	TenantCondition: "setting the Tenant's condition",
	TenantCordoned:  "cordoning the tenant's ResourceSlices",
	TenantActive:    "uncordoning the tenant's ResourceSlices",
	TenantDrained:   "draining the tenant",
	Revoked:         "recording the consumer's certificates as revoked",
	Readmitted:      "readmitting the consumer",

	SliceVerified: "authenticating the ResourceSlice",
	SliceGranted:  "granting the ResourceSlice's resources",
	SliceBound:    "binding the ResourceSlice's permissions",
	SliceForgot:   "removing the ResourceSlice from the provider",

	SliceBuilt:           "generating the ResourceSlice",
	SliceIdentityApplied: "applying the ResourceSlice's identity",
	SliceIdentityRemoved: "removing the ResourceSlice's identity",
	ForgetForced:         "removing the local objects for the provider",
}

// Action returns what doing the step is called, a gerund phrase such as
// "applying the Tenant on the provider", for messages that report the step
// as under way or failed. The Name itself keeps liqoctl's wording of the
// step completed. A Name this package does not declare is quoted:
// `step "..."`.
func (n Name) Action() string {
	if a, ok := actions[n]; ok {
		return a
	}
	return fmt.Sprintf("step %q", string(n))
}

// Error reports the step that failed. It wraps the cause, so errors.Is and
// errors.As see through it. Its text is the step's [Name.Action] and the
// cause: "kubepact: applying the Tenant on the provider: ...".
type Error struct {
	Step Name
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("kubepact: %s: %v", e.Step.Action(), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

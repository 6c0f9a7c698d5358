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

// Error reports the step that failed. It wraps the cause, so errors.Is and
// errors.As see through it.
type Error struct {
	Step Name
	Err  error
}

func (e *Error) Error() string {
	return fmt.Sprintf("kubepact: step %q failed: %v", string(e.Step), e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

package kubepact

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidConfig reports a Provider or Consumer built without a
	// required port or endpoint.
	ErrInvalidConfig = errors.New("invalid kubepact configuration")
	// ErrNoEndpoint reports a provider that does not know the URL
	// consumers reach its API server at, asked to accept a Tenant or a
	// ResourceSlice. It comes wrapped with ErrInvalidConfig.
	ErrNoEndpoint = errors.New("the provider's API server URL is unknown")
	// ErrInUse reports an unauthenticate refused because ResourceSlice
	// identities still depend on the ControlPlane identity.
	ErrInUse = errors.New("identity still in use")
)

// StepName names one step of the handshake. Its value is the message liqoctl
// prints when the step completes.
type StepName string

// The steps of the handshake, in order, and of unauthenticate.
const (
	StepProviderNamespace StepName = "Tenant namespace correctly ensured on provider cluster"
	StepNonceGenerated    StepName = "Nonce generated"
	StepConsumerNamespace StepName = "Tenant namespace correctly ensured on consumer cluster"
	StepNonceRetrieved    StepName = "Nonce retrieved"
	StepNonceSigned       StepName = "Nonce signed"
	StepTenantGenerated   StepName = "Tenant correctly generated"
	StepTenantApplied     StepName = "Tenant correctly applied on provider cluster"
	StepCertificateIssued StepName = "Certificate signed"
	StepRBACBound         StepName = "Permissions bound"
	StepTenantStatus      StepName = "Tenant status is filled"
	StepIdentityGenerated StepName = "Identity correctly generated"
	StepIdentityApplied   StepName = "Identity correctly applied on consumer cluster"
	StepKubeconfigWritten StepName = "Kubeconfig Secret written"
	StepIdentityStatus    StepName = "Identity status is filled"
	StepForgetIdentity    StepName = "Identity removed from consumer cluster"
	StepForgetTenant      StepName = "Tenant removed from provider cluster"
)

// Step reports a completed step.
type Step struct {
	// Name is the step.
	Name StepName
	// Cluster is the ID of the cluster that ran it.
	Cluster string
}

// StepError reports the step of the handshake that failed. It wraps the
// cause, so errors.Is and errors.As see through it.
type StepError struct {
	Step StepName
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("kubepact: step %q failed: %v", string(e.Step), e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

func stepError(s StepName, err error) error { return &StepError{Step: s, Err: err} }

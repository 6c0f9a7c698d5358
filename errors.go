package kubepact

import (
	"errors"

	"github.com/kubepact/kubepact/step"
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

func stepError(s step.Name, err error) error { return &step.Error{Step: s, Err: err} }

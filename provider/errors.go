package provider

import (
	"errors"

	"github.com/kubepact/kubepact/step"
)

// ErrNoEndpoint reports a provider that does not know the URL consumers
// reach its API server at, asked to accept a Tenant or a ResourceSlice. It
// comes wrapped with peer.ErrInvalidConfig.
var ErrNoEndpoint = errors.New("the provider's API server URL is unknown")

func stepError(s step.Name, err error) error { return &step.Error{Step: s, Err: err} }

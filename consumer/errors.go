package consumer

import (
	"errors"

	"github.com/kubepact/kubepact/step"
)

// ErrInUse reports an unauthenticate refused because ResourceSlice
// identities still depend on the ControlPlane identity.
var ErrInUse = errors.New("identity still in use")

func stepError(s step.Name, err error) error { return &step.Error{Step: s, Err: err} }

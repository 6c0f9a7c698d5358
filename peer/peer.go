// Package peer holds what the two sides of a handshake share: the error
// of a Provider or a Consumer built without what it needs.
//
// # Errors
//
// provider.New and consumer.New return a *MissingPortError naming the
// first required port they lack; errors.Is(err, ErrInvalidConfig) is true
// of it, and of every other configuration error of packages provider and
// consumer (an endpoint a provider lacks, an option that needs a port).
package peer

import (
	"errors"
	"fmt"
)

// ErrInvalidConfig reports a Provider or Consumer built without a required
// port or endpoint, or asked for what its configuration cannot do.
var ErrInvalidConfig = errors.New("invalid kubepact configuration")

// MissingPortError reports a port that provider.New or consumer.New
// requires and was not given. errors.Is(err, ErrInvalidConfig) is true of
// it.
type MissingPortError struct {
	// Role is "provider" or "consumer".
	Role string
	// Field is the port's path in provider.Ports or consumer.Ports, as a
	// composite literal spells it: "Core.Nonces", "Lifecycle.Revocations",
	// "SlicePorts.Slices", "Core.Keys" or "IdentityKeys".
	Field string
	// Why says why the port is needed when that depends on the options
	// (a Strict consumer's IdentityKeys); empty otherwise.
	Why string
}

func (e *MissingPortError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("%v: the %s port %s is required: %s", ErrInvalidConfig, e.Role, e.Field, e.Why)
	}
	return fmt.Sprintf("%v: the %s port %s is required", ErrInvalidConfig, e.Role, e.Field)
}

// Is makes errors.Is(err, ErrInvalidConfig) true.
func (e *MissingPortError) Is(target error) bool { return target == ErrInvalidConfig }

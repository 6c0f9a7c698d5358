// Package portcheck finds the first port missing from a Provider's or a
// Consumer's ports, for their constructors.
package portcheck

import "github.com/kubepact/kubepact/peer"

// Port is one field of a ports struct: its path, as a composite literal
// spells it, and whether it is set.
type Port struct {
	Field string
	Set   bool
}

// FirstMissing returns a *peer.MissingPortError naming the first of ports
// not set, or nil.
func FirstMissing(role string, ports ...Port) error {
	for _, p := range ports {
		if !p.Set {
			return &peer.MissingPortError{Role: role, Field: p.Field}
		}
	}
	return nil
}

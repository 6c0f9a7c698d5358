// Package clusterid validates cluster IDs and names the objects keyed by them.
//
// A cluster ID is a DNS-1123 label. Because the tenant namespace for a remote
// cluster is "liqo-tenant-<id>" and a namespace name is itself a label of at
// most 63 characters, a cluster ID is at most 51 characters long.
//
// # Errors
//
// Validate returns an error wrapping ErrInvalid.
package clusterid

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// Label is the label that ties an object to the remote cluster it serves.
	Label = "liqo.io/remote-cluster-id"
	// TenantNamespacePrefix prefixes the tenant namespace of a remote cluster.
	TenantNamespacePrefix = "liqo-tenant-"
	// MaxLength is the longest valid cluster ID.
	MaxLength = validation.DNS1123LabelMaxLength - len(TenantNamespacePrefix)
)

// ErrInvalid reports a cluster ID that is not a DNS-1123 label of at most
// MaxLength characters.
var ErrInvalid = errors.New("invalid cluster ID")

// Validate reports whether id is a valid cluster ID.
func Validate(id string) error {
	if len(id) > MaxLength {
		return fmt.Errorf("%w %q: longer than %d characters", ErrInvalid, id, MaxLength)
	}
	if msgs := validation.IsDNS1123Label(id); len(msgs) > 0 {
		return fmt.Errorf("%w %q: %s", ErrInvalid, id, strings.Join(msgs, "; "))
	}
	return nil
}

// TenantNamespace returns the name of the tenant namespace that holds the
// objects of remote cluster id.
func TenantNamespace(id string) string { return TenantNamespacePrefix + id }

package clusterid

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
)

// Where Liqo v1.2 records a cluster's own ID, and liqoctl reads it on both
// clusters of a peering: the ConfigMap RecordName, labelled RecordLabel =
// RecordLabelValue, in the Liqo namespace, key RecordKey. liqoctl finds it
// by the label and refuses zero or several matches.
const (
	RecordName       = "liqo-clusterid-configmap"
	RecordKey        = "CLUSTER_ID"
	RecordLabel      = "app.kubernetes.io/name"
	RecordLabelValue = "clusterid-configmap"
)

var (
	// ErrConflict reports a cluster ID asked for (a flag) that differs
	// from the one the cluster records.
	ErrConflict = errors.New("cluster ID differs from the one the cluster records")
	// ErrAmbiguous reports several cluster ID records where there must be
	// one.
	ErrAmbiguous = errors.New("several cluster ID records")
)

// ConflictError says which ID was asked for and which the cluster records.
// It wraps ErrConflict.
type ConflictError struct {
	Asked, Recorded, Where string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%v: asked for %q, but %s records %q: drop the flag, or fix the record", ErrConflict, e.Asked, e.Where, e.Recorded)
}

// Unwrap returns ErrConflict.
func (e *ConflictError) Unwrap() error { return ErrConflict }

// Generate returns a new cluster ID, "cl-" and 16 hex characters from r
// (crypto/rand.Reader when nil): a valid ID no other cluster picks by
// chance.
func Generate(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("generating a cluster ID: %w", err)
	}
	return "cl-" + hex.EncodeToString(b[:]), nil
}

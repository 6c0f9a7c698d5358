package tenant

import (
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubepact/kubepact/clusterid"
)

// ErrNotTenantNamespace reports a namespace that is not, by its name and
// labels, the tenant namespace of a remote cluster (see Namespace).
var ErrNotTenantNamespace = errors.New("not a tenant namespace")

// NamespaceError reports why a namespace is not the tenant namespace of
// RemoteID. It wraps ErrNotTenantNamespace.
type NamespaceError struct {
	// Namespace is the name of the namespace checked.
	Namespace string
	// RemoteID is the cluster ID it was checked for.
	RemoteID string
	// Label is the label that is missing or holds another value; empty
	// when the name is wrong.
	Label string
}

func (e *NamespaceError) Error() string {
	if e.Label == "" {
		return fmt.Sprintf("namespace %q: %v of cluster %q: its name must be %q",
			e.Namespace, ErrNotTenantNamespace, e.RemoteID, clusterid.TenantNamespace(e.RemoteID))
	}
	want := "true"
	if e.Label == clusterid.Label {
		want = e.RemoteID
	}
	return fmt.Sprintf("namespace %q: %v of cluster %q: it must carry the label %s=%q",
		e.Namespace, ErrNotTenantNamespace, e.RemoteID, e.Label, want)
}

func (e *NamespaceError) Unwrap() error { return ErrNotTenantNamespace }

// CheckNamespace checks that ns is the tenant namespace of remoteID as
// Namespace makes it, and as Liqo and liqoctl make it: named
// "liqo-tenant-<remoteID>" and labelled liqo.io/tenant-namespace: "true"
// and liqo.io/remote-cluster-id: <remoteID>. An invalid remoteID wraps
// clusterid.ErrInvalid; any other mismatch is a *NamespaceError.
//
// The labels are what an administrator, kubepact or Liqo set when they
// created the namespace for a known peer; a namespace anyone else made
// lacks them, unless an admission policy lets that one set them (see
// SECURITY.md, "config/signed-nonce-policy").
func CheckNamespace(ns *corev1.Namespace, remoteID string) error {
	if err := clusterid.Validate(remoteID); err != nil {
		return err
	}
	name := ""
	if ns != nil {
		name = ns.Name
	}
	if ns == nil || ns.Name != clusterid.TenantNamespace(remoteID) {
		return &NamespaceError{Namespace: name, RemoteID: remoteID}
	}
	want := Namespace(remoteID).Labels
	for _, k := range []string{NamespaceLabel, clusterid.Label} {
		if v, ok := ns.Labels[k]; !ok || v != want[k] {
			return &NamespaceError{Namespace: name, RemoteID: remoteID, Label: k}
		}
	}
	return nil
}

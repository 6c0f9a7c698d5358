package rbac

import (
	"context"
	"errors"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
)

// ErrMissingRole reports that a ClusterRole identities are bound to is not
// installed on the provider.
var ErrMissingRole = errors.New("peer ClusterRole not installed")

// MissingRoleError names the ClusterRole a handshake would bind to and
// that does not exist. It wraps ErrMissingRole.
type MissingRoleError struct {
	// Name is the ClusterRole's name.
	Name string
}

func (e *MissingRoleError) Error() string {
	return fmt.Sprintf("%v: ClusterRole %q (install the peer roles: kubectl apply -k config/roles, or kubepact install roles)", ErrMissingRole, e.Name)
}

// Unwrap returns ErrMissingRole.
func (e *MissingRoleError) Unwrap() error { return ErrMissingRole }

// PeerRoles returns the ClusterRoles consumers are bound to: the
// ControlPlane role and the two slice roles, in that order, each with the
// name, rules and app.kubernetes.io/name label of Liqo v1.2's chart.
// config/roles holds them as manifests.
func PeerRoles() []*rbacv1.ClusterRole {
	return []*rbacv1.ClusterRole{ControlPlaneClusterRole(), VirtualKubeletClusterRole(), VirtualKubeletClusterWideRole()}
}

// PeerRoleNames returns the names of PeerRoles, in the same order.
func PeerRoleNames() []string {
	return []string{ControlPlaneClusterRoleName, VirtualKubeletClusterRoleName, VirtualKubeletClusterWideRoleName}
}

// Installer writes ClusterRoles. ApplyClusterRole sets r's labels,
// annotations and rules, owning only those, as a server-side apply with one field manager
// does: rules another component set to other values (Liqo's chart) stay
// theirs, and labels others set stay. It succeeds without writing when
// nothing changes. Implementations are safe for concurrent use.
type Installer interface {
	ApplyClusterRole(ctx context.Context, r *rbacv1.ClusterRole) error
}

// Install applies PeerRoles with in. It is what an administrator runs once
// per provider (kubepact install roles) where neither Liqo nor kubepact's
// manifests installed the roles; a handshake never calls it. Its errors
// wrap in's, with the role's name.
func Install(ctx context.Context, in Installer) error {
	for _, r := range PeerRoles() {
		if err := in.ApplyClusterRole(ctx, r); err != nil {
			return fmt.Errorf("installing ClusterRole %s: %w", r.Name, err)
		}
	}
	return nil
}

// RoleReader tells whether a ClusterRole exists: an Applier, or anything
// that only reads roles (a watch of them, say).
type RoleReader interface {
	HasClusterRole(ctx context.Context, name string) (bool, error)
}

// RequireRoles checks with a that every ClusterRole of names exists, in
// order. It returns a *MissingRoleError for the first one missing, and a's
// error when it cannot tell: it never takes an unanswered question for
// "present".
func RequireRoles(ctx context.Context, a RoleReader, names ...string) error {
	for _, name := range names {
		ok, err := a.HasClusterRole(ctx, name)
		if err != nil {
			return fmt.Errorf("reading ClusterRole %s: %w", name, err)
		}
		if !ok {
			return &MissingRoleError{Name: name}
		}
	}
	return nil
}

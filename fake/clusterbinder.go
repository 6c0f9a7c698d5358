package fake

import (
	"context"

	"github.com/kubepact/kubepact/rbac"
)

var _ rbac.ClusterBinder = (*RBAC)(nil)

// DeleteClusterRoleBinding removes the ClusterRoleBinding name.
func (a *RBAC) DeleteClusterRoleBinding(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a.ClusterRoleBindings.delete("", name)
	return nil
}

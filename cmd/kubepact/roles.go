package main

import (
	"context"
	"fmt"

	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/rbac"
)

// installRolesCommand installs the ClusterRoles consumers are bound to, as
// config/roles does, on a provider where neither Liqo nor kubepact's
// manifests installed them. Handshakes only check that they exist.
func installRolesCommand(f *flags) runFunc {
	local := localFlags(f, providerRole)
	timeout := timeoutFlag(f)
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := local.connect(providerRole)
		if err != nil {
			return err
		}
		if err := rbac.Install(ctx, kube.NewRBAC(cl.client)); err != nil {
			return err
		}
		for _, name := range rbac.PeerRoleNames() {
			fmt.Fprintf(e.stdout, "ClusterRole %s installed\n", name)
		}
		return nil
	}
}

package main

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/rbac"
)

// Helm's ownership metadata: an object carrying them for a release is
// adopted by helm install and helm upgrade of that release, where one
// without them makes Helm refuse ("invalid ownership metadata").
const (
	helmManagedByLabel        = "app.kubernetes.io/managed-by"
	helmReleaseNameAnnotation = "meta.helm.sh/release-name"
	helmReleaseNSAnnotation   = "meta.helm.sh/release-namespace"
)

// installRolesCommand installs the ClusterRoles consumers are bound to, as
// config/roles does, on a provider where neither Liqo nor kubepact's
// manifests installed them. Handshakes only check that they exist. With
// --helm-release and --helm-namespace the roles carry Helm's ownership
// metadata for that release, so that a later helm install of
// charts/kubepact as that release adopts them instead of refusing.
func installRolesCommand(f *flags) runFunc {
	local := localFlags(f, providerRole)
	timeout := timeoutFlag(f)
	release := f.String("helm-release", "", "mark the roles as the Helm release NAME's (Helm's ownership label and annotations), so that helm install NAME charts/kubepact adopts them; with --helm-namespace")
	releaseNS := f.String("helm-namespace", "", "the namespace of --helm-release, as given to helm install -n")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if (*release == "") != (*releaseNS == "") {
			return usagef("--helm-release and --helm-namespace go together: the release helm install will make, and its namespace")
		}
		if *releaseNS != "" {
			if errs := validation.IsDNS1123Label(*releaseNS); len(errs) > 0 {
				return usagef("--helm-namespace %q: %s", *releaseNS, strings.Join(errs, "; "))
			}
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := local.connect(providerRole)
		if err != nil {
			return err
		}
		in := kube.NewRBAC(cl.client)
		for _, r := range rbac.PeerRoles() {
			if *release != "" {
				if r.Labels == nil {
					r.Labels = map[string]string{}
				}
				r.Labels[helmManagedByLabel] = "Helm"
				r.Annotations = map[string]string{helmReleaseNameAnnotation: *release, helmReleaseNSAnnotation: *releaseNS}
			}
			if err := in.ApplyClusterRole(ctx, r); err != nil {
				return fmt.Errorf("installing ClusterRole %s: %w", r.Name, err)
			}
		}
		for _, name := range rbac.PeerRoleNames() {
			fmt.Fprintf(e.stdout, "ClusterRole %s installed\n", name)
		}
		if *release != "" {
			fmt.Fprintf(e.stderr, "The roles are the Helm release %s's in %s: helm install %[1]s charts/kubepact -n %[2]s adopts them.\n", *release, *releaseNS)
		} else {
			fmt.Fprintln(e.stderr, "Installing charts/kubepact with Helm after this? Helm refuses to take these roles over: "+
				"install it with --set peerRoles.create=false, or run kubepact install roles --helm-release NAME --helm-namespace NS first.")
		}
		return nil
	}
}

package main

import (
	"context"
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
)

func generateIdentityCommand(f *flags) runFunc {
	pf := addProviderFlags(f, "whose Tenant to accept (required without -f)")
	file := f.String("filename", "", "take the Tenant from this file (- for standard input) instead of the provider cluster")
	f.alias("f", "filename")
	apiServerURL := apiServerURLFlag(f)
	ttl := nonceTTLFlag(f)
	policy := addPolicyFlag(f)
	installCRDs := f.Bool("install-crds", false, "install the authentication.liqo.io CRDs first")
	output := outputFlag(f)
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := pf.checkConsumerID(e, *file != ""); err != nil {
			return err
		}
		var fromFile *authv1beta1.Tenant
		if *file != "" {
			t, err := readTenant(e, *file)
			if err != nil {
				return err
			}
			if fromFile, err = cleanTenant(t); err != nil {
				return err
			}
			if pf.consumerID != "" && pf.consumerID != fromFile.Spec.ClusterID {
				return fmt.Errorf("%s is the Tenant of cluster %s, not of --remote-cluster-id %s",
					inputName(*file), fromFile.Spec.ClusterID, pf.consumerID)
			}
			e.consumerID = fromFile.Spec.ClusterID
		}
		ctx, cancel := context.WithTimeout(ctx, *pf.timeout)
		defer cancel()
		cl, p, err := pf.connect(ctx, *apiServerURL, &kubepact.ProviderOptions{NonceTTL: *ttl, Policy: policy.policy, OnStep: printSteps(e.stderr)})
		if err != nil {
			return err
		}
		if err := cl.ensureCRDs(ctx, *installCRDs, authv1beta1.TenantResource); err != nil {
			return err
		}
		t := fromFile
		if t == nil {
			if t, err = kube.NewTenantStore(cl.dynamic).Get(ctx, clusterid.TenantNamespace(pf.consumerID), pf.consumerID); err != nil {
				return err
			}
		}
		id, err := p.Accept(ctx, t)
		if err != nil {
			return err
		}
		return output.print(e.stdout, identityManifest(id))
	}
}

func applyIdentityCommand(f *flags) runFunc {
	cf := localFlags(f, consumerRole)
	timeout := timeoutFlag(f)
	installCRDs := f.Bool("install-crds", false, "install the authentication.liqo.io CRDs first")
	return func(ctx context.Context, e *env, args []string) error {
		path, err := oneArg(args, "the Identity file (or - for standard input)")
		if err != nil {
			return err
		}
		id, err := readIdentity(e, path)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := cf.connect(consumerRole)
		if err != nil {
			return err
		}
		consumerID, err := cl.clusterID(ctx)
		if err != nil {
			return err
		}
		e.consumerID = consumerID
		if err := cl.ensureCRDs(ctx, *installCRDs, authv1beta1.IdentityResource); err != nil {
			return err
		}
		c, err := cl.consumer(consumerID, &kubepact.ConsumerOptions{OnStep: printSteps(e.stderr)})
		if err != nil {
			return err
		}
		done, err := c.Apply(ctx, cleanIdentity(id))
		if err != nil {
			return err
		}
		printAuthenticated(e.stdout, done)
		return nil
	}
}

// cleanIdentity returns id's name, namespace, labels, annotations and spec:
// what a provider may set. The consumer fills the status.
func cleanIdentity(id *authv1beta1.Identity) *authv1beta1.Identity {
	return &authv1beta1.Identity{
		TypeMeta: id.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: id.Name, Namespace: id.Namespace,
			Labels: maps.Clone(id.Labels), Annotations: maps.Clone(id.Annotations)},
		Spec: *id.Spec.DeepCopy(),
	}
}

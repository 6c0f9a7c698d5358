package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
)

// tenantLifecycleCommand returns the setup of a provider command that acts
// on a consumer's Tenant with act, then prints done.
func tenantLifecycleCommand(act func(*provider.Provider) func(context.Context, string) error, done string) func(f *flags) runFunc {
	return func(f *flags) runFunc {
		pf := addProviderFlags(f, "whose Tenant it is (required)")
		lifetime := f.Duration("certificate-lifetime", provider.DefaultCertificateLifetime,
			"the longest lifetime the provider requests for certificates: revocation records last at least that long")
		return func(ctx context.Context, e *env, args []string) error {
			if err := noArgs(args); err != nil {
				return err
			}
			if err := pf.checkConsumerID(e, false); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, *pf.timeout)
			defer cancel()
			_, p, err := pf.connect(ctx, "", &provider.Options{CertificateLifetime: *lifetime, OnStep: printSteps(e.stderr)})
			if err != nil {
				return err
			}
			if err := act(p)(ctx, pf.consumerID); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, done+"\n", pf.consumerID)
			if r, err := p.Revocation(ctx, pf.consumerID); err == nil {
				fmt.Fprintf(e.stdout, "Certificates issued to %s are recorded as revoked until %s: it is not bound again before then unless readmitted (kubepact readmit tenant)\n",
					pf.consumerID, r.Until.UTC().Format(time.RFC3339))
			} else if !errors.Is(err, lifecycle.ErrNotFound) {
				return err
			}
			return nil
		}
	}
}

var (
	cordonTenantCommand = tenantLifecycleCommand(func(p *provider.Provider) func(context.Context, string) error { return p.Cordon },
		"Tenant of %s cordoned: no new ResourceSlice is accepted, accepted ones stay")
	uncordonTenantCommand = tenantLifecycleCommand(func(p *provider.Provider) func(context.Context, string) error { return p.Uncordon },
		"Tenant of %s uncordoned: active again")
	drainTenantCommand = tenantLifecycleCommand(func(p *provider.Provider) func(context.Context, string) error { return p.Drain },
		"Tenant of %s drained: its bindings, ResourceSlices and NamespaceMaps are deleted")
	readmitTenantCommand = tenantLifecycleCommand(func(p *provider.Provider) func(context.Context, string) error { return p.Readmit },
		"%s readmitted: a new Tenant may be bound, and certificates issued to it before regain what the new binding grants")
)

package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
)

// providerFlags are the flags of a command run on the provider about one
// consumer.
type providerFlags struct {
	cluster    *clusterFlags
	consumerID string
	timeout    *time.Duration
}

func addProviderFlags(f *flags, consumerUsage string) *providerFlags {
	p := &providerFlags{cluster: localFlags(f, providerRole), timeout: timeoutFlag(f)}
	f.StringVar(&p.consumerID, "remote-cluster-id", "", "ID of the consumer cluster "+consumerUsage)
	return p
}

// checkConsumerID checks --remote-cluster-id, required unless optional.
func (p *providerFlags) checkConsumerID(e *env, optional bool) error {
	if p.consumerID == "" {
		if optional {
			return nil
		}
		return required("remote-cluster-id", "")
	}
	if err := clusterid.Validate(p.consumerID); err != nil {
		return usagef("--remote-cluster-id: %v", err)
	}
	e.consumerID = p.consumerID
	return nil
}

// connect connects the provider cluster and returns its Provider, reachable
// by consumers at its kubeconfig's server or at apiServerURL.
func (p *providerFlags) connect(ctx context.Context, apiServerURL string, opts *provider.Options) (*cluster, *provider.Provider, error) {
	cl, err := p.cluster.connect(providerRole)
	if err != nil {
		return nil, nil, err
	}
	id, err := cl.clusterID(ctx)
	if err != nil {
		return nil, nil, err
	}
	endpoint, err := cl.endpoint(apiServerURL)
	if err != nil {
		return nil, nil, err
	}
	prov, err := cl.provider(id, endpoint, opts)
	return cl, prov, err
}

func createNonceCommand(f *flags) runFunc {
	pf := addProviderFlags(f, "the nonce is for (required)")
	ttl := nonceTTLFlag(f)
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := pf.checkConsumerID(e, false); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *pf.timeout)
		defer cancel()
		_, p, err := pf.connect(ctx, "", &provider.Options{NonceTTL: *ttl, OnStep: printSteps(e.stderr)})
		if err != nil {
			return err
		}
		n, err := p.IssueNonce(ctx, pf.consumerID)
		if err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, n.Text())
		return nil
	}
}

func getNonceCommand(f *flags) runFunc {
	pf := addProviderFlags(f, "the nonce is for (required)")
	ttl := nonceTTLFlag(f)
	out := newOutput("")
	f.Var(out, "output", "print the nonce Secret in this format: yaml, json, name, jsonpath=TEMPLATE, go-template=TEMPLATE (default the nonce alone)")
	f.alias("o", "output")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := pf.checkConsumerID(e, false); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *pf.timeout)
		defer cancel()
		cl, err := pf.cluster.connect(providerRole)
		if err != nil {
			return err
		}
		if out.format != "" {
			// The Secret as stored, whatever the state of its nonce.
			ns := clusterid.TenantNamespace(pf.consumerID)
			s, err := cl.client.CoreV1().Secrets(ns).Get(ctx, nonce.SecretName, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading Secret %s/%s: %w", ns, nonce.SecretName, err)
			}
			return out.printObjects(e.stdout, []runtime.Object{s}, false)
		}
		entry, err := kube.NewNonceStore(cl.client).Get(ctx, pf.consumerID)
		create := fmt.Sprintf("kubepact create nonce --remote-cluster-id %s", pf.consumerID)
		switch {
		case errors.Is(err, nonce.ErrNotFound):
			return fmt.Errorf("no nonce for consumer %s (none was issued, or a Tenant redeemed it): run '%s' first", pf.consumerID, create)
		case err != nil:
			return err
		case entry.Redemption != nil:
			return fmt.Errorf("the nonce for consumer %s was redeemed by a Tenant at %s: run '%s', "+
				"which returns it again for the key the provider accepted with it, or issues a new one",
				pf.consumerID, entry.Redemption.At.UTC().Format(time.RFC3339), create)
		case entry.Expired(time.Now(), *ttl):
			return fmt.Errorf("the nonce for consumer %s expired at %s: run '%s' to issue a new one",
				pf.consumerID, entry.IssuedAt.Add(entry.TTLOr(*ttl)).UTC().Format(time.RFC3339), create)
		}
		fmt.Fprintln(e.stdout, entry.Nonce.Text())
		return nil
	}
}

// nonceFlag registers --nonce; parse it with parseNonce.
func nonceFlag(f *flags) *string {
	return f.String("nonce", "", "the nonce the provider issued, as kubepact create nonce prints it (required)")
}

func parseNonce(text string) (nonce.Nonce, error) {
	if err := required("nonce", text); err != nil {
		return nonce.Nonce{}, err
	}
	n, err := nonce.Parse(strings.TrimSpace(text))
	if err != nil {
		return nonce.Nonce{}, usagef("--nonce: %v", err)
	}
	return n, nil
}

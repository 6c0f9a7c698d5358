package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
)

// pairFlags are the flags of a command that reaches both clusters: the local
// one is the consumer, the remote one the provider.
type pairFlags struct {
	consumer, provider *clusterFlags
	timeout            *time.Duration
}

func addPairFlags(f *flags) *pairFlags {
	return &pairFlags{
		consumer: localFlags(f, consumerRole),
		provider: remoteFlags(f, providerRole),
		timeout:  timeoutFlag(f),
	}
}

func apiServerURLFlag(f *flags) *string {
	return f.String("api-server-url", "", "URL at which consumers reach the provider's API server (default the provider kubeconfig's server)")
}

// pair is a consumer and a provider, both reachable.
type pair struct {
	consumer *consumer.Consumer
	provider *provider.Provider
}

// connect builds the consumer and the provider, which consumers reach at
// apiServerURL or else at the server of its kubeconfig. With installCRDs it
// installs the CRDs on both clusters, otherwise it checks that they are there.
func (p *pairFlags) connect(ctx context.Context, e *env, apiServerURL string, installCRDs bool, popts *provider.Options, copts *consumer.Options) (*pair, error) {
	c, err := p.connectClusters(ctx, e)
	if err != nil {
		return nil, err
	}
	cons, prov, consumerID, providerID := c.consumer, c.provider, c.consumerID, c.providerID
	if err := cons.ensureCRDs(ctx, installCRDs, authv1beta1.IdentityResource); err != nil {
		return nil, err
	}
	if err := prov.ensureCRDs(ctx, installCRDs, authv1beta1.TenantResource); err != nil {
		return nil, err
	}
	endpoint, err := prov.endpoint(apiServerURL)
	if err != nil {
		return nil, err
	}
	provider, err := prov.provider(providerID, endpoint, popts)
	if err != nil {
		return nil, err
	}
	// The provider is reachable from here: the consumer asks it who the new
	// kubeconfig authenticates as before writing it.
	reviewer, err := kube.NewIdentityReviewer(nil)
	if err != nil {
		return nil, err
	}
	consumer, err := cons.consumer(consumerID, reviewer, copts)
	if err != nil {
		return nil, err
	}
	return &pair{consumer: consumer, provider: provider}, nil
}

func authenticateCommand(f *flags) runFunc {
	pf := addPairFlags(f)
	apiServerURL := apiServerURLFlag(f)
	proxyURL := f.String("proxy-url", "", "http(s) proxy through which the consumer reaches the provider")
	nonceTTL := nonceTTLFlag(f)
	policy := addPolicyFlag(f)
	var alg algorithmFlag
	f.Var(&alg, "key-algorithm", "algorithm of the consumer's cluster key if it has none yet: ed25519, ecdsa-p256 or rsa-2048")
	installCRDs := f.Bool("install-crds", false, "install the authentication.liqo.io CRDs on both clusters first")
	strict := f.Bool("strict", false, "give the identity a fresh TLS key instead of the cluster key (only kubepact providers accept it)")
	sendClusterKey := f.Bool("send-cluster-key", false, "ask the certificate for the consumer's cluster key, as Liqo's provider requires: "+
		"its private key then lands in the kubeconfig Secret (by default the identity gets a key of its own)")
	replace := replaceEndpointFlag(f)
	tf := addTokenFlags(f)
	local := localFlag(f)
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *pf.timeout)
		defer cancel()
		if tf.used() {
			return authenticateWithToken(ctx, e, tf, pf.consumer, pf.provider, alg, *installCRDs, *replace)
		}
		if !*local {
			if *apiServerURL != "" || *replace || f.Changed("nonce-ttl") || f.Changed("policy") {
				return usagef("--api-server-url, --replace-endpoint, --nonce-ttl and --policy are the in-process flow's: pass --local, or set them on the provider's controller")
			}
			if *sendClusterKey && *strict {
				return usagef("--send-cluster-key and --strict contradict each other: --strict gives every identity a key of its own")
			}
			return authenticateDeclarative(ctx, e, pf, declarativeOptions{proxyURL: *proxyURL, installCRDs: *installCRDs, strict: *strict,
				sendClusterKey: *sendClusterKey, alg: alg, algSet: f.Changed("key-algorithm")})
		}
		if *sendClusterKey {
			return usagef("--send-cluster-key is for a Liqo provider; with --local the provider is kubepact's, and the identity gets a key of its own")
		}
		onStep := printSteps(e.stderr)
		p, err := pf.connect(ctx, e, *apiServerURL, *installCRDs,
			&provider.Options{NonceTTL: *nonceTTL, Policy: policy.policy, OnStep: onStep},
			&consumer.Options{KeyAlgorithm: alg.alg, Strict: *strict, OnStep: onStep})
		if err != nil {
			return err
		}
		done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, &kubepact.AuthenticateOptions{ProxyURL: *proxyURL, ReplaceEndpoint: *replace})
		if err != nil {
			return settle(ctx, err, nil, &InterruptedError{Command: "authenticate --local",
				Resume: "to resume, run the same authenticate --local command again: it goes on from what is left",
				Clean:  "to remove what it wrote instead, run unauthenticate --local with the same flags"})
		}
		printAuthenticated(e.stdout, done)
		return nil
	}
}

func unauthenticateCommand(f *flags) runFunc {
	pf := addPairFlags(f)
	force := f.Bool("force", false, "provider gone for good: remove, on the consumer only, its slices, identities, kubeconfig Secrets and keys, without contacting the provider (needs --remote-cluster-id)")
	revoke := f.Bool("revoke", false, "revoke rather than unpeer: the provider records the consumer's certificates as revoked and refuses it until they expire or it is readmitted (use when its key may have leaked)")
	local := localFlag(f)
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if *force && *revoke {
			return usagef("--force and --revoke exclude each other: --force does not contact the provider")
		}
		if *force {
			return forceUnauthenticate(ctx, e, pf)
		}
		ctx, cancel := context.WithTimeout(ctx, *pf.timeout)
		defer cancel()
		if !*local {
			return unauthenticateDeclarative(ctx, e, pf, *revoke)
		}
		c, err := pf.connectClusters(ctx, e)
		if err != nil {
			return err
		}
		if peered, err := c.peered(ctx); err != nil {
			return err
		} else if !peered {
			return c.unpeered(ctx, e, *revoke)
		}
		onStep := printSteps(e.stderr)
		p, err := pf.connect(ctx, e, "", false, &provider.Options{OnStep: onStep}, &consumer.Options{OnStep: onStep})
		if err != nil {
			return err
		}
		if *revoke {
			if err := p.consumer.Forget(ctx, p.provider.ClusterID()); err != nil {
				return err
			}
			if err := p.provider.Revoke(ctx, p.consumer.ClusterID()); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "Consumer %s is no longer authenticated on provider %s, and its certificates are recorded as revoked\n", p.consumer.ClusterID(), p.provider.ClusterID())
			return nil
		}
		if err := kubepact.Unauthenticate(ctx, p.consumer, p.provider); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "Consumer %s is no longer authenticated on provider %s\n", p.consumer.ClusterID(), p.provider.ClusterID())
		return nil
	}
}

// printAuthenticated tells where the kubeconfig is and what it grants,
// without printing it.
func printAuthenticated(w io.Writer, done *consumer.Authenticated) {
	cfg := done.Kubeconfig
	fmt.Fprintf(w, "Kubeconfig Secret %s/%s\n  server:    %s\n  user:      %s\n  namespace: %s\n",
		done.Secret.Namespace, done.Secret.Name, cfg.Server(), cfg.User(), cfg.Namespace())
}

// localFlag registers --local.
func localFlag(f *flags) *bool {
	return f.Bool("local", false, "do every step in this process, the provider's too (verification, CSR, approval, RBAC binding), with both clusters' admin kubeconfigs: "+
		"for clusters where no controller runs (by default the clusters' controllers do their steps)")
}

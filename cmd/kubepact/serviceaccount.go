package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/tenant"
)

// secretManifest is a Secret as kubectl apply -f takes it.
type secretManifest struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   manifestMeta      `json:"metadata"`
	Type       corev1.SecretType `json:"type"`
	Data       map[string][]byte `json:"data"`
}

// serviceAccountProviderPorts returns the provider ports of saidentity over
// cl; with tokenPolicy, they install saidentity.TokenPolicy.
func serviceAccountProviderPorts(cl *cluster, tokenPolicy bool) saidentity.ProviderPorts {
	p := saidentity.ProviderPorts{
		Namespaces:      kube.NewNamespaces(cl.client),
		ServiceAccounts: kube.NewServiceAccounts(cl.client),
		RBAC:            kube.NewServiceAccountRBAC(cl.client),
		Lifecycle: lifecycle.Gate{Tenants: kube.NewTenantStore(cl.typed),
			Revocations: kube.NewLifecyclePorts(cl.client, cl.typed).Revocations},
		Commitments: kube.NewCommitments(cl.typed),
	}
	if tokenPolicy {
		p.Admission = kube.NewAdmission(cl.client)
	}
	return p
}

func createServiceAccountIdentityCommand(f *flags) runFunc {
	pf := addProviderFlags(f, "the identity is for (required)")
	apiServerURL := apiServerURLFlag(f)
	expiration := f.Duration("expiration", saidentity.DefaultExpiration,
		fmt.Sprintf("lifetime of the token, from %s to %s; the consumer refreshes it before it ends", saidentity.MinExpiration, saidentity.MaxExpiration))
	out := f.String("out", "", "file to write to, with mode 0600 (an existing file is never overwritten; default standard output)")
	as := f.String("as", "secret", "what to write: secret (the consumer's kubeconfig Secret, for kubepact apply serviceaccount-identity) or kubeconfig")
	tokenPolicy := f.Bool("install-token-policy", true, "apply the admission policy "+saidentity.TokenPolicyName+
		" that bounds the identities' token lifetimes; false where an administrator installed it (config/serviceaccount-identity), as its issuer may not write admission policies")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := pf.checkConsumerID(e, false); err != nil {
			return err
		}
		if *as != "secret" && *as != "kubeconfig" {
			return usagef("--as: %q is neither secret nor kubeconfig", *as)
		}
		if *expiration < saidentity.MinExpiration || *expiration > saidentity.MaxExpiration {
			return usagef("--expiration: %s is outside %s..%s", *expiration, saidentity.MinExpiration, saidentity.MaxExpiration)
		}
		ctx, cancel := context.WithTimeout(ctx, *pf.timeout)
		defer cancel()
		cl, err := pf.cluster.connect(providerRole)
		if err != nil {
			return err
		}
		providerID, err := cl.clusterID(ctx)
		if err != nil {
			return err
		}
		ep, err := cl.endpoint(*apiServerURL)
		if err != nil {
			return err
		}
		id, err := saidentity.Issue(ctx, serviceAccountProviderPorts(cl, *tokenPolicy), saidentity.Endpoint{Server: ep.Server, CA: ep.CA},
			pf.consumerID, &saidentity.IssueOptions{Expiration: *expiration, ProviderID: providerID})
		if err != nil {
			return err
		}
		var data []byte
		if *as == "kubeconfig" {
			data, err = id.Kubeconfig.Marshal()
		} else {
			data, err = secretYAML(providerID, id.Kubeconfig)
		}
		if err != nil {
			return err
		}
		if *out == "" {
			_, err = e.stdout.Write(data)
			return err
		}
		if err := writeSecretFile(*out, data); err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "Wrote the %s of ServiceAccount %s/%s, whose token expires at %s, to %s\n", *as,
			clusterid.TenantNamespace(pf.consumerID), saidentity.Name(pf.consumerID), id.Token.Expiry().Format(time.RFC3339), *out)
		return nil
	}
}

// secretYAML returns the consumer's kubeconfig Secret for cfg as YAML.
func secretYAML(providerID string, cfg *kubeconfig.Config) ([]byte, error) {
	s, err := saidentity.SecretFor(providerID, cfg)
	if err != nil {
		return nil, err
	}
	return yaml.Marshal(secretManifest{
		APIVersion: "v1", Kind: "Secret", Metadata: metaOf(s.ObjectMeta), Type: s.Type, Data: s.Data,
	})
}

// writeSecretFile writes data to a new file at path, readable by its owner
// only.
func writeSecretFile(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%s already exists: kubepact never overwrites a file holding credentials; choose another --out", path)
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
	}
	return err
}

func revokeServiceAccountIdentityCommand(f *flags) runFunc {
	pf := addProviderFlags(f, "whose identity to revoke (required)")
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
		if err := saidentity.Revoke(ctx, serviceAccountProviderPorts(cl, false), pf.consumerID); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "Revoked ServiceAccount %s/%s and its permissions: its tokens no longer work\n",
			clusterid.TenantNamespace(pf.consumerID), saidentity.Name(pf.consumerID))
		return nil
	}
}

// readServiceAccountSecret reads the Secret create serviceaccount-identity
// wrote and rebuilds it from its kubeconfig, so that only what kubepact
// writes is stored. It returns the provider's ID too.
func readServiceAccountSecret(data []byte) (string, *corev1.Secret, *saidentity.Token, error) {
	var m secretManifest
	if err := yaml.UnmarshalStrict(data, &m); err != nil {
		return "", nil, nil, fmt.Errorf("not a kubeconfig Secret: %w", err)
	}
	if m.APIVersion != "v1" || m.Kind != "Secret" {
		return "", nil, nil, fmt.Errorf("not a kubeconfig Secret: apiVersion %q, kind %q", m.APIVersion, m.Kind)
	}
	providerID := m.Metadata.Labels[clusterid.Label]
	if err := clusterid.Validate(providerID); err != nil {
		return "", nil, nil, fmt.Errorf("label %s: %w", clusterid.Label, err)
	}
	if m.Metadata.Name != saidentity.SecretName(providerID) {
		return "", nil, nil, fmt.Errorf("the Secret is named %q, want %q for provider %s", m.Metadata.Name, saidentity.SecretName(providerID), providerID)
	}
	cfg, err := kubeconfig.Parse(m.Data[kubeconfig.SecretKey])
	if err != nil {
		return "", nil, nil, err
	}
	tok, err := saidentity.ParseToken(cfg.BearerToken(), time.Time{})
	if err != nil {
		return "", nil, nil, err
	}
	s, err := saidentity.SecretFor(providerID, cfg)
	if err != nil {
		return "", nil, nil, err
	}
	return providerID, s, tok, nil
}

func applyServiceAccountIdentityCommand(f *flags) runFunc {
	cf := localFlags(f, consumerRole)
	timeout := timeoutFlag(f)
	return func(ctx context.Context, e *env, args []string) error {
		path, err := oneArg(args, "the kubeconfig Secret file create serviceaccount-identity wrote, or - for standard input")
		if err != nil {
			return err
		}
		data, err := readInput(e, path)
		if err != nil {
			return err
		}
		providerID, s, tok, err := readServiceAccountSecret(data)
		if err != nil {
			return fmt.Errorf("%s: %w", inputName(path), err)
		}
		if !time.Now().Before(tok.Expiry()) {
			return fmt.Errorf("%s: %v has expired: ask the provider for a new one", inputName(path), tok)
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := cf.connect(consumerRole)
		if err != nil {
			return err
		}
		if err := kube.NewNamespaces(cl.client).Ensure(ctx, tenant.Namespace(providerID)); err != nil {
			return err
		}
		if err := kube.NewKubeconfigSecrets(cl.client).Write(ctx, s); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "Stored the kubeconfig of provider %s in Secret %s/%s; its token expires at %s: "+
			"run 'kubepact refresh serviceaccount-identity --remote-cluster-id %s --watch' to keep it valid\n",
			providerID, s.Namespace, s.Name, tok.Expiry().Format(time.RFC3339), providerID)
		return nil
	}
}

func refreshServiceAccountIdentityCommand(f *flags) runFunc {
	cf := localFlags(f, consumerRole)
	timeout := timeoutFlag(f)
	var providerID string
	f.StringVar(&providerID, "remote-cluster-id", "", "ID of the provider cluster whose identity to refresh (required)")
	watch := f.Bool("watch", false, "keep refreshing before each token expires, until interrupted")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := required("remote-cluster-id", providerID); err != nil {
			return err
		}
		if err := clusterid.Validate(providerID); err != nil {
			return usagef("--remote-cluster-id: %v", err)
		}
		cl, err := cf.connect(consumerRole)
		if err != nil {
			return err
		}
		reviewer, err := kube.NewIdentityReviewer(&kube.IdentityReviewerOptions{Timeout: *timeout})
		if err != nil {
			return err
		}
		report := func(tok *saidentity.Token) {
			fmt.Fprintf(e.stdout, "Refreshed the token of provider %s: it expires at %s\n", providerID, tok.Expiry().Format(time.RFC3339))
		}
		r, err := saidentity.NewRefresher(saidentity.ConsumerPorts{
			Tokens:   kube.TokenRequester{Timeout: *timeout},
			Reviewer: reviewer,
			Secrets:  kube.NewKubeconfigSecrets(cl.client),
		}, providerID, &saidentity.RefresherOptions{
			OnRefresh: report,
			OnError:   func(err error) { fmt.Fprintf(e.stderr, "refresh failed, retrying: %v\n", err) },
		})
		if err != nil {
			return err
		}
		if *watch {
			err := r.Run(ctx)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		tok, err := r.Refresh(ctx)
		if err != nil {
			return err
		}
		report(tok)
		return nil
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

func generateTenantCommand(f *flags) runFunc {
	cf := localFlags(f, consumerRole)
	timeout := timeoutFlag(f)
	providerID := f.String("remote-cluster-id", "", "ID of the provider cluster that issued the nonce (required)")
	nonceText := nonceFlag(f)
	proxyURL := f.String("proxy-url", "", "http(s) proxy through which the consumer reaches the provider")
	lifetime := f.Duration("transcript-lifetime", tenant.DefaultTranscriptLifetime,
		fmt.Sprintf("how long the provider may take to accept the Tenant (at most %s)", tenant.MaxTranscriptLifetime))
	strict := f.Bool("strict", false, "give the identity a fresh TLS key, stored in the Liqo namespace, instead of the cluster key (only kubepact providers accept it; not with --key-file)")
	keyFile := f.String("key-file", "", "sign offline with this key file (PKCS#8 PEM, see generate key) instead of the cluster key; needs --cluster-id and no cluster")
	var alg algorithmFlag
	f.Var(&alg, "key-algorithm", "algorithm of the cluster key if the cluster has none yet: ed25519, ecdsa-p256 or rsa-2048")
	output := outputFlag(f)
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := required("remote-cluster-id", *providerID); err != nil {
			return err
		}
		if err := clusterid.Validate(*providerID); err != nil {
			return usagef("--remote-cluster-id: %v", err)
		}
		if *lifetime <= 0 || *lifetime > tenant.MaxTranscriptLifetime {
			return usagef("--transcript-lifetime: %s is not between 0 and %s", *lifetime, tenant.MaxTranscriptLifetime)
		}
		n, err := parseNonce(*nonceText)
		if err != nil {
			return err
		}
		if *strict && *keyFile != "" {
			return usagef("--strict needs the consumer cluster to keep the identity key: it does not go with --key-file")
		}
		var t *authv1beta1.Tenant
		if *keyFile != "" {
			t, err = offlineTenant(cf, *keyFile, n, &tenant.BuildOptions{
				ProxyURL: *proxyURL, ProviderID: *providerID, Expiry: time.Now().Add(*lifetime),
			})
		} else {
			ctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			t, err = clusterTenant(ctx, e, cf, *providerID, n, &consumer.TenantOptions{ProxyURL: *proxyURL},
				&consumer.Options{KeyAlgorithm: alg.alg, TranscriptLifetime: *lifetime, Strict: *strict, OnStep: printSteps(e.stderr)})
		}
		if err != nil {
			return err
		}
		return output.print(e.stdout, tenantManifest(t))
	}
}

// clusterTenant has the consumer cluster build the Tenant with its cluster key.
func clusterTenant(ctx context.Context, e *env, cf *clusterFlags, providerID string, n nonce.Nonce,
	topts *consumer.TenantOptions, copts *consumer.Options) (*authv1beta1.Tenant, error) {
	cl, err := cf.connect(consumerRole)
	if err != nil {
		return nil, err
	}
	id, err := cl.clusterID(ctx)
	if err != nil {
		return nil, err
	}
	e.consumerID = id
	c, err := cl.consumer(id, nil, copts)
	if err != nil {
		return nil, err
	}
	return c.Tenant(ctx, providerID, n, topts)
}

// offlineTenant builds the Tenant with the key in keyFile, touching no
// cluster, as Consumer.Tenant would: with a transcript for the provider.
func offlineTenant(cf *clusterFlags, keyFile string, n nonce.Nonce, opts *tenant.BuildOptions) (*authv1beta1.Tenant, error) {
	if cf.kubeconfig != "" || cf.context != "" {
		return nil, usagef("--key-file signs offline: it takes no --kubeconfig or --context")
	}
	if cf.clusterID == "" {
		return nil, usagef("--cluster-id is required with --key-file")
	}
	if err := clusterid.Validate(cf.clusterID); err != nil {
		return nil, usagef("--cluster-id: %v", err)
	}
	key, err := readKeyFile(keyFile)
	if err != nil {
		return nil, err
	}
	return tenant.Build(cf.clusterID, key, n, opts)
}

// readKeyFile reads a PKCS#8 PEM key file.
func readKeyFile(path string) (*keys.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading key file: %w", err)
	}
	k, err := keys.ParsePrivateKey(b)
	if err != nil {
		return nil, fmt.Errorf("key file %s: %w", path, err)
	}
	return k, nil
}

func verifyTenantCommand(f *flags) runFunc {
	nonceText := nonceFlag(f)
	providerID := f.String("cluster-id", "", "ID of the provider that verifies: the Tenant's transcript must name it (default the provider the transcript names)")
	policy := addPolicyFlag(f)
	return func(_ context.Context, e *env, args []string) error {
		path, err := oneArg(args, "the Tenant file (or - for standard input)")
		if err != nil {
			return err
		}
		n, err := parseNonce(*nonceText)
		if err != nil {
			return err
		}
		if *providerID != "" {
			if err := clusterid.Validate(*providerID); err != nil {
				return usagef("--cluster-id: %v", err)
			}
		}
		t, err := readTenant(e, path)
		if err != nil {
			return err
		}
		if clusterid.Validate(t.Spec.ClusterID) == nil {
			e.consumerID = t.Spec.ClusterID
		}
		opts := &tenant.VerifyOptions{ProviderID: *providerID, Policy: policy.policy}
		if opts.ProviderID == "" {
			// Offline, anyone may check the Tenant for the provider it names;
			// the result says which.
			opts.ProviderID = t.Annotations[tenant.TranscriptProviderAnnotation]
		}
		v, err := tenant.Verify(t, n, opts)
		if err != nil {
			return err
		}
		subject := v.CSR.Subject()
		fmt.Fprintf(e.stdout, "Tenant %s verified: cluster ID %s, key %s, CSR CN=%s O=%s", t.Name, v.ClusterID,
			keys.Fingerprint(v.PublicKey), subject.CommonName, strings.Join(subject.Organization, ","))
		if v.Transcript {
			fmt.Fprintf(e.stdout, ", transcript for provider %s", opts.ProviderID)
		} else {
			fmt.Fprint(e.stdout, ", no transcript (a Liqo consumer's Tenant)")
		}
		fmt.Fprintln(e.stdout)
		return nil
	}
}

func applyTenantCommand(f *flags) runFunc {
	cf := localFlags(f, providerRole)
	timeout := timeoutFlag(f)
	installCRDs := f.Bool("install-crds", false, "install the authentication.liqo.io CRDs first")
	return func(ctx context.Context, e *env, args []string) error {
		path, err := oneArg(args, "the Tenant file (or - for standard input)")
		if err != nil {
			return err
		}
		t, err := readTenant(e, path)
		if err != nil {
			return err
		}
		want, err := cleanTenant(t)
		if err != nil {
			return err
		}
		consumerID := want.Spec.ClusterID
		e.consumerID = consumerID
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := cf.connect(providerRole)
		if err != nil {
			return err
		}
		if err := cl.ensureCRDs(ctx, *installCRDs, authv1beta1.TenantResource); err != nil {
			return err
		}
		store := kube.NewTenantStore(cl.typed)
		// Keep the finalizers of a stored Tenant, which belong to the provider.
		cur, err := store.Get(ctx, want.Namespace, want.Name)
		switch {
		case err == nil:
			want.Finalizers = cur.Finalizers
		case !errors.Is(err, tenant.ErrNotFound):
			return err
		}
		if _, err := store.Apply(ctx, want); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("%w: the tenant namespace %s is created by 'kubepact create nonce --remote-cluster-id %s'",
					err, want.Namespace, consumerID)
			}
			return err
		}
		fmt.Fprintf(e.stdout, "Tenant %s/%s applied on the provider cluster; next: kubepact generate identity --remote-cluster-id %s\n",
			want.Namespace, want.Name, consumerID)
		return nil
	}
}

// cleanTenant returns the Tenant to store for t: t's spec but its
// condition, t's labels and annotations, with the name and namespace Liqo
// gives it, and no status (which only the provider writes, when it accepts
// the Tenant).
func cleanTenant(t *authv1beta1.Tenant) (*authv1beta1.Tenant, error) {
	if _, err := tenant.Validate(t); err != nil {
		return nil, err
	}
	id := t.Spec.ClusterID
	name, namespace := id, clusterid.TenantNamespace(id)
	if t.Name != "" && t.Name != name {
		return nil, &tenant.FieldError{Tenant: t.Name, Field: "metadata.name", Err: fmt.Errorf("want %q, the consumer's cluster ID", name)}
	}
	if t.Namespace != "" && t.Namespace != namespace {
		return nil, &tenant.FieldError{Tenant: t.Name, Field: "metadata.namespace", Err: fmt.Errorf("want %q, the tenant namespace", namespace)}
	}
	labels := maps.Clone(t.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[clusterid.Label] = id
	out := &authv1beta1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, Annotations: maps.Clone(t.Annotations)},
		Spec:       *t.Spec.DeepCopy(),
	}
	// The condition is the provider's: a consumer's Tenant does not undo a
	// cordon or a drain.
	out.Spec.TenantCondition = ""
	return out, nil
}

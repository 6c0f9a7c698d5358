package main

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/enrolhttp"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
)

// defaultEnrolmentNamespace is where the shipped controller keeps the
// enrolment key's record: its own namespace.
const defaultEnrolmentNamespace = "kubepact-system"

// errNoNextKey: no rotation of the enrolment key overlaps, so its record
// publishes no next key.
var errNoNextKey = errors.New("no next enrolment key is published: start a rotation with kubepact-controller --enrolment-key-rotation=prepare")

// errNoNextClusterKey: no rotation of the cluster key overlaps.
var errNoNextClusterKey = errors.New("no next cluster key is published: start a rotation with kubepact-controller --cluster-key-rotation=prepare")

// getPublicKeyCommand prints a public key of this cluster, PKIX PEM, as
// the peering objects take it: the cluster key (an AuthorizedConsumer's
// spec.publicKeys) or the enrolment key (a TrustedProvider's
// spec.enrolmentKeys). It reads the records the controller publishes,
// never a private key.
func getPublicKeyCommand(f *flags) runFunc {
	cf := localFlags(f, "local")
	timeout := timeoutFlag(f)
	which := f.String("key", "cluster", "cluster (what an AuthorizedConsumer commits), cluster-next (the next cluster key, while a rotation overlaps), enrolment (what a TrustedProvider commits) or enrolment-next (the next enrolment key, while a rotation overlaps)")
	enrolmentNS := f.String("enrolment-namespace", defaultEnrolmentNamespace, "namespace of the enrolment key's record: the provider's controller's")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		switch *which {
		case "cluster", "cluster-next", "enrolment", "enrolment-next":
		default:
			return usagef("--key: %q, want cluster, cluster-next, enrolment or enrolment-next", *which)
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := cf.connect("local")
		if err != nil {
			return err
		}
		record, noNext := kube.NewPublicKeyRecord(cl.client, cl.namespace), errNoNextClusterKey
		if strings.HasPrefix(*which, "enrolment") {
			record, noNext = kube.NewEnrolmentKeyRecord(cl.client, *enrolmentNS), errNoNextKey
		}
		get := record.Get
		if strings.HasSuffix(*which, "-next") {
			get = record.GetNext
		}
		pub, err := get(ctx)
		if err == nil && pub == nil {
			err = noNext
		}
		if err != nil {
			return fmt.Errorf("reading the %s key's record (published by kubepact-controller): %w", *which, err)
		}
		b, err := keys.MarshalPublicKey(pub)
		if err != nil {
			return err
		}
		_, err = e.stdout.Write(b)
		return err
	}
}

// generateAuthorizedConsumerCommand, on a consumer, prints the
// AuthorizedConsumer a provider commits to let it peer from Git: this
// cluster's ID, its cluster key and its enrolment request to the
// provider. Making the request keeps the identity's key in the local
// keyring; the consumer's controller makes the same request for a
// TrustedProvider of that provider.
func generateAuthorizedConsumerCommand(f *flags) runFunc {
	cf := localFlags(f, consumerRole)
	timeout := timeoutFlag(f)
	providerID := f.String("remote-cluster-id", "", "ID of the provider the request is for (required)")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := required("remote-cluster-id", *providerID); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		ac, err := authorizedConsumer(ctx, cf, *providerID)
		if err != nil {
			return err
		}
		return printManifest(e.stdout, "commit on the provider "+*providerID, ac)
	}
}

func authorizedConsumer(ctx context.Context, cf *clusterFlags, providerID string) (*peeringv1alpha1.AuthorizedConsumer, error) {
	cl, err := cf.connect(consumerRole)
	if err != nil {
		return nil, err
	}
	id, err := cl.clusterID(ctx)
	if err != nil {
		return nil, err
	}
	c, err := cl.consumer(id, nil, nil)
	if err != nil {
		return nil, err
	}
	r, err := c.EnrolmentRequest(ctx, providerID, nil)
	if err != nil {
		return nil, err
	}
	pub, err := c.PublicKey(ctx)
	if err != nil {
		return nil, err
	}
	// While the cluster key rotates, both keys: the request is the next
	// key's, and its hand-over counts while the key is committed too.
	next, err := c.NextClusterKey(ctx)
	if err != nil {
		return nil, err
	}
	pems, err := publicPEMs(pub, next)
	if err != nil {
		return nil, err
	}
	return &peeringv1alpha1.AuthorizedConsumer{
		TypeMeta:   metav1.TypeMeta{APIVersion: peeringv1alpha1.SchemeGroupVersion.String(), Kind: peeringv1alpha1.AuthorizedConsumerKind},
		ObjectMeta: metav1.ObjectMeta{Name: id},
		Spec:       peeringv1alpha1.AuthorizedConsumerSpec{ClusterID: id, PublicKeys: pems, Request: r.API()},
	}, nil
}

// generateTrustedProviderCommand, on a provider, prints the
// TrustedProvider a consumer commits to peer with it from Git: this
// cluster's ID, its enrolment endpoint's URL, the pin of the CA its API
// server's certificate chains to, and its enrolment key.
func generateTrustedProviderCommand(f *flags) runFunc {
	cf := localFlags(f, providerRole)
	timeout := timeoutFlag(f)
	tf := trustFlags(f)
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := tf.check(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		tp, err := trustedProvider(ctx, cf, tf)
		if err != nil {
			return err
		}
		return printManifest(e.stdout, "commit on the consumer", tp)
	}
}

// trustOptions are the flags of a TrustedProvider.
type trustOptions struct {
	endpoint, caFile, enrolmentNamespace *string
}

func trustFlags(f *flags) *trustOptions {
	return &trustOptions{
		endpoint: f.String("enrolment-url", "", "https URL at which consumers reach the provider's enrolment endpoint (Service kubepact-enrolment) (required)"),
		caFile: f.String("api-server-ca-file", "", "PEM CA of the provider's API server, as its controller hands it out (--api-server-ca-file there); "+
			"default: the kubeconfig's"),
		enrolmentNamespace: f.String("enrolment-namespace", defaultEnrolmentNamespace, "namespace of the enrolment key's record: the provider's controller's"),
	}
}

func (t *trustOptions) check() error {
	if err := required("enrolment-url", *t.endpoint); err != nil {
		return err
	}
	if _, err := enrolhttp.CheckURL(*t.endpoint); err != nil {
		return usagef("--enrolment-url: %v", err)
	}
	return nil
}

func trustedProvider(ctx context.Context, cf *clusterFlags, t *trustOptions) (*peeringv1alpha1.TrustedProvider, error) {
	cl, err := cf.connect(providerRole)
	if err != nil {
		return nil, err
	}
	id, err := cl.clusterID(ctx)
	if err != nil {
		return nil, err
	}
	var ca []byte
	if *t.caFile != "" {
		if ca, err = os.ReadFile(*t.caFile); err != nil {
			return nil, fmt.Errorf("--api-server-ca-file: %w", err)
		}
	} else {
		endpoint, err := cl.endpoint("")
		if err != nil {
			return nil, err
		}
		ca = endpoint.CA
	}
	pin, err := enrol.CAPin(ca)
	if err != nil {
		return nil, fmt.Errorf("the provider's CA: %w", err)
	}
	enrolmentKeys, err := publishedEnrolmentKeys(ctx, kube.NewEnrolmentKeyRecord(cl.client, *t.enrolmentNamespace))
	if err != nil {
		return nil, err
	}
	return &peeringv1alpha1.TrustedProvider{
		TypeMeta:   metav1.TypeMeta{APIVersion: peeringv1alpha1.SchemeGroupVersion.String(), Kind: peeringv1alpha1.TrustedProviderKind},
		ObjectMeta: metav1.ObjectMeta{Name: id},
		Spec: peeringv1alpha1.TrustedProviderSpec{ClusterID: id, Endpoint: *t.endpoint, CASHA256: pin,
			EnrolmentKeys: enrolmentKeys},
	}, nil
}

// publishedEnrolmentKeys returns the enrolment key record's keys, PKIX
// PEM: the enrolment key and, while a rotation overlaps, the next one, so
// that a TrustedProvider generated then trusts both.
func publishedEnrolmentKeys(ctx context.Context, record *kube.PublicKeyRecord) ([]string, error) {
	pub, next, err := record.GetWithNext(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the enrolment key's record (published by the provider's kubepact-controller): %w", err)
	}
	return publicPEMs(pub, next)
}

// publicPEMs returns the keys of ks that are not nil, PKIX PEM, in order:
// what the peering objects commit.
func publicPEMs(ks ...crypto.PublicKey) ([]string, error) {
	var out []string
	for _, k := range ks {
		if k == nil {
			continue
		}
		pem, err := keys.MarshalPublicKey(k)
		if err != nil {
			return nil, err
		}
		out = append(out, string(pem))
	}
	return out, nil
}

// generatePeeringCommand prints both manifests of a peering from Git: the
// TrustedProvider the consumer (the local cluster) commits, then the
// AuthorizedConsumer the provider (the remote one) commits. It reads both
// clusters and writes only the consumer's identity key.
func generatePeeringCommand(f *flags) runFunc {
	consumerFlags := localFlags(f, consumerRole)
	providerFlags := remoteFlags(f, providerRole)
	timeout := timeoutFlag(f)
	tf := trustFlags(f)
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if err := tf.check(); err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		tp, err := trustedProvider(ctx, providerFlags, tf)
		if err != nil {
			return err
		}
		ac, err := authorizedConsumer(ctx, consumerFlags, tp.Name)
		if err != nil {
			return err
		}
		if err := printManifest(e.stdout, "commit on the consumer "+ac.Name, tp); err != nil {
			return err
		}
		fmt.Fprintln(e.stdout, "---")
		return printManifest(e.stdout, "commit on the provider "+tp.Name, ac)
	}
}

// printManifest prints obj as YAML, without status or server fields,
// after a comment saying where it goes.
func printManifest(w io.Writer, where string, obj runtime.Object) error {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	delete(u, "status")
	if m, ok := u["metadata"].(map[string]any); ok {
		delete(m, "creationTimestamp")
	}
	b, err := yaml.Marshal(u)
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "# %s\n", where); err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

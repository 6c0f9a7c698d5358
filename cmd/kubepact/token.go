package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire"
)

// defaultServingSecret is the kubernetes.io/tls Secret that serve uses, and
// makes when --hosts is given and it is missing.
const defaultServingSecret = "kubepact-auth-tls"

// getTokenCommand prints the provider's token, creating it when missing.
func getTokenCommand(f *flags) runFunc {
	local := localFlags(f, providerRole)
	rotate := f.Bool("rotate", false, "replace the token with a new one first: the old one stops working at once")
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
		store := kube.NewTokenStore(cl.client, cl.namespace)
		var tok authtoken.Token
		if *rotate {
			tok, err = authtoken.Rotate(ctx, store, rand.Reader)
		} else {
			tok, err = authtoken.Ensure(ctx, store, rand.Reader)
		}
		if err != nil {
			return err
		}
		// The user asked for it: the one place the token is printed.
		fmt.Fprintln(e.stdout, tok.Reveal())
		return nil
	}
}

// serveCommand runs the authentication server of the provider cluster.
func serveCommand(f *flags) runFunc {
	local := localFlags(f, providerRole)
	listen := f.String("listen", ":8443", "address the server listens on")
	name := f.String("cluster-name", "", "the provider's name in GET /ids")
	apiServerURL := apiServerURLFlag(f)
	tlsSecret := f.String("tls-secret", defaultServingSecret, "kubernetes.io/tls Secret in the Liqo namespace holding the serving certificate")
	hosts := f.String("hosts", "", "comma-separated DNS names and IPs consumers use to reach the server: when the TLS Secret is missing, make it, with a new CA in ca.crt")
	allowEmpty := f.Bool("allow-empty-token", false, "DANGEROUS: turn authentication off, so that anyone who reaches the server gets an identity")
	lifetime := f.Duration("certificate-lifetime", provider.DefaultCertificateLifetime, "lifetime requested for the certificates issued")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		cl, err := local.connect(providerRole)
		if err != nil {
			return err
		}
		id, err := cl.clusterID(ctx)
		if err != nil {
			return err
		}
		endpoint, err := cl.endpoint(*apiServerURL)
		if err != nil {
			return err
		}
		tokens := kube.NewTokenStore(cl.client, cl.namespace)
		if !*allowEmpty {
			if _, err := authtoken.Ensure(ctx, tokens, rand.Reader); err != nil {
				return err
			}
		}
		serving, err := servingSecret(ctx, cl, *tlsSecret, *hosts)
		if err != nil {
			return err
		}
		tlsConfig, err := authserver.TLSConfig(serving)
		if err != nil {
			return err
		}
		ports, err := wire.NewProviderPorts(cl.config, nil)
		if err != nil {
			return err
		}
		logger := funcr.New(func(prefix, args string) { fmt.Fprintln(e.stderr, prefix, args) }, funcr.Options{})
		if *allowEmpty {
			fmt.Fprintln(e.stderr, "WARNING: --allow-empty-token: authentication is OFF; anyone who reaches this server gets an identity on this cluster")
		}
		srv, err := authserver.New(id, endpoint, ports, tokens, &authserver.Options{
			ClusterName: *name, AllowEmptyToken: *allowEmpty, CertificateLifetime: *lifetime, Logger: logger,
		})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", *listen)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stderr, "Serving the authentication server of cluster %s on https://%s (CA in Secret %s/%s, key %s)\n",
			id, ln.Addr(), cl.namespace, serving.Name, authserver.CAKey)
		return srv.Serve(ctx, ln, tlsConfig)
	}
}

// servingSecret reads the serving Secret, or makes it for hosts when it is
// missing and hosts are given.
func servingSecret(ctx context.Context, cl *cluster, name, hosts string) (*corev1.Secret, error) {
	secrets := cl.client.CoreV1().Secrets(cl.namespace)
	sec, err := secrets.Get(ctx, name, metav1.GetOptions{})
	switch {
	case err == nil:
		return sec, nil
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("reading Secret %s/%s: %w", cl.namespace, name, err)
	case hosts == "":
		return nil, usagef("Secret %s/%s does not exist: create a kubernetes.io/tls Secret, or pass --hosts to make one", cl.namespace, name)
	}
	made, err := authserver.ServingSecret(cl.namespace, name, strings.Split(hosts, ","), nil)
	if err != nil {
		return nil, err
	}
	if err := kube.NewNamespaces(cl.client).Ensure(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: cl.namespace}}); err != nil {
		return nil, err
	}
	if err := kube.NewSecrets(cl.client).Apply(ctx, made); err != nil {
		return nil, err
	}
	return made, nil
}

// tokenFlags are the flags of authenticate's token flow.
type tokenFlags struct {
	token, authURL, authCA string
	noToken                bool
}

// deprecatedTokenFlag is the name --auth-token had before it was renamed:
// everywhere else, as in kubectl, --token is a bearer token. It still sets
// the shared token, with a warning, for one release; then it is the local
// cluster's bearer token, as for every other command.
const deprecatedTokenFlag = "token"

func addTokenFlags(f *flags) *tokenFlags {
	t := &tokenFlags{}
	f.StringVar(&t.token, "auth-token", "", "the provider's shared token (kubepact get token on the provider): authenticate with its authentication server instead of the handshake")
	f.StringVar(&t.token, deprecatedTokenFlag, "", "the provider's shared token: the old name of --auth-token")
	// MarkDeprecated fails only for a flag not defined or an empty message.
	_ = f.MarkDeprecated(deprecatedTokenFlag, "use --auth-token: in a later release --token will be the local cluster's bearer token, as in kubectl")
	f.StringVar(&t.authURL, "auth-url", "", "with --auth-token: https URL of the provider's authentication server")
	f.StringVar(&t.authCA, "auth-ca", "", "with --auth-token: PEM file of the CA the authentication server's certificate chains to")
	f.BoolVar(&t.noToken, "no-token", false, "instead of --auth-token: send no token, to a provider whose server runs with --allow-empty-token")
	return t
}

// used reports whether the token flow was asked for.
func (t *tokenFlags) used() bool {
	return t.token != "" || t.noToken || t.authURL != "" || t.authCA != ""
}

// authenticateWithToken runs the token flow: the local cluster (the
// consumer) authenticates with the provider's authentication server.
func authenticateWithToken(ctx context.Context, e *env, tf *tokenFlags, local, remote *clusterFlags, alg algorithmFlag, installCRDs, replace bool) error {
	switch {
	case tf.token != "" && tf.noToken:
		return usagef("--auth-token and --no-token exclude each other")
	case tf.token == "" && !tf.noToken:
		return usagef("--auth-token is required with --auth-url and --auth-ca (or --no-token)")
	case tf.authURL == "":
		return usagef("--auth-url is required with --auth-token")
	case tf.authCA == "":
		return usagef("--auth-ca is required with --auth-token: the CA of the authentication server's certificate")
	case remote.clusterID == "":
		return usagef("--remote-cluster-id is required with --auth-token: the provider's cluster ID")
	case remote.kubeconfig != "":
		return usagef("--remote-kubeconfig is not used with --auth-token: the provider is reached through --auth-url")
	}
	if err := clusterid.Validate(remote.clusterID); err != nil {
		return usagef("--remote-cluster-id: %v", err)
	}
	var tok authtoken.Token
	if !tf.noToken {
		var err error
		if tok, err = authtoken.Parse(tf.token); err != nil {
			return usagef("--auth-token: %v", err)
		}
	}
	ca, err := os.ReadFile(tf.authCA)
	if err != nil {
		return fmt.Errorf("reading --auth-ca: %w", err)
	}
	cl, err := local.connect(consumerRole)
	if err != nil {
		return err
	}
	id, err := cl.clusterID(ctx)
	if err != nil {
		return err
	}
	e.consumerID = id
	if err := cl.ensureCRDs(ctx, installCRDs, authv1beta1.IdentityResource); err != nil {
		return err
	}
	reviewer, err := kube.NewIdentityReviewer(nil)
	if err != nil {
		return err
	}
	c, err := cl.consumer(id, reviewer, &consumer.Options{KeyAlgorithm: alg.alg, OnStep: printSteps(e.stderr)})
	if err != nil {
		return err
	}
	ports := authserver.ConsumerPorts{
		Namespaces: kube.NewNamespaces(cl.client),
		Secrets:    kube.NewSecrets(cl.client),
	}
	done, err := authserver.Authenticate(ctx, c, ports,
		authserver.Remote{ProviderID: remote.clusterID, URL: tf.authURL, CA: ca, Token: tok},
		&authserver.AuthenticateOptions{Namespace: cl.namespace, KeyAlgorithm: alg.alg, ReplaceEndpoint: replace})
	if err != nil {
		return err
	}
	printAuthenticated(e.stdout, done)
	return nil
}

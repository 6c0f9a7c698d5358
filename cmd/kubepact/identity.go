package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"strings"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/provider"
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
		cl, p, err := pf.connect(ctx, *apiServerURL, &provider.Options{NonceTTL: *ttl, Policy: policy.policy, OnStep: printSteps(e.stderr), NoFinalizer: true})
		if err != nil {
			return err
		}
		if err := cl.ensureCRDs(ctx, *installCRDs, authv1beta1.TenantResource); err != nil {
			return err
		}
		t := fromFile
		if t == nil {
			if t, err = kube.NewTenantStore(cl.typed).Get(ctx, clusterid.TenantNamespace(pf.consumerID), pf.consumerID); err != nil {
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
	providerID := f.String("remote-cluster-id", "", "ID of the provider cluster the Identity must come from (required)")
	replace := replaceEndpointFlag(f)
	installCRDs := f.Bool("install-crds", false, "install the authentication.liqo.io CRDs first")
	clientCA := f.String("client-ca", "", "PEM bundle of the provider API server's client CAs (its --client-ca-file), which the Identity's certificate must chain to "+
		"(default: no chain check; the Identity's own CA is the server's serving CA, not a client CA)")
	return func(ctx context.Context, e *env, args []string) error {
		path, err := oneArg(args, "the Identity file (or - for standard input)")
		if err != nil {
			return err
		}
		if err := required("remote-cluster-id", *providerID); err != nil {
			return err
		}
		if err := clusterid.Validate(*providerID); err != nil {
			return usagef("--remote-cluster-id: %v", err)
		}
		var clientCAs *x509.CertPool
		if *clientCA != "" {
			if clientCAs, err = readClientCAs(*clientCA); err != nil {
				return err
			}
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
		// Offline: the provider may not be reachable from here.
		c, err := cl.consumer(consumerID, nil, &consumer.Options{OnStep: printSteps(e.stderr)})
		if err != nil {
			return err
		}
		done, err := c.Apply(ctx, *providerID, id, &consumer.ApplyOptions{ReplaceEndpoint: *replace, ClientCAs: clientCAs})
		if err != nil {
			return err
		}
		printAuthenticated(e.stdout, done)
		return nil
	}
}

// maxClientCASize bounds the --client-ca file.
const maxClientCASize = 1 << 20

// readClientCAs reads the PEM bundle of --client-ca: certificates only,
// at least one, each of which parses.
func readClientCAs(path string) (*x509.CertPool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, usagef("--client-ca: %v", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxClientCASize+1))
	if err != nil {
		return nil, usagef("--client-ca: reading %s: %v", path, err)
	}
	if len(data) > maxClientCASize {
		return nil, usagef("--client-ca: %s is larger than %d bytes", path, maxClientCASize)
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := bytes.TrimSpace(data); len(rest) > 0; rest = bytes.TrimSpace(rest) {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		switch {
		case block == nil:
			return nil, usagef("--client-ca: %s holds something else than PEM certificates", path)
		case strings.Contains(block.Type, "PRIVATE"):
			return nil, usagef("--client-ca: %s holds a private key: pass the CA's certificates only, never a key", path)
		case block.Type != "CERTIFICATE":
			return nil, usagef("--client-ca: %s holds a PEM %q block; only CERTIFICATE blocks may be there", path, block.Type)
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, usagef("--client-ca: certificate %d of %s: %v", n+1, path, err)
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 {
		return nil, usagef("--client-ca: %s holds no PEM certificate", path)
	}
	return pool, nil
}

// replaceEndpointFlag registers --replace-endpoint.
func replaceEndpointFlag(f *flags) *bool {
	return f.Bool("replace-endpoint", false, "accept an Identity that changes the API server or CA of the kubeconfig already held for the provider")
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/tenant"
)

// maxManifestSize bounds a Tenant or Identity file.
const maxManifestSize = tenant.MaxObjectSize

// manifest is an object as kubectl apply -f takes it: apiVersion, kind,
// the metadata a user may set, and the spec; no status.
type manifest struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        manifestMeta `json:"metadata"`
	Spec            any          `json:"spec"`
}

type manifestMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func metaOf(m metav1.ObjectMeta) manifestMeta {
	return manifestMeta{Name: m.Name, Namespace: m.Namespace, Labels: m.Labels, Annotations: m.Annotations}
}

func tenantManifest(t *authv1beta1.Tenant) manifest {
	return manifest{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		Metadata: metaOf(t.ObjectMeta),
		Spec:     t.Spec,
	}
}

func identityManifest(id *authv1beta1.Identity) manifest {
	return manifest{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.IdentityKind},
		Metadata: metaOf(id.ObjectMeta),
		Spec:     id.Spec,
	}
}

// outputFormat is the value of -o/--output.
type outputFormat string

func (o *outputFormat) String() string { return string(*o) }

func (o *outputFormat) Set(s string) error {
	if s != "yaml" && s != "json" {
		return fmt.Errorf("%q is not an output format: want yaml or json", s)
	}
	*o = outputFormat(s)
	return nil
}

// outputFlag registers -o/--output, yaml by default.
func outputFlag(f *flags) *outputFormat {
	o := outputFormat("yaml")
	f.Var(&o, "output", "output format: yaml or json")
	f.alias("o", "output")
	return &o
}

// print writes m in format o.
func (o outputFormat) print(w io.Writer, m manifest) error {
	var (
		b   []byte
		err error
	)
	if o == "json" {
		b, err = json.MarshalIndent(m, "", "  ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(m)
	}
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", m.Kind, m.Metadata.Name, err)
	}
	_, err = w.Write(b)
	return err
}

// readInput returns the content of the file path, or of stdin for "-".
func readInput(e *env, path string) ([]byte, error) {
	var r io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, maxManifestSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", inputName(path), err)
	}
	if len(b) > maxManifestSize {
		return nil, fmt.Errorf("reading %s: larger than %d bytes", inputName(path), maxManifestSize)
	}
	return b, nil
}

func inputName(path string) string {
	if path == "-" {
		return "standard input"
	}
	return path
}

// readTenant decodes the Tenant in path (stdin for "-") with tenant.Decode.
func readTenant(e *env, path string) (*authv1beta1.Tenant, error) {
	b, err := readInput(e, path)
	if err != nil {
		return nil, err
	}
	t, err := tenant.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", inputName(path), err)
	}
	return t, nil
}

// readIdentity decodes the Identity in path (stdin for "-") with
// identity.Decode.
func readIdentity(e *env, path string) (*authv1beta1.Identity, error) {
	b, err := readInput(e, path)
	if err != nil {
		return nil, err
	}
	id, err := identity.Decode(b)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", inputName(path), err)
	}
	return id, nil
}

// algorithmFlag is the value of --algorithm: a key type to generate.
type algorithmFlag struct{ alg keys.Algorithm }

var algorithms = map[string]keys.Algorithm{
	"ed25519":    keys.Ed25519,
	"ecdsa-p256": keys.ECDSAP256,
	"rsa-2048":   keys.RSA2048,
}

func (a *algorithmFlag) String() string {
	for name, alg := range algorithms {
		if alg == a.alg {
			return name
		}
	}
	return a.alg.String()
}

func (a *algorithmFlag) Set(s string) error {
	alg, ok := algorithms[strings.ToLower(s)]
	if !ok {
		return fmt.Errorf("%q is not a key algorithm: want ed25519, ecdsa-p256 or rsa-2048", s)
	}
	a.alg = alg
	return nil
}

// policyFlag is the value of --policy: how strictly a provider checks Tenants.
type policyFlag struct{ policy tenant.Policy }

func (p *policyFlag) String() string { return strings.ToLower(p.policy.String()) }

func (p *policyFlag) Set(s string) error {
	switch strings.ToLower(s) {
	case "compatible":
		p.policy = tenant.Compatible
	case "strict":
		p.policy = tenant.Strict
	default:
		return fmt.Errorf("%q is not a policy: want compatible or strict", s)
	}
	return nil
}

// addPolicyFlag registers --policy.
func addPolicyFlag(f *flags) *policyFlag {
	p := &policyFlag{}
	f.Var(p, "policy", "how strictly the provider checks Tenants: compatible (also Liqo consumers) or strict (a kubepact transcript is required)")
	return p
}

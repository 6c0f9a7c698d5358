package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubepact/kubepact/kube"

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

// output is the value of -o/--output: a cli-runtime printer format (yaml,
// json, name, jsonpath=..., go-template=...), or "" for a table.
type output struct {
	format string
	flags  *genericclioptions.PrintFlags
}

func newOutput(format string) *output {
	o := &output{flags: genericclioptions.NewPrintFlags("")}
	o.flags.OutputFormat = &o.format
	o.format = format
	return o
}

func (o *output) String() string { return o.format }

func (o *output) Type() string { return "string" }

// Set takes a format a printer of cli-runtime prints.
func (o *output) Set(s string) error {
	o.format = s
	if _, err := o.printer(); err != nil {
		return err
	}
	return nil
}

// printer returns the printer of the format.
func (o *output) printer() (printers.ResourcePrinter, error) {
	p, err := o.flags.ToPrinter()
	if genericclioptions.IsNoCompatiblePrinterError(err) {
		return nil, fmt.Errorf("%q is not an output format: want one of %s", o.format, strings.Join(o.flags.AllowedFormats(), ", "))
	}
	return p, err
}

// outputFlag registers -o/--output, yaml by default: what the command
// prints is meant for kubectl apply -f.
func outputFlag(f *flags) *output {
	o := newOutput("yaml")
	f.Var(o, "output", "output format: yaml, json, name, jsonpath=TEMPLATE, go-template=TEMPLATE")
	f.alias("o", "output")
	return o
}

// tableOutputFlag registers -o/--output, a table by default.
func tableOutputFlag(f *flags) *output {
	o := newOutput("")
	f.Var(o, "output", "output format: yaml, json, name, jsonpath=TEMPLATE, go-template=TEMPLATE (default a table)")
	f.alias("o", "output")
	return o
}

// print writes m in the output's format.
func (o *output) print(w io.Writer, m manifest) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encoding %s %s: %w", m.Kind, m.Metadata.Name, err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("encoding %s %s: %w", m.Kind, m.Metadata.Name, err)
	}
	return o.printObjects(w, []runtime.Object{u}, false)
}

// printObjects writes objs, typed objects of kube.NewScheme, in the
// output's format: one object alone, else (or with list) a List. Managed
// fields are left out, as kubectl leaves them.
func (o *output) printObjects(w io.Writer, objs []runtime.Object, list bool) error {
	p, err := o.printer()
	if err != nil {
		return err
	}
	scheme, err := kube.NewScheme()
	if err != nil {
		return err
	}
	items := make([]unstructured.Unstructured, 0, len(objs))
	for _, obj := range objs {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			gvks, _, err := scheme.ObjectKinds(obj)
			if err != nil {
				return err
			}
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				return err
			}
			u = &unstructured.Unstructured{Object: m}
			u.SetGroupVersionKind(gvks[0])
		}
		u = u.DeepCopy()
		u.SetManagedFields(nil)
		if ts, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "metadata", "creationTimestamp"); ok && ts == nil {
			unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		}
		items = append(items, *u)
	}
	if len(items) == 1 && !list {
		return p.PrintObj(&items[0], w)
	}
	l := &unstructured.UnstructuredList{Items: items}
	l.SetAPIVersion("v1")
	l.SetKind("List")
	if _, ok := p.(*printers.NamePrinter); ok || strings.HasPrefix(o.format, "name") {
		for i := range items {
			if err := p.PrintObj(&items[i], w); err != nil {
				return err
			}
		}
		return nil
	}
	return p.PrintObj(l, w)
}

// printTable writes a table of columns and rows, as kubectl get does.
func printTable(w io.Writer, columns []string, rows [][]any) error {
	t := &metav1.Table{}
	for _, c := range columns {
		t.ColumnDefinitions = append(t.ColumnDefinitions, metav1.TableColumnDefinition{Name: c, Type: "string"})
	}
	for _, r := range rows {
		t.Rows = append(t.Rows, metav1.TableRow{Cells: r})
	}
	return printers.NewTablePrinter(printers.PrintOptions{}).PrintObj(t, w)
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

func (a *algorithmFlag) Type() string { return "string" }

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

func (p *policyFlag) Type() string { return "string" }

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

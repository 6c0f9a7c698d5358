package kubeconfig_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	mathrand "math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
)

// The fuzz target below runs its seeds as ordinary tests under go test.

func fuzzRand(seed byte) *mathrand.ChaCha8 {
	var s [32]byte
	for i := range s {
		s[i] = seed
	}
	return mathrand.NewChaCha8(s)
}

// fuzzParams returns the parameters of a real kubeconfig, with keys and
// certificates from fixed seeds.
func fuzzParams(f *testing.F) kubeconfig.Params {
	f.Helper()
	caPEM, caKey, err := csr.GenerateCA(fuzzRand(1), "provider-ca", epoch, 24*time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	ca, err := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(epoch), Rand: fuzzRand(2)})
	if err != nil {
		f.Fatal(err)
	}
	key, err := keys.Generate(fuzzRand(3), keys.Ed25519)
	if err != nil {
		f.Fatal(err)
	}
	req, err := csr.Create(nil, key, csr.ControlPlaneSubject(consumerID))
	if err != nil {
		f.Fatal(err)
	}
	checked, err := csr.Check(req, csr.ControlPlanePolicy(consumerID, key.Public()))
	if err != nil {
		f.Fatal(err)
	}
	cert, err := ca.Sign(context.Background(), csr.Request{CSR: checked, Lifetime: time.Hour})
	if err != nil {
		f.Fatal(err)
	}
	return kubeconfig.Params{
		Name: identityName, Server: server, CA: caPEM, Certificate: cert, Key: key,
		Namespace: tenantNS, ProxyURL: proxyURL,
	}
}

// keyDataValue finds the values of client-key-data fields in YAML or JSON.
var keyDataValue = regexp.MustCompile(`client-key-data"?\s*:\s*"?([A-Za-z0-9+/=]{17,})`)

// keyMaterial returns the forms in which the private key material of input
// could show in a message: each client-key-data value that occurs once in
// input (a value repeated elsewhere, say as a user name, is not only a key),
// and the decoded key with its PEM lines.
func keyMaterial(input []byte) []string {
	var out []string
	add := func(s string) {
		if len(s) > 16 {
			out = append(out, s)
		}
	}
	for _, m := range keyDataValue.FindAllSubmatch(input, -1) {
		if bytes.Count(input, m[1]) != 1 {
			continue
		}
		add(string(m[1]))
		if raw, err := base64.StdEncoding.DecodeString(string(m[1])); err == nil {
			add(string(raw))
			for _, line := range strings.Split(string(raw), "\n") {
				add(line)
			}
		}
	}
	return out
}

func FuzzParse(f *testing.F) {
	p := fuzzParams(f)
	minimal := p
	minimal.Namespace, minimal.ProxyURL = "", ""
	for _, params := range []kubeconfig.Params{p, minimal} {
		c, err := kubeconfig.Build(params)
		if err != nil {
			f.Fatal(err)
		}
		data, err := c.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(data[:len(data)-1])
		f.Add(bytes.Replace(data, []byte("current-context: "+identityName), []byte("current-context: missing"), 1))
		f.Add(bytes.Replace(data, []byte("current-context: "+identityName), nil, 1))
		f.Add(bytes.Replace(data, []byte("client-key-data: "), []byte("client-key-data: !"), 1))
		f.Add(bytes.Replace(data, []byte("client-key-data: "), []byte("client-key: /nonexistent\n    client-key-data: "), 1))
		f.Add(bytes.Replace(data, []byte("user: "+identityName), []byte("user: nobody"), 1))
		f.Add(bytes.Replace(data, []byte("apiVersion: v1"), []byte("apiVersion: v2"), 1))
		f.Add(bytes.Replace(data, []byte("kind: Config"), []byte("kind: Secret"), 1))
		f.Add(bytes.Replace(data, []byte(server), []byte("https://client-key-data.example"), 1))
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			f.Fatal(err)
		}
		asJSON, err := json.Marshal(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(asJSON)
	}
	f.Add([]byte(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://a.example", proxy-url: "http://proxy.example"}
users:
- name: u
  user:
    token: abcdefghijklmnopqrstuvwxyz
    exec: {command: /bin/true, apiVersion: client.authentication.k8s.io/v1, interactiveMode: Never}
contexts:
- name: x
  context: {cluster: c, user: u, namespace: ns}
current-context: x
`))
	f.Add([]byte("{}"))
	f.Add([]byte("- 1\n- 2\n"))
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte("#"), kubeconfig.MaxSize+1))

	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := kubeconfig.Parse(data)
		if err != nil {
			if c != nil {
				t.Fatalf("Parse returned a Config and error %q", err)
			}
			if !errors.Is(err, kubeconfig.ErrMalformed) {
				t.Fatalf("Parse error %q does not wrap ErrMalformed", err)
			}
			for _, s := range keyMaterial(data) {
				if strings.Contains(err.Error(), s) {
					t.Fatalf("Parse error %q quotes client key material %q", err, s)
				}
			}
			return
		}

		printed := c.String()
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x"} {
			if got := fmt.Sprintf(verb, c); got != printed {
				t.Fatalf("fmt %s prints %q, String prints %q", verb, got, printed)
			}
		}
		// String prints the server, user and namespace. Key material may
		// show only where one of those fields itself holds it.
		fields := strings.Join([]string{c.Server(), c.User(), c.Namespace()}, "\x00")
		secrets := append(keyMaterial(data), "client-key-data")
		for _, u := range c.API().AuthInfos {
			if len(u.ClientKeyData) > 16 {
				secrets = append(secrets, string(u.ClientKeyData), base64.StdEncoding.EncodeToString(u.ClientKeyData))
				for _, line := range strings.Split(string(u.ClientKeyData), "\n") {
					if len(line) > 16 {
						secrets = append(secrets, line)
					}
				}
			}
		}
		for _, s := range secrets {
			if strings.Contains(printed, s) && !strings.Contains(fields, s) {
				t.Fatalf("String %q shows client key material %q", printed, s)
			}
		}

		out, err := c.Marshal()
		if err != nil {
			t.Fatalf("Marshal of a parsed kubeconfig: %v", err)
		}
		again, err := kubeconfig.Parse(out)
		if err != nil {
			t.Fatalf("a marshalled kubeconfig does not parse: %v\n%s", err, out)
		}
		if again.Server() != c.Server() || again.ProxyURL() != c.ProxyURL() || again.Namespace() != c.Namespace() || again.User() != c.User() {
			t.Fatalf("round trip changed %v into %v", c, again)
		}
		api, api2 := c.API(), again.API()
		if api.CurrentContext != api2.CurrentContext {
			t.Fatalf("round trip changed the current context %q into %q", api.CurrentContext, api2.CurrentContext)
		}
		user, user2 := api.AuthInfos[api.Contexts[api.CurrentContext].AuthInfo], api2.AuthInfos[api2.Contexts[api2.CurrentContext].AuthInfo]
		if (user == nil) != (user2 == nil) {
			t.Fatalf("round trip changed whether the current context has a user")
		}
		if user != nil && (!bytes.Equal(user.ClientKeyData, user2.ClientKeyData) || !bytes.Equal(user.ClientCertificateData, user2.ClientCertificateData)) {
			t.Fatalf("round trip changed the client credentials")
		}
	})
}

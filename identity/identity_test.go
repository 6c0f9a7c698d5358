package identity_test

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clocktesting "k8s.io/utils/clock/testing"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
)

const (
	providerID = "cl-provider"
	consumerID = "cl-consumer"
)

var epoch = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

type fixture struct {
	key   *keys.PrivateKey
	ca    *csr.LocalCA
	cert  []byte
	other *csr.LocalCA
}

func newCA(t *testing.T, name string) *csr.LocalCA {
	t.Helper()
	caPEM, caKey, err := csr.GenerateCA(nil, name, epoch, 10*365*24*time.Hour)
	require.NoError(t, err)
	ca, err := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(epoch)})
	require.NoError(t, err)
	return ca
}

func issue(t *testing.T, ca *csr.LocalCA, key *keys.PrivateKey, cn string, lifetime time.Duration) []byte {
	t.Helper()
	req, err := csr.Create(nil, key, csr.ControlPlaneSubject(cn))
	require.NoError(t, err)
	checked, err := csr.Check(req, csr.ControlPlanePolicy(cn, key.Public()))
	require.NoError(t, err)
	cert, err := ca.Sign(context.Background(), csr.Request{CSR: checked, Lifetime: lifetime})
	require.NoError(t, err)
	return cert
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	key, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	ca := newCA(t, "provider-ca")
	return fixture{key: key, ca: ca, cert: issue(t, ca, key, consumerID, time.Hour), other: newCA(t, "other-ca")}
}

func (f fixture) identity(t *testing.T) *authv1beta1.Identity {
	t.Helper()
	id, err := identity.Build(providerID, authv1beta1.AuthParams{
		CA: f.ca.Certificate(), SignedCRT: f.cert, APIServer: "https://provider.example:6443",
	}, &identity.BuildOptions{TenantNamespace: clusterid.TenantNamespace(consumerID)})
	require.NoError(t, err)
	return id
}

func TestBuild(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.identity(t)
	require.Equal(t, "controlplane-cl-provider", id.Name)
	require.Equal(t, "liqo-tenant-cl-provider", id.Namespace)
	require.Equal(t, map[string]string{"liqo.io/remote-cluster-id": providerID}, id.Labels)
	require.Equal(t, authv1beta1.ControlPlaneIdentityType, id.Spec.Type)
	require.Equal(t, providerID, id.Spec.ClusterID)
	require.Equal(t, "liqo-tenant-cl-consumer", *id.Spec.Namespace)
	require.Equal(t, "resourceslice-slice-a", identity.ResourceSliceName("slice-a"))
}

func TestBuildRejects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	good := authv1beta1.AuthParams{CA: f.ca.Certificate(), SignedCRT: f.cert, APIServer: "https://p.example"}
	tests := []struct {
		name       string
		providerID string
		mutate     func(*authv1beta1.AuthParams)
		want       error
	}{
		{"invalid provider ID", "Provider", func(*authv1beta1.AuthParams) {}, clusterid.ErrInvalid},
		{"http API server", providerID, func(p *authv1beta1.AuthParams) { p.APIServer = "http://p.example" }, identity.ErrInvalidServer},
		{"unix API server", providerID, func(p *authv1beta1.AuthParams) { p.APIServer = "unix:///run/k8s.sock" }, identity.ErrInvalidServer},
		{"no API server", providerID, func(p *authv1beta1.AuthParams) { p.APIServer = "" }, identity.ErrInvalidServer},
		{"no certificate", providerID, func(p *authv1beta1.AuthParams) { p.SignedCRT = nil }, identity.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			params := *good.DeepCopy()
			tt.mutate(&params)
			_, err := identity.Build(tt.providerID, params, nil)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cert, err := identity.Verify(f.identity(t), consumerID, f.key.Public(), epoch, nil)
	require.NoError(t, err)
	require.Equal(t, consumerID, cert.Subject.CommonName)
	require.Equal(t, []string{"liqo.io"}, cert.Subject.Organization)
}

func TestVerifyWithClientCAs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.identity(t)
	id.Spec.AuthParams.CA = f.other.Certificate() // serving CA differs from the client CA
	pool := x509.NewCertPool()
	require.True(t, pool.AppendCertsFromPEM(f.ca.Certificate()))
	_, err := identity.Verify(id, consumerID, f.key.Public(), epoch, &identity.VerifyOptions{ClientCAs: pool})
	require.NoError(t, err)

	// Without ClientCAs, spec.authParams.ca is not taken for the client CA.
	_, err = identity.Verify(id, consumerID, f.key.Public(), epoch, nil)
	require.NoError(t, err)

	wrong := x509.NewCertPool()
	require.True(t, wrong.AppendCertsFromPEM(f.other.Certificate()))
	_, err = identity.Verify(id, consumerID, f.key.Public(), epoch, &identity.VerifyOptions{ClientCAs: wrong})
	require.ErrorIs(t, err, identity.ErrUntrusted)
}

func TestVerifyRejects(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	otherKey, err := keys.Generate(nil, keys.Ed25519)
	require.NoError(t, err)
	tests := []struct {
		name   string
		mutate func(*authv1beta1.Identity)
		pub    *keys.PrivateKey
		now    time.Time
		want   error
	}{
		{"expired", func(*authv1beta1.Identity) {}, f.key, epoch.Add(2 * time.Hour), identity.ErrExpired},
		{"not yet valid", func(*authv1beta1.Identity) {}, f.key, epoch.Add(-time.Hour), identity.ErrNotYetValid},
		{"certificate for another key", func(*authv1beta1.Identity) {}, otherKey, epoch, identity.ErrKeyMismatch},
		{"certificate for another consumer", func(id *authv1beta1.Identity) {
			id.Spec.AuthParams.SignedCRT = issue(t, f.ca, f.key, "cl-someone-else", time.Hour)
		}, f.key, epoch, identity.ErrSubject},
		{"certificate not PEM", func(id *authv1beta1.Identity) {
			id.Spec.AuthParams.SignedCRT = []byte("garbage")
		}, f.key, epoch, identity.ErrMalformed},
		{"certificate truncated", func(id *authv1beta1.Identity) {
			id.Spec.AuthParams.SignedCRT = id.Spec.AuthParams.SignedCRT[:120]
		}, f.key, epoch, identity.ErrMalformed},
		{"CA not PEM", func(id *authv1beta1.Identity) {
			id.Spec.AuthParams.CA = []byte("garbage")
		}, f.key, epoch, identity.ErrMalformed},
		{"http API server", func(id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "http://provider.example:6443"
		}, f.key, epoch, identity.ErrInvalidServer},
		{"unix API server", func(id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "unix:///var/run/kubernetes.sock"
		}, f.key, epoch, identity.ErrInvalidServer},
		{"API server without host", func(id *authv1beta1.Identity) {
			id.Spec.AuthParams.APIServer = "https:///api"
		}, f.key, epoch, identity.ErrInvalidServer},
		{"proxy URL not http", func(id *authv1beta1.Identity) {
			proxy := "socks5://proxy.example:1080"
			id.Spec.AuthParams.ProxyURL = &proxy
		}, f.key, epoch, identity.ErrMalformed},
		{"proxy URL without host", func(id *authv1beta1.Identity) {
			proxy := "http://"
			id.Spec.AuthParams.ProxyURL = &proxy
		}, f.key, epoch, identity.ErrMalformed},
		{"CA over the size limit", func(id *authv1beta1.Identity) {
			ca := id.Spec.AuthParams.CA
			id.Spec.AuthParams.CA = bytes.Repeat(ca, csr.MaxCertificateSize/len(ca)+1)
		}, f.key, epoch, identity.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := f.identity(t)
			tt.mutate(id)
			_, err := identity.Verify(id, consumerID, tt.pub.Public(), tt.now, nil)
			require.ErrorIs(t, err, tt.want)
		})
	}
}

// TestVerifySubjectOption: with VerifyOptions.Subject, the certificate must
// carry that subject, and the ControlPlane subject is refused.
func TestVerifySubjectOption(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	id := f.identity(t)
	want := csr.ResourceSliceSubject(consumerID, "slice-a")
	_, err := identity.Verify(id, consumerID, f.key.Public(), epoch, &identity.VerifyOptions{Subject: &want})
	require.ErrorIs(t, err, identity.ErrSubject)
	cp := csr.ControlPlaneSubject(consumerID)
	_, err = identity.Verify(id, consumerID, f.key.Public(), epoch, &identity.VerifyOptions{Subject: &cp})
	require.NoError(t, err)
}

func TestValidateServer(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{
		"https://provider.example:6443",
		"https://provider.example",
		"https://10.0.0.1:6443",
		"https://[fd00::1]:6443",
		"https://rancher.example/k8s/clusters/c-abc", // a path, as behind an API proxy
	} {
		require.NoError(t, identity.ValidateServer(ok), ok)
	}
	for _, bad := range []string{
		"",
		"provider.example:6443",
		"//provider.example:6443",
		"http://provider.example:6443",
		"unix:///var/run/kubernetes.sock",
		"file:///etc/kubernetes/admin.conf",
		"https://",
		"https:///api",
		"https://:6443",
		"https:provider.example",
		"HTTPS//provider.example",
		"https://provider.example:port",
		"https://user:secret@provider.example",
		"https://provider.example/?x=1",
		"https://provider.example/#frag",
		"https://provider.example:6443\n",
		" https://provider.example",
		"user:secret@provider.example:6443", // opaque: Redacted would keep the password
		"https:secret@provider.example",
	} {
		err := identity.ValidateServer(bad)
		require.ErrorIs(t, err, identity.ErrInvalidServer, bad)
		require.ErrorIs(t, err, identity.ErrMalformed, bad)
		require.NotContains(t, err.Error(), "secret", "user information is never quoted")
	}
}

func TestCheckProvider(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	require.NoError(t, identity.CheckProvider(f.identity(t), providerID))
	tests := []struct {
		name       string
		providerID string
		mutate     func(*authv1beta1.Identity)
		want       error
	}{
		{"another provider expected", "cl-other", func(*authv1beta1.Identity) {}, identity.ErrWrongProvider},
		{"spec names another provider", providerID, func(id *authv1beta1.Identity) { id.Spec.ClusterID = "cl-other" }, identity.ErrWrongProvider},
		{"no provider in spec", providerID, func(id *authv1beta1.Identity) { id.Spec.ClusterID = "" }, identity.ErrWrongProvider},
		{"invalid expected provider", "Provider", func(*authv1beta1.Identity) {}, clusterid.ErrInvalid},
		{"ResourceSlice type", providerID, func(id *authv1beta1.Identity) { id.Spec.Type = authv1beta1.ResourceSliceIdentityType }, identity.ErrMalformed},
		{"another name", providerID, func(id *authv1beta1.Identity) { id.Name = "controlplane-cl-other" }, identity.ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := f.identity(t)
			tt.mutate(id)
			require.ErrorIs(t, identity.CheckProvider(id, tt.providerID), tt.want)
		})
	}
}

func ExampleValidateServer() {
	for _, server := range []string{"https://provider.example:6443", "http://provider.example:6443", "unix:///run/kube.sock"} {
		err := identity.ValidateServer(server)
		fmt.Println(server, errors.Is(err, identity.ErrInvalidServer))
	}
	// Output:
	// https://provider.example:6443 false
	// http://provider.example:6443 true
	// unix:///run/kube.sock true
}

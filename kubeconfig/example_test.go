package kubeconfig_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
)

// exampleCredentials returns a provider CA, and a consumer key with a client
// certificate for "cl-consumer" issued under that CA.
func exampleCredentials() (caPEM, certPEM []byte, key *keys.PrivateKey) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	caPEM, caKey, err := csr.GenerateCA(nil, "provider-ca", now, 365*24*time.Hour)
	if err != nil {
		panic(err)
	}
	ca, err := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(now)})
	if err != nil {
		panic(err)
	}
	key, err = keys.Generate(nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	req, err := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))
	if err != nil {
		panic(err)
	}
	checked, err := csr.Check(req, csr.ControlPlanePolicy("cl-consumer", key.Public()))
	if err != nil {
		panic(err)
	}
	certPEM, err = ca.Sign(context.Background(), csr.Request{CSR: checked, Lifetime: 24 * time.Hour})
	if err != nil {
		panic(err)
	}
	return caPEM, certPEM, key
}

func ExampleBuild() {
	caPEM, certPEM, key := exampleCredentials()
	c, err := kubeconfig.Build(kubeconfig.Params{
		Name:        "controlplane-cl-provider",
		Server:      "https://provider.example:6443",
		CA:          caPEM,
		Certificate: certPEM,
		Key:         key,
		Namespace:   "liqo-tenant-cl-consumer",
	})
	if err != nil {
		panic(err)
	}
	// A Config prints without its key.
	fmt.Println(c)

	_, err = kubeconfig.Build(kubeconfig.Params{Name: "incomplete"})
	fmt.Println(errors.Is(err, kubeconfig.ErrInvalid))
	// Output:
	// kubeconfig(server=https://provider.example:6443 user=cl-consumer namespace=liqo-tenant-cl-consumer)
	// true
}

func ExampleConfig_Marshal() {
	caPEM, certPEM, key := exampleCredentials()
	c, _ := kubeconfig.Build(kubeconfig.Params{
		Name: "controlplane-cl-provider", Server: "https://provider.example:6443",
		CA: caPEM, Certificate: certPEM, Key: key,
	})
	data, err := c.Marshal() // secret: it holds the private key
	if err != nil {
		panic(err)
	}
	parsed, err := kubeconfig.Parse(data)
	if err != nil {
		panic(err)
	}
	fmt.Println(parsed.Server(), parsed.User())
	// Output: https://provider.example:6443 cl-consumer
}

func ExampleParse() {
	_, err := kubeconfig.Parse([]byte("apiVersion: v1\nkind: Config\n"))
	fmt.Println(errors.Is(err, kubeconfig.ErrMalformed))
	// Output: true
}

func ExampleFromIdentity() {
	caPEM, certPEM, key := exampleCredentials()
	id := &authv1beta1.Identity{
		ObjectMeta: metav1.ObjectMeta{Name: "controlplane-cl-provider", Namespace: "liqo-tenant-cl-provider"},
		Spec: authv1beta1.IdentitySpec{
			ClusterID: "cl-provider",
			Type:      authv1beta1.ControlPlaneIdentityType,
			AuthParams: authv1beta1.AuthParams{
				CA: caPEM, SignedCRT: certPEM, APIServer: "https://provider.example:6443",
				ProxyURL: ptr.To("http://proxy.example:3128"),
			},
			Namespace: ptr.To("liqo-tenant-cl-consumer"),
		},
	}
	c, err := kubeconfig.FromIdentity(id, key)
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Server(), c.ProxyURL(), c.Namespace(), c.User())
	// Output: https://provider.example:6443 http://proxy.example:3128 liqo-tenant-cl-consumer cl-consumer
}

func ExampleConfig_RESTConfig() {
	caPEM, certPEM, key := exampleCredentials()
	c, _ := kubeconfig.Build(kubeconfig.Params{
		Name: "controlplane-cl-provider", Server: "https://provider.example:6443",
		CA: caPEM, Certificate: certPEM, Key: key,
	})
	rc, err := c.RESTConfig()
	if err != nil {
		panic(err)
	}
	fmt.Println(rc.Host, len(rc.CAData) > 0, len(rc.CertData) > 0, len(rc.KeyData) > 0)
	// Output: https://provider.example:6443 true true true
}

func ExampleSecret() {
	id := &authv1beta1.Identity{
		ObjectMeta: metav1.ObjectMeta{Name: "controlplane-cl-provider", Namespace: "liqo-tenant-cl-provider", UID: types.UID("8c1d")},
		Spec: authv1beta1.IdentitySpec{
			ClusterID: "cl-provider",
			Type:      authv1beta1.ControlPlaneIdentityType,
			Namespace: ptr.To("liqo-tenant-cl-consumer"),
		},
	}
	s := kubeconfig.Secret(id, []byte("kubeconfig bytes from Config.Marshal"))
	fmt.Println(s.Namespace, s.Name)
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		fmt.Println(k, s.Labels[k])
	}
	fmt.Println(s.Annotations[kubeconfig.RemoteTenantNamespaceAnnotation])
	fmt.Println(s.OwnerReferences[0].Kind, s.OwnerReferences[0].Name, *s.OwnerReferences[0].Controller)
	_, ok := s.Data[kubeconfig.SecretKey]
	fmt.Println(ok)
	// Output:
	// liqo-tenant-cl-provider kubeconfig-controlplane-cl-provider
	// liqo.io/identity-type ControlPlane
	// liqo.io/remote-cluster-id cl-provider
	// liqo-tenant-cl-consumer
	// Identity controlplane-cl-provider true
	// true
}

func ExampleSecretName() {
	fmt.Println(kubeconfig.SecretName("controlplane-cl-provider"))
	// Output: kubeconfig-controlplane-cl-provider
}

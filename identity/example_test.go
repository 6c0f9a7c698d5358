package identity_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	clocktesting "k8s.io/utils/clock/testing"
)

func ExampleBuild() {
	// The provider signs the consumer's CSR with its CA...
	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	caPEM, caKey, _ := csr.GenerateCA(nil, "provider-ca", now, 24*time.Hour)
	ca, _ := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: clocktesting.NewFakePassiveClock(now)})
	key, _ := keys.Generate(nil, keys.Ed25519)
	req, _ := csr.Create(nil, key, csr.ControlPlaneSubject("cl-consumer"))
	checked, _ := csr.Check(req, csr.ControlPlanePolicy("cl-consumer", key.Public()))
	cert, _ := ca.Sign(context.Background(), csr.Request{CSR: checked, Lifetime: time.Hour})

	// ...and returns an Identity carrying the certificate.
	id, err := identity.Build("cl-provider", authv1beta1.AuthParams{
		CA: ca.Certificate(), SignedCRT: cert, APIServer: "https://provider.example:6443",
	}, &identity.BuildOptions{TenantNamespace: "liqo-tenant-cl-consumer"})
	if err != nil {
		panic(err)
	}
	fmt.Println(id.Namespace+"/"+id.Name, id.Spec.Type, *id.Spec.Namespace)

	// The consumer checks it against its own key before using it.
	c, err := identity.Verify(id, "cl-consumer", key.Public(), now, nil)
	fmt.Println(c.Subject.CommonName, c.Subject.Organization, err)

	other, _ := keys.Generate(nil, keys.Ed25519)
	_, err = identity.Verify(id, "cl-consumer", other.Public(), now, nil)
	fmt.Println(errors.Is(err, identity.ErrKeyMismatch))
	// Output:
	// liqo-tenant-cl-provider/controlplane-cl-provider ControlPlane liqo-tenant-cl-consumer
	// cl-consumer [liqo.io] <nil>
	// true
}

func ExampleControlPlaneName() {
	fmt.Println(identity.ControlPlaneName("cl-provider"))
	fmt.Println(identity.ResourceSliceName("slice-a"))
	// Output:
	// controlplane-cl-provider
	// resourceslice-slice-a
}

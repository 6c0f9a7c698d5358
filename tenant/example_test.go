package tenant_test

import (
	"errors"
	"fmt"

	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

func ExampleBuild() {
	key, _ := keys.Generate(nil, keys.Ed25519) // the consumer's cluster key
	n, _ := nonce.Generate(nil)                // issued by the provider

	t, err := tenant.Build("cl-consumer", key, n, &tenant.BuildOptions{ProxyURL: "https://proxy.example"})
	if err != nil {
		panic(err)
	}
	fmt.Println(t.Namespace + "/" + t.Name)
	fmt.Println(t.Spec.ClusterID, t.Spec.AuthzPolicy, t.Spec.TenantCondition, *t.Spec.ProxyURL)
	fmt.Println("signature bytes:", len(t.Spec.Signature))
	// Output:
	// liqo-tenant-cl-consumer/cl-consumer
	// cl-consumer KeysExchange Active https://proxy.example
	// signature bytes: 64
}

func ExampleVerify() {
	key, _ := keys.Generate(nil, keys.Ed25519)
	n, _ := nonce.Generate(nil)
	t, _ := tenant.Build("cl-consumer", key, n, nil)

	v, err := tenant.Verify(t, n, nil)
	fmt.Println(v.ClusterID, v.CSR.Subject().CommonName, v.CSR.Subject().Organization, err)

	other, _ := nonce.Generate(nil)
	_, err = tenant.Verify(t, other, nil)
	var fe *tenant.FieldError
	fmt.Println(errors.As(err, &fe), fe.Field, errors.Is(err, keys.ErrBadSignature))
	// Output:
	// cl-consumer cl-consumer [liqo.io] <nil>
	// true spec.signature true
}

func ExampleValidate() {
	key, _ := keys.Generate(nil, keys.Ed25519)
	n, _ := nonce.Generate(nil)
	t, _ := tenant.Build("cl-consumer", key, n, nil)
	t.Spec.ClusterID = "Not_A_Label"

	_, err := tenant.Validate(t)
	fmt.Println(err)
	// Output:
	// tenant "cl-consumer" rejected: spec.clusterID: invalid cluster ID "Not_A_Label": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')
}

func ExampleNamespace() {
	ns := tenant.Namespace("cl-provider")
	fmt.Println(ns.Name, ns.Labels)
	// Output:
	// liqo-tenant-cl-provider map[liqo.io/remote-cluster-id:cl-provider liqo.io/tenant-namespace:true]
}

func ExampleCheckNamespace() {
	ns := tenant.Namespace("cl-provider")
	fmt.Println(tenant.CheckNamespace(ns, "cl-provider"))

	// A namespace of the right name that nobody labelled for the peer.
	ns.Labels = nil
	err := tenant.CheckNamespace(ns, "cl-provider")
	var nerr *tenant.NamespaceError
	fmt.Println(errors.Is(err, tenant.ErrNotTenantNamespace), errors.As(err, &nerr) && nerr.Label == tenant.NamespaceLabel)
	// Output:
	// <nil>
	// true true
}

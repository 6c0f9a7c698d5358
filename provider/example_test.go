package provider_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/memory"
)

// newExampleClusters returns a provider and a consumer over in-memory ports.
func newExampleClusters() (*provider.Provider, *consumer.Consumer) {
	pc, err := memory.NewCluster("cl-provider", &memory.ClusterOptions{Server: "https://provider.example:6443"})
	if err != nil {
		panic(err)
	}
	cc, err := memory.NewCluster("cl-consumer", nil)
	if err != nil {
		panic(err)
	}
	prov, err := provider.New("cl-provider", pc.Endpoint(), pc.ProviderPorts(), nil)
	if err != nil {
		panic(err)
	}
	cons, err := consumer.New("cl-consumer", cc.ConsumerPorts(), nil)
	if err != nil {
		panic(err)
	}
	return prov, cons
}

// The four steps of Authenticate, one by one, as when the Tenant and the
// Identity travel between clusters as files.
func ExampleProvider_Accept() {
	ctx := context.Background()
	prov, cons := newExampleClusters()

	n, err := prov.IssueNonce(ctx, cons.ClusterID())
	if err != nil {
		panic(err)
	}
	t, err := cons.Tenant(ctx, prov.ClusterID(), n, nil)
	if err != nil {
		panic(err)
	}
	id, err := prov.Accept(ctx, t)
	if err != nil {
		panic(err)
	}
	done, err := cons.Apply(ctx, prov.ClusterID(), id, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("tenant:", t.Namespace+"/"+t.Name)
	fmt.Println("identity:", id.Name, id.Spec.Type)
	fmt.Println("kubeconfig:", done.Kubeconfig)

	// The nonce was redeemed, and stays bound to the consumer's key: a
	// Tenant of another key signed over it is refused.
	intruder, err := keys.Generate(nil, keys.Ed25519)
	if err != nil {
		panic(err)
	}
	replay, err := tenant.Build("cl-consumer", intruder, n, nil)
	if err != nil {
		panic(err)
	}
	_, err = prov.Accept(ctx, replay)
	fmt.Println("replay refused:", errors.Is(err, nonce.ErrRedeemed))
	// Output:
	// tenant: liqo-tenant-cl-consumer/cl-consumer
	// identity: controlplane-cl-provider ControlPlane
	// kubeconfig: kubeconfig(server=https://provider.example:6443 user=cl-consumer namespace=liqo-tenant-cl-consumer)
	// replay refused: true
}

// A Tenant tampered with in transit: the step that failed, with
// errors.As.
func ExampleProvider_Accept_tampered() {
	ctx := context.Background()
	prov, cons := newExampleClusters()
	n, _ := prov.IssueNonce(ctx, cons.ClusterID())
	t, _ := cons.Tenant(ctx, prov.ClusterID(), n, nil)
	t.Spec.Signature[0] ^= 1 // tampered in transit

	_, err := prov.Accept(ctx, t)
	var se *step.Error
	if errors.As(err, &se) {
		fmt.Println("failed step:", se.Step)
	}
	fmt.Println(err)
	// Output:
	// failed step: Tenant correctly applied on provider cluster
	// kubepact: applying the Tenant on the provider: tenant "cl-consumer" rejected: spec.signature: nonce signature: signature does not verify
}

// Authenticate's handshake, composed from the sessions it runs on: each
// side's requests that do not depend on the other's go at once, as in
// Authenticate.
func ExampleProvider_Session() {
	ctx := context.Background()
	prov, cons := newExampleClusters()

	cs := cons.Session(ctx, prov.ClusterID())
	defer cs.Close()
	ps := prov.Session(ctx, cons.ClusterID())
	defer ps.Close()

	n, err := ps.IssueNonce(ctx)
	if err != nil {
		panic(err)
	}
	t, err := cs.Tenant(ctx, n, &consumer.TenantOptions{OwnKey: true})
	if err != nil {
		panic(err)
	}
	id, err := ps.Accept(ctx, t)
	if err != nil {
		panic(err)
	}
	done, err := cs.Apply(ctx, id, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("user:", done.Kubeconfig.User())
	// Output:
	// user: cl-consumer
}

func ExampleProvider_Drain() {
	ctx := context.Background()
	prov, cons := newExampleClusters()
	if _, err := kubepact.Authenticate(ctx, cons, prov, nil); err != nil {
		panic(err)
	}

	fmt.Println("cordon:", prov.Cordon(ctx, cons.ClusterID()))
	err := prov.Cordon(ctx, cons.ClusterID())
	fmt.Println("cordon again refused:", errors.Is(err, lifecycle.ErrTransition))
	fmt.Println("drain:", prov.Drain(ctx, cons.ClusterID()))

	// A drained consumer is not bound again, even once its Tenant is gone,
	// while its certificates may be valid; the administrator may readmit it.
	fmt.Println("forget:", prov.Forget(ctx, cons.ClusterID()))
	_, err = kubepact.Authenticate(ctx, cons, prov, nil)
	fmt.Println("authenticate refused:", errors.Is(err, lifecycle.ErrRevoked))
	fmt.Println("readmit:", prov.Readmit(ctx, cons.ClusterID()))
	_, err = kubepact.Authenticate(ctx, cons, prov, nil)
	fmt.Println("authenticate:", err)
	// Output:
	// cordon: <nil>
	// cordon again refused: true
	// drain: <nil>
	// forget: <nil>
	// authenticate refused: true
	// readmit: <nil>
	// authenticate: <nil>
}

// A slice after the handshake: the consumer builds it, the replicator
// (here: a copy) carries its spec to the provider's tenant namespace for
// the consumer, the provider judges it, and the consumer turns the status
// into the slice's Identity.
func ExampleProvider_AcceptSlice() {
	ctx := context.Background()
	prov, cons := newExampleClusters()
	if _, err := kubepact.Authenticate(ctx, cons, prov, nil); err != nil {
		fmt.Println(err)
		return
	}
	local, err := cons.Slice(ctx, "cl-provider", "slice-a", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	remote := local.DeepCopy()
	remote.Namespace, remote.Labels = clusterid.TenantNamespace("cl-consumer"), resourceslice.ProviderLabels("cl-consumer")

	status, err := prov.AcceptSlice(ctx, remote)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range status.Conditions {
		fmt.Println(c.Type, c.Status, c.Reason)
	}
	local.Status = *status
	done, err := cons.ApplySliceIdentity(ctx, local, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("identity:", done.Identity.Name, done.Identity.Spec.Type)
	fmt.Println("secret:  ", done.Secret.Name)
	fmt.Println("user:    ", done.Kubeconfig.User())
	// Output:
	// Authentication Accepted ResourceSliceAuthenticationAccepted
	// Resources Accepted ResourceSliceResourcesAccepted
	// identity: resourceslice-slice-a ResourceSlice
	// secret:   kubeconfig-resourceslice-slice-a
	// user:     slice-a-573ffa690333
}

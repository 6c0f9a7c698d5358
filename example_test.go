package kubepact_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/memory"
)

// newExampleClusters returns a provider and a consumer over in-memory ports.
func newExampleClusters() (*kubepact.Provider, *kubepact.Consumer) {
	pc, err := memory.NewCluster("cl-provider", &memory.ClusterOptions{Server: "https://provider.example:6443"})
	if err != nil {
		panic(err)
	}
	cc, err := memory.NewCluster("cl-consumer", nil)
	if err != nil {
		panic(err)
	}
	provider, err := kubepact.NewProvider("cl-provider", pc.Endpoint(), pc.ProviderPorts(), nil)
	if err != nil {
		panic(err)
	}
	consumer, err := kubepact.NewConsumer("cl-consumer", cc.ConsumerPorts(), nil)
	if err != nil {
		panic(err)
	}
	return provider, consumer
}

func ExampleAuthenticate() {
	ctx := context.Background()
	provider, consumer := newExampleClusters()

	done, err := kubepact.Authenticate(ctx, consumer, provider, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("identity:", done.Identity.Namespace+"/"+done.Identity.Name)
	fmt.Println("secret:  ", done.Identity.Status.KubeconfigSecretRef.Name)
	fmt.Println("server:  ", done.Kubeconfig.Server())
	fmt.Println("user:    ", done.Kubeconfig.User())
	fmt.Println("ns:      ", done.Kubeconfig.Namespace())
	// Output:
	// identity: liqo-tenant-cl-provider/controlplane-cl-provider
	// secret:   kubeconfig-controlplane-cl-provider
	// server:   https://provider.example:6443
	// user:     cl-consumer
	// ns:       liqo-tenant-cl-consumer
}

// The four steps of Authenticate, one by one, as when the Tenant and the
// Identity travel between clusters as files.
func ExampleProvider_Accept() {
	ctx := context.Background()
	provider, consumer := newExampleClusters()

	n, err := provider.IssueNonce(ctx, consumer.ClusterID())
	if err != nil {
		panic(err)
	}
	t, err := consumer.Tenant(ctx, provider.ClusterID(), n, nil)
	if err != nil {
		panic(err)
	}
	id, err := provider.Accept(ctx, t)
	if err != nil {
		panic(err)
	}
	done, err := consumer.Apply(ctx, provider.ClusterID(), id, nil)
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
	_, err = provider.Accept(ctx, replay)
	fmt.Println("replay refused:", errors.Is(err, nonce.ErrRedeemed))
	// Output:
	// tenant: liqo-tenant-cl-consumer/cl-consumer
	// identity: controlplane-cl-provider ControlPlane
	// kubeconfig: kubeconfig(server=https://provider.example:6443 user=cl-consumer namespace=liqo-tenant-cl-consumer)
	// replay refused: true
}

// An Identity that would move the kubeconfig already held to another API
// server is refused unless the caller says the move is meant.
func ExampleConsumer_Apply() {
	ctx := context.Background()
	provider, consumer := newExampleClusters()
	done, err := kubepact.Authenticate(ctx, consumer, provider, nil)
	if err != nil {
		panic(err)
	}

	moved := done.Identity.DeepCopy()
	moved.Spec.AuthParams.APIServer = "https://elsewhere.example:6443"
	_, err = consumer.Apply(ctx, provider.ClusterID(), moved, nil)
	fmt.Println("refused:", errors.Is(err, kubepact.ErrEndpointChanged))
	_, err = consumer.Apply(ctx, "cl-other", done.Identity, nil)
	fmt.Println("wrong provider:", errors.Is(err, identity.ErrWrongProvider))

	done, err = consumer.Apply(ctx, provider.ClusterID(), moved, &kubepact.ApplyOptions{ReplaceEndpoint: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("server:", done.Kubeconfig.Server())
	// Output:
	// refused: true
	// wrong provider: true
	// server: https://elsewhere.example:6443
}

func mustTenant(c *kubepact.Consumer, p *kubepact.Provider, n nonce.Nonce) *authv1beta1.Tenant {
	t, err := c.Tenant(context.Background(), p.ClusterID(), n, &kubepact.TenantOptions{ProxyURL: "http://proxy.example:3128"})
	if err != nil {
		panic(err)
	}
	return t
}

func ExampleUnauthenticate() {
	ctx := context.Background()
	provider, consumer := newExampleClusters()
	if _, err := kubepact.Authenticate(ctx, consumer, provider, nil); err != nil {
		panic(err)
	}
	fmt.Println(kubepact.Unauthenticate(ctx, consumer, provider))
	// Output:
	// <nil>
}

// A Tenant tampered with in transit: the step that failed, with
// errors.As.
func ExampleProvider_Accept_tampered() {
	ctx := context.Background()
	provider, consumer := newExampleClusters()
	n, _ := provider.IssueNonce(ctx, consumer.ClusterID())
	t, _ := consumer.Tenant(ctx, provider.ClusterID(), n, nil)
	t.Spec.Signature[0] ^= 1 // tampered in transit

	_, err := provider.Accept(ctx, t)
	var se *step.Error
	if errors.As(err, &se) {
		fmt.Println("failed step:", se.Step)
	}
	fmt.Println(err)
	// Output:
	// failed step: Tenant correctly applied on provider cluster
	// kubepact: step "Tenant correctly applied on provider cluster" failed: tenant "cl-consumer" rejected: spec.signature: nonce signature: signature does not verify
}

// A consumer's controller builds the Tenant for a tool that may not read
// the cluster key: BuildTenant writes neither the tenant namespace nor the
// signed-nonce Secret, and the Tenant is accepted as Tenant's is.
func ExampleConsumer_BuildTenant() {
	ctx := context.Background()
	provider, consumer := newExampleClusters()

	n, err := provider.IssueNonce(ctx, consumer.ClusterID())
	if err != nil {
		panic(err)
	}
	t, err := consumer.BuildTenant(ctx, provider.ClusterID(), n, nil)
	if err != nil {
		panic(err)
	}
	v, err := tenant.Verify(t, n, &tenant.VerifyOptions{ProviderID: provider.ClusterID(), Policy: tenant.Strict})
	if err != nil {
		panic(err)
	}
	fmt.Println("transcript:", v.Transcript)
	id, err := provider.Accept(ctx, t)
	if err != nil {
		panic(err)
	}
	fmt.Println("identity:", id.Name)
	_, err = consumer.BuildTenant(ctx, provider.ClusterID(), nonce.Nonce{}, nil)
	fmt.Println("zero nonce refused:", errors.Is(err, nonce.ErrMalformed))
	// Output:
	// transcript: true
	// identity: controlplane-cl-provider
	// zero nonce refused: true
}

// Authenticate's handshake, composed from the sessions it runs on: each
// side's requests that do not depend on the other's go at once, as in
// Authenticate.
func ExampleProvider_Session() {
	ctx := context.Background()
	provider, consumer := newExampleClusters()

	cs := consumer.Session(ctx, provider.ClusterID())
	defer cs.Close()
	ps := provider.Session(ctx, consumer.ClusterID())
	defer ps.Close()

	n, err := ps.IssueNonce(ctx)
	if err != nil {
		panic(err)
	}
	t, err := cs.Tenant(ctx, n, &kubepact.TenantOptions{OwnKey: true})
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

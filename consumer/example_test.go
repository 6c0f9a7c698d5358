package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
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

// An Identity that would move the kubeconfig already held to another API
// server is refused unless the caller says the move is meant.
func ExampleConsumer_Apply() {
	ctx := context.Background()
	prov, cons := newExampleClusters()
	done, err := kubepact.Authenticate(ctx, cons, prov, nil)
	if err != nil {
		panic(err)
	}

	moved := done.Identity.DeepCopy()
	moved.Spec.AuthParams.APIServer = "https://elsewhere.example:6443"
	_, err = cons.Apply(ctx, prov.ClusterID(), moved, nil)
	fmt.Println("refused:", errors.Is(err, consumer.ErrEndpointChanged))
	_, err = cons.Apply(ctx, "cl-other", done.Identity, nil)
	fmt.Println("wrong provider:", errors.Is(err, identity.ErrWrongProvider))

	done, err = cons.Apply(ctx, prov.ClusterID(), moved, &consumer.ApplyOptions{ReplaceEndpoint: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("server:", done.Kubeconfig.Server())
	// Output:
	// refused: true
	// wrong provider: true
	// server: https://elsewhere.example:6443
}

// A consumer's controller builds the Tenant for a tool that may not read
// the cluster key: BuildTenant writes neither the tenant namespace nor the
// signed-nonce Secret, and the Tenant is accepted as Tenant's is.
func ExampleConsumer_BuildTenant() {
	ctx := context.Background()
	prov, cons := newExampleClusters()

	n, err := prov.IssueNonce(ctx, cons.ClusterID())
	if err != nil {
		panic(err)
	}
	t, err := cons.BuildTenant(ctx, prov.ClusterID(), n, nil)
	if err != nil {
		panic(err)
	}
	v, err := tenant.Verify(t, n, &tenant.VerifyOptions{ProviderID: prov.ClusterID(), Policy: tenant.Strict})
	if err != nil {
		panic(err)
	}
	fmt.Println("transcript:", v.Transcript)
	id, err := prov.Accept(ctx, t)
	if err != nil {
		panic(err)
	}
	fmt.Println("identity:", id.Name)
	_, err = cons.BuildTenant(ctx, prov.ClusterID(), nonce.Nonce{}, nil)
	fmt.Println("zero nonce refused:", errors.Is(err, nonce.ErrMalformed))
	// Output:
	// transcript: true
	// identity: controlplane-cl-provider
	// zero nonce refused: true
}

// A Strict consumer renews its ControlPlane certificate with a fresh key:
// its Renew, which the replicator carries to the provider; the provider's
// answer, which the replicator carries back; the switch.
func ExampleConsumer_Renewed() {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	pc, _ := memory.NewCluster("cl-provider", &memory.ClusterOptions{Clock: clk, Server: "https://provider.example:6443"})
	cc, _ := memory.NewCluster("cl-consumer", &memory.ClusterOptions{Clock: clk})
	_ = cc.Reach(pc) // the consumer proves new credentials online
	prov, _ := provider.New("cl-provider", pc.Endpoint(), pc.ProviderPorts(), &provider.Options{Clock: clk})
	cons, _ := consumer.New("cl-consumer", cc.ConsumerPorts(), &consumer.Options{Clock: clk, Strict: true})
	done, err := kubepact.Authenticate(ctx, cons, prov, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	before, _ := done.Kubeconfig.ClientCertificate()

	req, _ := cons.RenewRequest(ctx, "cl-provider", nil)
	clk.SetTime(req.At) // the renewal deadline, 70–90 % into the lifetime
	req, err = cons.RenewRequest(ctx, "cl-provider", req.Renew)
	if err != nil {
		fmt.Println(err)
		return
	}
	replicated := req.Renew.DeepCopy()
	replicated.Namespace = clusterid.TenantNamespace("cl-consumer")
	params, err := prov.Renew(ctx, replicated)
	if err != nil {
		fmt.Println(err)
		return
	}
	req.Renew.Status.AuthParams = params
	renewed, err := cons.Renewed(ctx, "cl-provider", req.Renew, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	after, _ := renewed.Kubeconfig.ClientCertificate()
	fmt.Println("user:", renewed.Kubeconfig.User())
	fmt.Println("fresh key:", !keys.Equal(before.PublicKey, after.PublicKey))
	fmt.Println("keys held:", cc.IdentityKeys.Len())
	// Output:
	// user: cl-consumer
	// fresh key: true
	// keys held: 1
}

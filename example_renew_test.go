package kubepact_test

import (
	"context"
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/wire/memory"
)

// A Strict consumer renews its ControlPlane certificate with a fresh key:
// its Renew, which the replicator carries to the provider; the provider's
// answer, which the replicator carries back; the switch.
func ExampleConsumer_Renewed() {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	pc, _ := memory.NewCluster("cl-provider", &memory.ClusterOptions{Clock: clk, Server: "https://provider.example:6443"})
	cc, _ := memory.NewCluster("cl-consumer", &memory.ClusterOptions{Clock: clk})
	_ = cc.Reach(pc) // the consumer proves new credentials online
	provider, _ := kubepact.NewProvider("cl-provider", pc.Endpoint(), pc.ProviderPorts(), &kubepact.ProviderOptions{Clock: clk})
	consumer, _ := kubepact.NewConsumer("cl-consumer", cc.ConsumerPorts(), &kubepact.ConsumerOptions{Clock: clk, Strict: true})
	done, err := kubepact.Authenticate(ctx, consumer, provider, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	before, _ := done.Kubeconfig.ClientCertificate()

	req, _ := consumer.RenewRequest(ctx, "cl-provider", nil)
	clk.SetTime(req.At) // the renewal deadline, 70–90 % into the lifetime
	req, err = consumer.RenewRequest(ctx, "cl-provider", req.Renew)
	if err != nil {
		fmt.Println(err)
		return
	}
	replicated := req.Renew.DeepCopy()
	replicated.Namespace = clusterid.TenantNamespace("cl-consumer")
	params, err := provider.Renew(ctx, replicated)
	if err != nil {
		fmt.Println(err)
		return
	}
	req.Renew.Status.AuthParams = params
	renewed, err := consumer.Renewed(ctx, "cl-provider", req.Renew, nil)
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

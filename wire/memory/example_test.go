package memory_test

import (
	"context"
	"fmt"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire/memory"
)

func ExampleNewCluster() {
	ctx := context.Background()
	pc, _ := memory.NewCluster("cl-provider", nil)
	cc, _ := memory.NewCluster("cl-consumer", nil)
	provider, _ := provider.New("cl-provider", pc.Endpoint(), pc.ProviderPorts(), nil)
	consumer, _ := consumer.New("cl-consumer", cc.ConsumerPorts(), nil)

	if _, err := kubepact.Authenticate(ctx, consumer, provider, nil); err != nil {
		panic(err)
	}
	fmt.Println("provider tenants:", len(pc.Tenants.Objects("")), "certificates signed:", pc.Signer.Signed())
	fmt.Println("consumer identities:", len(cc.Identities.Objects("")), "secrets:", len(cc.Secrets.Objects("")))
	// Output:
	// provider tenants: 1 certificates signed: 1
	// consumer identities: 1 secrets: 2
}

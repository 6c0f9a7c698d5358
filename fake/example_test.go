package fake_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/fake"
)

func ExampleNewCluster() {
	ctx := context.Background()
	pc, _ := fake.NewCluster("cl-provider", nil)
	cc, _ := fake.NewCluster("cl-consumer", nil)
	provider, _ := kubepact.NewProvider("cl-provider", pc.Endpoint(), pc.ProviderPorts(), nil)
	consumer, _ := kubepact.NewConsumer("cl-consumer", cc.ConsumerPorts(), nil)

	if _, err := kubepact.Authenticate(ctx, consumer, provider, nil); err != nil {
		panic(err)
	}
	fmt.Println("provider tenants:", len(pc.Tenants.Objects("")), "certificates signed:", pc.Signer.Signed())
	fmt.Println("consumer identities:", len(cc.Identities.Objects("")), "secrets:", len(cc.Secrets.Objects("")))
	// Output:
	// provider tenants: 1 certificates signed: 1
	// consumer identities: 1 secrets: 2
}

// Fail the first write of a nonce, then see the handshake recover.
func ExampleFaults() {
	ctx := context.Background()
	pc, _ := fake.NewCluster("cl-provider", nil)
	cc, _ := fake.NewCluster("cl-consumer", nil)
	faults := &fake.Faults{}
	provider, _ := kubepact.NewProvider("cl-provider", pc.Endpoint(), fake.InterceptProvider(pc.ProviderPorts(), faults), nil)
	consumer, _ := kubepact.NewConsumer("cl-consumer", fake.InterceptConsumer(cc.ConsumerPorts(), faults), nil)

	lost := errors.New("connection reset")
	faults.Set(func(_ context.Context, c fake.Call) error {
		if c.Op == "Nonces.Put" && c.After {
			return lost // the nonce was stored, but the answer was lost
		}
		return nil
	})
	_, err := kubepact.Authenticate(ctx, consumer, provider, nil)
	fmt.Println("first run:", errors.Is(err, lost))

	faults.Set(nil)
	_, err = kubepact.Authenticate(ctx, consumer, provider, nil)
	fmt.Println("second run:", err)
	fmt.Println("tenants:", len(pc.Tenants.Objects("")))
	// Output:
	// first run: true
	// second run: <nil>
	// tenants: 1
}

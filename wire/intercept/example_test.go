package intercept_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire/intercept"
	"github.com/kubepact/kubepact/wire/memory"
)

// Fail the first write of a nonce, then see the handshake recover.
func ExampleFaults() {
	ctx := context.Background()
	pc, _ := memory.NewCluster("cl-provider", nil)
	cc, _ := memory.NewCluster("cl-consumer", nil)
	faults := &intercept.Faults{}
	provider, _ := provider.New("cl-provider", pc.Endpoint(), intercept.Provider(pc.ProviderPorts(), faults), nil)
	consumer, _ := consumer.New("cl-consumer", intercept.Consumer(cc.ConsumerPorts(), faults), nil)

	lost := errors.New("connection reset")
	faults.Set(func(_ context.Context, c intercept.Call) error {
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

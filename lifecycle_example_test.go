package kubepact_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/lifecycle"
)

func ExampleProvider_Drain() {
	ctx := context.Background()
	provider, consumer := newExampleClusters()
	if _, err := kubepact.Authenticate(ctx, consumer, provider, nil); err != nil {
		panic(err)
	}

	fmt.Println("cordon:", provider.Cordon(ctx, consumer.ClusterID()))
	err := provider.Cordon(ctx, consumer.ClusterID())
	fmt.Println("cordon again refused:", errors.Is(err, lifecycle.ErrTransition))
	fmt.Println("drain:", provider.Drain(ctx, consumer.ClusterID()))

	// A drained consumer is not bound again, even once its Tenant is gone,
	// while its certificates may be valid; the administrator may readmit it.
	fmt.Println("forget:", provider.Forget(ctx, consumer.ClusterID()))
	_, err = kubepact.Authenticate(ctx, consumer, provider, nil)
	fmt.Println("authenticate refused:", errors.Is(err, lifecycle.ErrRevoked))
	fmt.Println("readmit:", provider.Readmit(ctx, consumer.ClusterID()))
	_, err = kubepact.Authenticate(ctx, consumer, provider, nil)
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

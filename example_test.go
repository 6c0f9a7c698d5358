package kubepact_test

import (
	"context"
	"fmt"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/provider"
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

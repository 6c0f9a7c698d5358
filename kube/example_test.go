package kube_test

import (
	"context"
	"fmt"
	"log"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/kube"
)

// The consumer cluster obtains an identity on the provider cluster, both
// reached through kubeconfig files and both serving the
// authentication.liqo.io CRDs (Liqo's, or kube.InstallCRDs). The provider's
// rate limits fit a few handshakes a second; see NewProviderPorts.
func Example_realClusters() {
	ctx := context.Background()
	providerCfg, err := clientcmd.BuildConfigFromFlags("", "provider.kubeconfig")
	check(err)
	consumerCfg, err := clientcmd.BuildConfigFromFlags("", "consumer.kubeconfig")
	check(err)
	endpoint, err := kube.EndpointFromConfig(providerCfg)
	check(err)
	providerPorts, err := kube.NewProviderPorts(providerCfg, &kube.ProviderPortsOptions{QPS: 50, Burst: 300})
	check(err)
	consumerPorts, err := kube.NewConsumerPorts(consumerCfg, nil)
	check(err)
	provider, err := kubepact.NewProvider("cl-provider", endpoint, providerPorts, nil)
	check(err)
	consumer, err := kubepact.NewConsumer("cl-consumer", consumerPorts, nil)
	check(err)
	done, err := kubepact.Authenticate(ctx, consumer, provider, nil)
	check(err)
	fmt.Println(done.Kubeconfig.User(), "on", done.Kubeconfig.Server(), "in", done.Kubeconfig.Namespace())
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}

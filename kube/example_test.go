package kube_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/kube"
)

// The consumer cluster obtains an identity on the provider cluster. Both are
// reached through the kubeconfig files PROVIDER_KUBECONFIG and
// CONSUMER_KUBECONFIG name (the package's TestMain points them at its two
// test clusters), and both serve the authentication.liqo.io CRDs (Liqo's,
// or kube.InstallCRDs). The provider must have the peer ClusterRoles
// (rbac.Install). The README's "On real clusters" shows this function as a
// main function.
func Example_realClusters() {
	providerCfg := must(clientcmd.BuildConfigFromFlags("", os.Getenv("PROVIDER_KUBECONFIG")))
	consumerCfg := must(clientcmd.BuildConfigFromFlags("", os.Getenv("CONSUMER_KUBECONFIG")))
	providerCluster := must(kube.Connect(providerCfg, nil)) // checks the CRDs
	consumerCluster := must(kube.Connect(consumerCfg, nil))
	provider := must(providerCluster.Provider("cl-provider", nil))
	consumer := must(consumerCluster.Consumer("cl-consumer", nil))
	done := must(kubepact.Authenticate(context.Background(), consumer, provider, nil))
	fmt.Println(done.Kubeconfig.User(), "in", done.Kubeconfig.Namespace())
	// Output: cl-consumer in liqo-tenant-cl-consumer
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

package kube_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/wire"
)

// The consumer cluster obtains an identity on the provider cluster. Both are
// reached through the kubeconfig files PROVIDER_KUBECONFIG and
// CONSUMER_KUBECONFIG name, with an administrator's rights: Install creates
// what a fresh cluster lacks (the authentication.liqo.io CRDs, the peer
// ClusterRoles, a recorded cluster ID) and leaves what Liqo or kubepact
// installed as it is. Each side takes the ID its cluster records, as its
// controllers and liqoctl do. The README's "Use it as a library" shows this
// function as a main function; TestREADMESnippet runs it on two fresh
// clusters and on two clusters whose controllers run, and prints, for
// example:
//
//	cl-5f3a0e1c9b2d4a6e in liqo-tenant-cl-5f3a0e1c9b2d4a6e
func Example_realClusters() {
	providerCfg := must(clientcmd.BuildConfigFromFlags("", os.Getenv("PROVIDER_KUBECONFIG")))
	consumerCfg := must(clientcmd.BuildConfigFromFlags("", os.Getenv("CONSUMER_KUBECONFIG")))
	setUp := &wire.ConnectOptions{Install: true} // CRDs, peer roles and a cluster ID, where missing
	providerCluster := must(wire.Connect(providerCfg, setUp))
	consumerCluster := must(wire.Connect(consumerCfg, setUp))
	provider := must(providerCluster.Provider("", nil)) // "": the ID the cluster records
	consumer := must(consumerCluster.Consumer("", nil))
	done := must(kubepact.Authenticate(context.Background(), consumer, provider, nil))
	fmt.Println(done.Kubeconfig.User(), "in", done.Kubeconfig.Namespace())
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}

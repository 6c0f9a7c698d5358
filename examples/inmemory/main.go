// Command inmemory runs the whole kubepact handshake between two in-memory
// clusters and prints each step the way liqoctl authenticate does.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/wire/memory"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ERRO", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()

	providerCluster, err := memory.NewCluster("cl-provider", nil)
	if err != nil {
		return err
	}
	consumerCluster, err := memory.NewCluster("cl-consumer", nil)
	if err != nil {
		return err
	}
	onStep := func(s step.Done) { fmt.Fprintf(w, " INFO  %-12s %s\n", s.Cluster, s.Name) }

	provider, err := provider.New("cl-provider", providerCluster.Endpoint(),
		providerCluster.ProviderPorts(), &provider.Options{OnStep: onStep})
	if err != nil {
		return err
	}
	consumer, err := consumer.New("cl-consumer",
		consumerCluster.ConsumerPorts(), &consumer.Options{OnStep: onStep})
	if err != nil {
		return err
	}

	done, err := kubepact.Authenticate(ctx, consumer, provider, nil)
	if err != nil {
		return err
	}
	cfg := done.Kubeconfig
	fmt.Fprintf(w, "\nIdentity %s/%s, kubeconfig Secret %s\n", done.Identity.Namespace, done.Identity.Name, done.Secret.Name)
	fmt.Fprintf(w, "  server:    %s\n  user:      %s\n  namespace: %s\n", cfg.Server(), cfg.User(), cfg.Namespace())
	return nil
}

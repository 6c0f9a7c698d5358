package authserver_test

import (
	"context"
	"fmt"
	"net"

	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/wire/memory"
)

// A provider serves its token authentication on loopback; a consumer that
// was given the token, the URL and the server's CA authenticates. On real
// clusters the ports come from package kube (wire.Connect's
// Cluster.ProviderPorts and ConsumerPorts, kube.NewTokenStore and
// kube.NewSecrets over Cluster.Clientset).
func ExampleAuthenticate() {
	ctx := context.Background()

	// Provider.
	provider, _ := memory.NewCluster("provider-a", nil)
	tokens := &fake.TokenStore{}
	token, _ := authtoken.Ensure(ctx, tokens, nil)
	srv, err := authserver.New("provider-a", provider.Endpoint(), provider.ProviderPorts(), tokens, nil)
	if err != nil {
		panic(err)
	}
	serving, _ := authserver.ServingSecret("liqo", "kubepact-auth-tls", []string{"127.0.0.1"}, nil)
	tlsConfig, _ := authserver.TLSConfig(serving)
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	serveCtx, stop := context.WithCancel(ctx)
	defer stop()
	go srv.Serve(serveCtx, ln, tlsConfig)

	// Consumer.
	cluster, _ := memory.NewCluster("consumer-a", nil)
	c, _ := consumer.New("consumer-a", cluster.ConsumerPorts(), nil)
	secrets := &fake.Secrets{}
	done, err := authserver.Authenticate(ctx, c,
		authserver.ConsumerPorts{Namespaces: cluster.Namespaces, Secrets: secrets},
		authserver.Remote{ProviderID: "provider-a", URL: "https://" + ln.Addr().String(), CA: serving.Data[authserver.CAKey], Token: token},
		nil)
	if err != nil {
		panic(err)
	}
	status, _ := authserver.ReadStatus(ctx, secrets, "liqo", "provider-a")
	fmt.Println(done.Secret.Namespace + "/" + done.Secret.Name)
	fmt.Println(done.Kubeconfig.User(), done.Kubeconfig.Namespace())
	fmt.Println(status)
	// Output:
	// liqo-tenant-provider-a/kubeconfig-controlplane-provider-a
	// consumer-a liqo-tenant-consumer-a
	// Established
}

package saidentity_test

import (
	"context"
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/saidentity"
)

// Issue runs here on in-memory ports; with package kube's adapters it runs
// against a provider's API server unchanged.
func ExampleIssue() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ports := saidentity.ProviderPorts{
		Namespaces:      &fake.Namespaces{},
		ServiceAccounts: &fake.ServiceAccounts{Clock: clk},
		RBAC:            &fake.ServiceAccountRBAC{},
	}
	id, err := saidentity.Issue(context.Background(), ports, saidentity.Endpoint{Server: "https://provider.example:6443"},
		"consumer-1", &saidentity.IssueOptions{Expiration: 30 * time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(id.Token)
	fmt.Println(id.Kubeconfig)
	// Output:
	// saidentity.Token(liqo-tenant-consumer-1/remote-consumer-1 expires=2026-01-01T00:30:00Z)
	// kubeconfig(server=https://provider.example:6443 user= namespace=liqo-tenant-consumer-1)
}

func ExampleBuildGrants() {
	g, err := saidentity.BuildGrants("consumer-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range g.Role.Rules {
		fmt.Println("Role", g.Role.Namespace+"/"+g.Role.Name, r.Verbs, r.Resources, r.ResourceNames)
	}
	for _, r := range g.ClusterRole.Rules {
		fmt.Println("ClusterRole", g.ClusterRole.Name, r.Verbs, r.Resources, r.ResourceNames)
	}
	// Output:
	// Role liqo-tenant-consumer-1/remote-consumer-1 [get update patch delete] [secrets] [consumer-1]
	// Role liqo-tenant-consumer-1/remote-consumer-1 [create] [serviceaccounts/token] [remote-consumer-1]
	// ClusterRole kubepact-remote-consumer-1 [get update patch delete] [peeringrequests] [consumer-1]
}

// A consumer keeps its identity alive with a Refresher over its kubeconfig
// Secret; Run refreshes at a jittered 70-90% of each token's lifetime.
func ExampleRefresher() {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sas := &fake.ServiceAccounts{Clock: clk}
	grants := &fake.ServiceAccountRBAC{}
	secrets := &fake.KubeconfigSecrets{}
	ctx := context.Background()
	id, err := saidentity.Issue(ctx, saidentity.ProviderPorts{Namespaces: &fake.Namespaces{}, ServiceAccounts: sas, RBAC: grants},
		saidentity.Endpoint{Server: "https://provider.example:6443"}, "consumer-1", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	s, _ := saidentity.SecretFor("provider-1", id.Kubeconfig)
	_ = secrets.Write(ctx, s)

	client := &fake.TokenClient{ServiceAccounts: sas, RBAC: grants}
	r, err := saidentity.NewRefresher(saidentity.ConsumerPorts{Tokens: client, Reviewer: client, Secrets: secrets}, "provider-1",
		&saidentity.RefresherOptions{Clock: clk})
	if err != nil {
		fmt.Println(err)
		return
	}
	clk.Step(45 * time.Minute)
	next, err := r.Refresh(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(next)
	// Output:
	// saidentity.Token(liqo-tenant-consumer-1/remote-consumer-1 expires=2026-01-01T01:45:00Z)
}

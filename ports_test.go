package kubepact_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/wire/intercept"
	"github.com/kubepact/kubepact/wire/memory"
)

// NewProvider names the first required port missing, group by group, in a
// *MissingPortError that errors.Is sees as ErrInvalidConfig.
func TestNewProviderNamesTheMissingPort(t *testing.T) {
	t.Parallel()
	c, err := memory.NewCluster(providerID, nil)
	require.NoError(t, err)
	tests := []struct {
		field string
		drop  func(*kubepact.ProviderPorts)
	}{
		{"ProviderCore.Namespaces", func(p *kubepact.ProviderPorts) { p.Namespaces = nil }},
		{"ProviderCore.Nonces", func(p *kubepact.ProviderPorts) { p.Nonces = nil }},
		{"ProviderCore.Tenants", func(p *kubepact.ProviderPorts) { p.Tenants = nil }},
		{"ProviderCore.Signer", func(p *kubepact.ProviderPorts) { p.Signer = nil }},
		{"ProviderCore.Certificates", func(p *kubepact.ProviderPorts) { p.Certificates = nil }},
		{"ProviderCore.RBAC", func(p *kubepact.ProviderPorts) { p.RBAC = nil }},
		{"Lifecycle.Conditions", func(p *kubepact.ProviderPorts) { p.Lifecycle.Conditions = nil }},
		{"Lifecycle.Slices", func(p *kubepact.ProviderPorts) { p.Lifecycle.Slices = nil }},
		{"Lifecycle.Bindings", func(p *kubepact.ProviderPorts) { p.Lifecycle.Bindings = nil }},
		{"Lifecycle.Revocations", func(p *kubepact.ProviderPorts) { p.Lifecycle.Revocations = nil }},
		{"SlicePorts.ClusterRBAC", func(p *kubepact.ProviderPorts) { p.ClusterRBAC = nil }},
		{"SlicePorts.Slices", func(p *kubepact.ProviderPorts) { p.Slices = nil }},
		// A group is checked only once one of its ports is set.
		{"SlicePorts.ClusterRBAC", func(p *kubepact.ProviderPorts) {
			p.SlicePorts = kubepact.SlicePorts{StorageClasses: p.StorageClasses}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			ports := c.ProviderPorts()
			tt.drop(&ports)
			_, err := kubepact.NewProvider(providerID, c.Endpoint(), ports, nil)
			var missing *kubepact.MissingPortError
			require.ErrorAs(t, err, &missing)
			require.Equal(t, kubepact.MissingPortError{Role: "provider", Field: tt.field}, *missing)
			require.ErrorIs(t, err, kubepact.ErrInvalidConfig)
		})
	}
}

// The optional ports are optional: a provider without slices and without
// Peek is built, and completes a handshake.
func TestNewProviderOptionalPorts(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	ports := p.providerCluster.ProviderPorts()
	ports.SlicePorts = kubepact.SlicePorts{}
	ports.Peek = nil
	var err error
	p.provider, err = kubepact.NewProvider(providerID, p.providerCluster.Endpoint(), ports, &kubepact.ProviderOptions{Clock: p.clock})
	require.NoError(t, err)
	_, err = kubepact.Authenticate(context.Background(), p.consumer, p.provider, nil)
	require.NoError(t, err)
	err = p.provider.ForgetSlice(context.Background(), "liqo-tenant-"+consumerID, "slice")
	require.ErrorIs(t, err, kubepact.ErrInvalidConfig)
}

func TestNewConsumerNamesTheMissingPort(t *testing.T) {
	t.Parallel()
	c, err := memory.NewCluster(consumerID, nil)
	require.NoError(t, err)
	tests := []struct {
		field  string
		strict bool
		drop   func(*kubepact.ConsumerPorts)
	}{
		{"ConsumerCore.Namespaces", false, func(p *kubepact.ConsumerPorts) { p.Namespaces = nil }},
		{"ConsumerCore.Keys", false, func(p *kubepact.ConsumerPorts) { p.Keys = nil }},
		{"ConsumerCore.Identities", false, func(p *kubepact.ConsumerPorts) { p.Identities = nil }},
		{"ConsumerCore.Secrets", false, func(p *kubepact.ConsumerPorts) { p.Secrets = nil }},
		{"IdentityKeys", true, func(p *kubepact.ConsumerPorts) { p.IdentityKeys = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			ports := c.ConsumerPorts()
			tt.drop(&ports)
			_, err := kubepact.NewConsumer(consumerID, ports, &kubepact.ConsumerOptions{Strict: tt.strict})
			var missing *kubepact.MissingPortError
			require.ErrorAs(t, err, &missing)
			require.Equal(t, "consumer", missing.Role)
			require.Equal(t, tt.field, missing.Field)
			require.ErrorIs(t, err, kubepact.ErrInvalidConfig)
		})
	}
	// Optional: IdentityKeys of a Compatible consumer, Reviewer and Slices.
	ports := c.ConsumerPorts()
	ports.IdentityKeys, ports.Reviewer, ports.Slices = nil, nil, nil
	_, err = kubepact.NewConsumer(consumerID, ports, nil)
	require.NoError(t, err)
}

// In memory and under Faults, Accept takes the branch the controller takes:
// it peeks at the nonce (ProviderCore.Peek) and does not read it ahead of
// the redemption. Without Peek, it reads it.
func TestAcceptPeeksInMemoryAndUnderFaults(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		peek  bool
		reads bool
	}{
		{"with Peek", true, false},
		{"without Peek", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newPair(t)
			faults := &intercept.Faults{}
			ports := p.providerCluster.ProviderPorts()
			require.NotNil(t, ports.Peek, "memory.Cluster sets Peek")
			if !tt.peek {
				ports.Peek = nil
			}
			wrapped := intercept.Provider(ports, faults)
			require.Equal(t, tt.peek, wrapped.Peek != nil, "intercept keeps Peek as it finds it")
			var err error
			p.provider, err = kubepact.NewProvider(providerID, p.providerCluster.Endpoint(), wrapped, &kubepact.ProviderOptions{Clock: p.clock})
			require.NoError(t, err)
			n, err := p.provider.IssueNonce(ctx, consumerID)
			require.NoError(t, err)
			tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
			require.NoError(t, err)
			before := len(faults.Calls())
			_, err = p.provider.Accept(ctx, tn)
			require.NoError(t, err)
			read := false
			for _, c := range faults.Calls()[before:] {
				read = read || c.Op == "Nonces.Get"
			}
			require.Equal(t, tt.reads, read, "Accept read the nonce ahead of the redemption")
		})
	}
}

func ExampleMissingPortError() {
	_, err := kubepact.NewConsumer("cl-consumer", kubepact.ConsumerPorts{}, nil)
	var missing *kubepact.MissingPortError
	if errors.As(err, &missing) {
		fmt.Println(missing.Field, errors.Is(err, kubepact.ErrInvalidConfig))
	}
	// Output:
	// ConsumerCore.Namespaces true
}

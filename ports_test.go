package kubepact_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/wire/intercept"
	"github.com/kubepact/kubepact/wire/memory"
)

// provider.New names the first required port missing, group by group, in a
// *MissingPortError that errors.Is sees as ErrInvalidConfig.
func TestNewProviderNamesTheMissingPort(t *testing.T) {
	t.Parallel()
	c, err := memory.NewCluster(providerID, nil)
	require.NoError(t, err)
	tests := []struct {
		field string
		drop  func(*provider.Ports)
	}{
		{"Core.Namespaces", func(p *provider.Ports) { p.Namespaces = nil }},
		{"Core.Nonces", func(p *provider.Ports) { p.Nonces = nil }},
		{"Core.Tenants", func(p *provider.Ports) { p.Tenants = nil }},
		{"Core.Signer", func(p *provider.Ports) { p.Signer = nil }},
		{"Core.Certificates", func(p *provider.Ports) { p.Certificates = nil }},
		{"Core.RBAC", func(p *provider.Ports) { p.RBAC = nil }},
		{"Lifecycle.Conditions", func(p *provider.Ports) { p.Lifecycle.Conditions = nil }},
		{"Lifecycle.Slices", func(p *provider.Ports) { p.Lifecycle.Slices = nil }},
		{"Lifecycle.Bindings", func(p *provider.Ports) { p.Lifecycle.Bindings = nil }},
		{"Lifecycle.Revocations", func(p *provider.Ports) { p.Lifecycle.Revocations = nil }},
		{"SlicePorts.ClusterRBAC", func(p *provider.Ports) { p.ClusterRBAC = nil }},
		{"SlicePorts.Slices", func(p *provider.Ports) { p.Slices = nil }},
		// A group is checked only once one of its ports is set.
		{"SlicePorts.ClusterRBAC", func(p *provider.Ports) {
			p.SlicePorts = provider.SlicePorts{StorageClasses: p.StorageClasses}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			ports := c.ProviderPorts()
			tt.drop(&ports)
			_, err := provider.New(providerID, c.Endpoint(), ports, nil)
			var missing *peer.MissingPortError
			require.ErrorAs(t, err, &missing)
			require.Equal(t, peer.MissingPortError{Role: "provider", Field: tt.field}, *missing)
			require.ErrorIs(t, err, peer.ErrInvalidConfig)
		})
	}
}

// The optional ports are optional: a provider without slices and without
// Peek is built, and completes a handshake.
func TestNewProviderOptionalPorts(t *testing.T) {
	t.Parallel()
	p := newPair(t)
	ports := p.providerCluster.ProviderPorts()
	ports.SlicePorts = provider.SlicePorts{}
	ports.Peek = nil
	var err error
	p.provider, err = provider.New(providerID, p.providerCluster.Endpoint(), ports, &provider.Options{Clock: p.clock})
	require.NoError(t, err)
	_, err = kubepact.Authenticate(context.Background(), p.consumer, p.provider, nil)
	require.NoError(t, err)
	err = p.provider.ForgetSlice(context.Background(), "liqo-tenant-"+consumerID, "slice")
	require.ErrorIs(t, err, peer.ErrInvalidConfig)
}

func TestNewConsumerNamesTheMissingPort(t *testing.T) {
	t.Parallel()
	c, err := memory.NewCluster(consumerID, nil)
	require.NoError(t, err)
	tests := []struct {
		field  string
		strict bool
		drop   func(*consumer.Ports)
	}{
		{"Core.Namespaces", false, func(p *consumer.Ports) { p.Namespaces = nil }},
		{"Core.Keys", false, func(p *consumer.Ports) { p.Keys = nil }},
		{"Core.Identities", false, func(p *consumer.Ports) { p.Identities = nil }},
		{"Core.Secrets", false, func(p *consumer.Ports) { p.Secrets = nil }},
		{"IdentityKeys", true, func(p *consumer.Ports) { p.IdentityKeys = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			t.Parallel()
			ports := c.ConsumerPorts()
			tt.drop(&ports)
			_, err := consumer.New(consumerID, ports, &consumer.Options{Strict: tt.strict})
			var missing *peer.MissingPortError
			require.ErrorAs(t, err, &missing)
			require.Equal(t, "consumer", missing.Role)
			require.Equal(t, tt.field, missing.Field)
			require.ErrorIs(t, err, peer.ErrInvalidConfig)
		})
	}
	// Optional: IdentityKeys of a Compatible consumer, Reviewer and Slices.
	ports := c.ConsumerPorts()
	ports.IdentityKeys, ports.Reviewer, ports.Slices = nil, nil, nil
	_, err = consumer.New(consumerID, ports, nil)
	require.NoError(t, err)
}

// In memory and under Faults, Accept takes the branch the controller takes:
// it peeks at the nonce (Core.Peek) and does not read it ahead of
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
			p.provider, err = provider.New(providerID, p.providerCluster.Endpoint(), wrapped, &provider.Options{Clock: p.clock})
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

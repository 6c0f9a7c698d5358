package memory

import (
	"context"
	"fmt"
	"io"
	"time"

	"k8s.io/utils/clock"

	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/fake"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
)

// ClusterOptions tunes NewCluster. The zero value, like a nil pointer, uses
// the real clock, crypto/rand.Reader and the server "https://<name>.invalid",
// and installs the peer roles.
type ClusterOptions struct {
	Clock  clock.PassiveClock
	Rand   io.Reader
	Server string
	// NoPeerRoles leaves out the ClusterRoles consumers are bound to
	// (rbac.PeerRoles), which a cluster has once kubepact's manifests,
	// Liqo's chart or rbac.Install put them there: a provider then refuses
	// every handshake with a *rbac.MissingRoleError.
	NoPeerRoles bool
}

// Cluster is one in-memory cluster: every port, and a local CA that serves
// as the API server's CA and signs client certificates. Its Reviewer plays
// the API servers of the providers it reaches (Reach): once it reaches
// one, ConsumerPorts includes it, and the cluster as a consumer confirms
// every Identity online.
type Cluster struct {
	Name         string
	Server       string
	Namespaces   *fake.Namespaces
	Nonces       *fake.NonceStore
	Tenants      *fake.TenantStore
	Identities   *fake.IdentityStore
	Secrets      *fake.SecretWriter
	Certificates *fake.CertificateCache
	RBAC         *fake.RBAC
	Keys         *fake.KeyStore
	IdentityKeys *fake.Keyring
	Approver     *fake.Approver
	Signer       *fake.Signer
	Reviewer     *fake.Reviewer
	Slices       *fake.ResourceSlices
	Revocations  *fake.Revocations
	// Commitments are the cluster's AuthorizedConsumers, as a provider.
	Commitments *fake.Commitments
	// StorageClasses are the cluster's StorageClasses, offered to the
	// ResourceSlices a provider accepts.
	StorageClasses *fake.StorageClasses
}

// NewCluster returns an in-memory cluster called name, empty but for the
// peer roles (see ClusterOptions.NoPeerRoles).
func NewCluster(name string, opts *ClusterOptions) (*Cluster, error) {
	o := ClusterOptions{}
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Server == "" {
		o.Server = "https://" + name + ".invalid"
	}
	caPEM, caKey, err := csr.GenerateCA(o.Rand, name+"-ca", o.Clock.Now(), 10*365*24*time.Hour)
	if err != nil {
		return nil, fmt.Errorf("fake cluster %s: %w", name, err)
	}
	approver := &fake.Approver{}
	ca, err := csr.NewLocalCA(caPEM, caKey, &csr.LocalCAOptions{Clock: o.Clock, Rand: o.Rand, Approver: approver})
	if err != nil {
		return nil, fmt.Errorf("fake cluster %s: %w", name, err)
	}
	c := &Cluster{
		Name:           name,
		Server:         o.Server,
		Namespaces:     &fake.Namespaces{},
		Nonces:         &fake.NonceStore{},
		Tenants:        &fake.TenantStore{},
		Identities:     &fake.IdentityStore{},
		Secrets:        &fake.SecretWriter{},
		Certificates:   &fake.CertificateCache{},
		RBAC:           &fake.RBAC{},
		Keys:           &fake.KeyStore{},
		IdentityKeys:   &fake.Keyring{},
		Approver:       approver,
		Signer:         &fake.Signer{CA: ca},
		Reviewer:       &fake.Reviewer{Clock: o.Clock},
		Slices:         &fake.ResourceSlices{},
		Revocations:    &fake.Revocations{},
		Commitments:    &fake.Commitments{},
		StorageClasses: &fake.StorageClasses{},
	}
	if !o.NoPeerRoles {
		if err := rbac.Install(context.Background(), c.RBAC); err != nil {
			return nil, fmt.Errorf("fake cluster %s: %w", name, err)
		}
	}
	return c, nil
}

// Endpoint returns the cluster's API server URL and CA.
func (c *Cluster) Endpoint() provider.Endpoint {
	return provider.Endpoint{Server: c.Server, CA: c.Signer.CA.Certificate()}
}

// ProviderPorts returns the ports a provider.Provider needs.
func (c *Cluster) ProviderPorts() provider.Ports {
	return provider.Ports{
		Core: provider.Core{
			Namespaces:   c.Namespaces,
			Nonces:       c.Nonces,
			Peek:         c.Nonces,
			Tenants:      c.Tenants,
			Signer:       c.Signer,
			Certificates: c.Certificates,
			RBAC:         c.RBAC,
			Commitments:  c.Commitments,
		},
		SlicePorts: provider.SlicePorts{
			ClusterRBAC:    c.RBAC,
			Slices:         c.Slices,
			StorageClasses: c.StorageClasses,
		},
		Lifecycle: c.LifecyclePorts(),
	}
}

// LifecyclePorts returns the ports of a provider's tenant lifecycle.
func (c *Cluster) LifecyclePorts() lifecycle.Ports {
	return lifecycle.Ports{Conditions: c.Tenants, Slices: c.Slices, Bindings: c.RBAC, Revocations: c.Revocations}
}

// ConsumerPorts returns the ports a consumer.Consumer needs. Reviewer is
// set once c reaches a provider (Reach), so Apply confirms Identities
// online; until then the consumer applies them offline.
func (c *Cluster) ConsumerPorts() consumer.Ports {
	ports := consumer.Ports{
		Core: consumer.Core{
			Namespaces: c.Namespaces,
			Keys:       c.Keys,
			Identities: c.Identities,
			Secrets:    c.Secrets,
		},
		IdentityKeys: c.IdentityKeys,
		Slices:       c.Slices,
	}
	if c.Reviewer.Serves() {
		ports.Reviewer = c.Reviewer
	}
	return ports
}

// Reach lets c, as a consumer, reach the API server of each provider: c's
// Reviewer answers for the provider's Server as that API server does,
// trusting client certificates its Signer signs.
func (c *Cluster) Reach(providers ...*Cluster) error {
	for _, p := range providers {
		if err := c.Reviewer.Serve(p.Server, p.Signer.CA.Certificate()); err != nil {
			return fmt.Errorf("fake cluster %s: %w", c.Name, err)
		}
	}
	return nil
}

package provider

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/kubepact/kubepact/accept"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

// DefaultCertificateLifetime is the lifetime a Provider requests for the
// certificates it issues unless configured otherwise: short enough that
// expiry revokes, since certificates are renewed before it.
const DefaultCertificateLifetime = 7 * 24 * time.Hour

// Endpoint is how consumers reach a provider's API server.
type Endpoint struct {
	// Server is the https URL of the API server.
	Server string
	// CA is the PEM CA bundle of the API server.
	CA []byte
}

// Options tunes a Provider. The zero value, like a nil pointer, uses
// the real clock, crypto/rand.Reader, nonce.DefaultTTL,
// DefaultCertificateLifetime, resourceslice.DefaultOffer(), the default
// resourceslice.Bounds and no step observer.
type Options struct {
	Clock clock.PassiveClock
	Rand  io.Reader
	// NonceTTL is how long a nonce IssueNonce issues stays valid. It is
	// recorded with the nonce: a stored nonce is judged by the TTL it was
	// issued with, by this one only when it records none (a nonce Secret
	// written by Liqo).
	NonceTTL time.Duration
	// CertificateLifetime is the lifetime requested for certificates; the
	// signer may shorten it.
	CertificateLifetime time.Duration
	// Policy is how strictly Tenants are checked: tenant.Compatible (the
	// default) accepts Liqo consumers, tenant.Strict requires a transcript.
	Policy tenant.Policy
	// OnStep, when set, is called after each completed step.
	OnStep func(step.Done)
	// RecheckInterval is how long a passed privilege check of a consumer
	// (rbac.CheckUnprivileged), and a peer ClusterRole found installed
	// (rbac.RequireRoles), are trusted before Accept repeats them: a handshake
	// whose certificate is signed asynchronously is accepted in two calls,
	// and many handshakes share the role. Zero means
	// DefaultRecheckInterval; a negative value repeats them on every call.
	RecheckInterval time.Duration
	// SliceNamespaces returns the namespaces the ResourceSlices of
	// consumerID may use, where AcceptSlice binds group consumerID to
	// rbac.VirtualKubeletClusterRole (Secrets, ConfigMaps, pods/exec…):
	// namespaces offloaded to that consumer, as Liqo's offloading module
	// binds it. Nil means none: slice identities get only the cluster-wide
	// binding. A tenant namespace is refused (a *SliceNamespaceError, and
	// nothing is bound): it holds this cluster's own objects for the peer.
	SliceNamespaces func(consumerID string) []string
	// SliceOffer is what AcceptSlice offers a slice whose resources it
	// accepts: default quantities, the local StorageClass, ingress and
	// load-balancer classes, node labels. Nil means
	// resourceslice.DefaultOffer(), Liqo's Helm chart's defaults.
	SliceOffer *resourceslice.Offer
	// NoFinalizer makes Accept record Tenants without tenant.Finalizer, for
	// a provider whose Tenants no controller watches (the offline flow): no
	// one would remove the finalizer, so deleting such a Tenant, or its
	// tenant namespace, would hang. kubepact.Authenticate, which does the provider's
	// steps in-process, records none either way. By default Accept, the
	// step a controller calls, adds it, and the controller's cleanup runs
	// before the Tenant goes. A finalizer the stored Tenant carries always
	// stays, and a controller that comes later adds its own when it
	// accepts the Tenant again.
	NoFinalizer bool
	// Checks are checks of the caller's own, which Accept and Unchanged
	// run after the built-in ones of their stage (accept.Builtin), each
	// before the act its stage guards. A refusal is returned as the check
	// returns it, wrapped in its step: step.TenantApplied for
	// accept.StageRedeem, step.CertificateIssued for accept.StageIssue.
	Checks []accept.Check
	// SliceBounds bounds, per consumer, the certificates AcceptSlice has
	// signed for ResourceSlices: how many live slices get one, the
	// shortest time between two CSRs of one slice, and how many new
	// requests are signed in an hour. The zero value uses
	// resourceslice.DefaultMaxSlices, half the lifetime of the certificate
	// a slice holds, and resourceslice.DefaultCertificatesPerHour; a
	// negative value removes its bound. See resourceslice.Bounds.
	SliceBounds resourceslice.Bounds
}

// Provider runs the provider's side of the handshake: it issues nonces and
// accepts Tenants. It is safe for concurrent use by handshakes of different
// consumers; handshakes of one consumer are serialised by its nonce.
type Provider struct {
	id       string
	endpoint Endpoint
	ports    Ports
	opts     Options

	// unprivileged holds the consumers that recently passed the privilege
	// check; rolesFound the peer ClusterRoles recently found installed.
	unprivileged, rolesFound *recent
	// checks is the decision Accept and Unchanged take: accept.Builtin,
	// then Options.Checks.
	checks accept.Chain
	// sliceLedger holds, per consumer, the slice requests recently
	// admitted (SliceBounds).
	sliceLedger sliceLedgers
}

// New returns the Provider of cluster clusterID, reachable at
// endpoint. The endpoint may be empty for a Provider that only issues nonces
// and forgets consumers; Accept needs it. It returns clusterid.Validate's
// error for an invalid clusterID, and a *peer.MissingPortError (errors.Is
// peer.ErrInvalidConfig) naming the first port ports lacks that Ports
// says is required.
func New(clusterID string, endpoint Endpoint, ports Ports, opts *Options) (*Provider, error) {
	if err := clusterid.Validate(clusterID); err != nil {
		return nil, err
	}
	if err := ports.check(); err != nil {
		return nil, err
	}
	p := &Provider{id: clusterID, endpoint: endpoint, ports: ports}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.Clock == nil {
		p.opts.Clock = clock.RealClock{}
	}
	if p.opts.Rand == nil {
		p.opts.Rand = rand.Reader
	}
	if p.opts.CertificateLifetime <= 0 {
		p.opts.CertificateLifetime = DefaultCertificateLifetime
	}
	if p.opts.SliceOffer == nil {
		p.opts.SliceOffer = resourceslice.DefaultOffer()
	} else {
		// The caller keeps its Offer: a copy, so no later change races.
		o := *p.opts.SliceOffer
		o.DefaultResources = o.DefaultResources.DeepCopy()
		o.IngressClasses = slices.Clone(o.IngressClasses)
		o.LoadBalancerClasses = slices.Clone(o.LoadBalancerClasses)
		o.NodeLabels = maps.Clone(o.NodeLabels)
		p.opts.SliceOffer = &o
	}
	if p.opts.RecheckInterval == 0 {
		p.opts.RecheckInterval = DefaultRecheckInterval
	}
	p.unprivileged, p.rolesFound = newRecent(p.opts.RecheckInterval), newRecent(p.opts.RecheckInterval)
	p.checks = accept.Builtin().With(p.opts.Checks...)
	return p, nil
}

// ClusterID returns the provider's cluster ID.
func (p *Provider) ClusterID() string { return p.id }

// step reports a completed step to the observer and, at V(1), to the
// logger in ctx.
func (p *Provider) step(ctx context.Context, s step.Done) {
	s.Cluster = p.id
	logr.FromContextOrDiscard(ctx).V(1).Info(string(s.Name), "cluster", s.Cluster, "role", "provider")
	if p.opts.OnStep != nil {
		p.opts.OnStep(s)
	}
}

// String names the provider and its endpoint.
func (p *Provider) String() string {
	if p == nil {
		return "kubepact.Provider(<nil>)"
	}
	return fmt.Sprintf("kubepact.Provider(%s, %s, policy=%v)", p.id, p.endpoint.Server, p.opts.Policy)
}

// GoString is String.
func (p *Provider) GoString() string { return p.String() }

// Format makes every fmt verb print String.
func (p *Provider) Format(f fmt.State, _ rune) { io.WriteString(f, p.String()) }

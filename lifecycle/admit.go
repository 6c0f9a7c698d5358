package lifecycle

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/utils/clock"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/tenant"
)

// ErrIdentityHeld reports a new identity asked for a consumer ID while
// another key holds a live certificate for it.
var ErrIdentityHeld = errors.New("another key holds a live certificate for the consumer ID")

// Flow names a way a provider issues an identity whose user name is the
// consumer ID.
type Flow string

// The flows, as FlowOf reads them from a stored Tenant.
const (
	// FlowHandshake is the nonce handshake: a Tenant the provider accepted
	// (Provider.Accept), renewed through Renews.
	FlowHandshake Flow = "NonceHandshake"
	// FlowSharedToken is the shared-token authentication server
	// (authserver): a Tenant it recorded, marked with FlowAnnotation.
	FlowSharedToken Flow = "SharedToken"
	// FlowUnrecorded is a certificate cached for the consumer that no
	// stored Tenant accounts for: its Tenant was unpeered (the certificate
	// stays held until it expires), deleted without the provider
	// forgetting the consumer, or it was issued before flows recorded
	// Tenants.
	FlowUnrecorded Flow = "Unrecorded"
)

// FlowAnnotation marks a Tenant recorded by a flow other than the nonce
// handshake; its value is the Flow. The Tenant reconciler does not accept
// such a Tenant (it carries no signature), it only enforces its condition.
const FlowAnnotation = "kubepact.io/flow"

// FlowOf returns the flow that recorded the stored Tenant t.
func FlowOf(t *authv1beta1.Tenant) Flow {
	if t != nil && Flow(t.Annotations[FlowAnnotation]) == FlowSharedToken {
		return FlowSharedToken
	}
	return FlowHandshake
}

// HeldError reports a consumer ID whose identity another key holds.
type HeldError struct {
	// ConsumerID is the consumer ID asked for.
	ConsumerID string
	// Flow is the flow that issued the live certificate held.
	Flow Flow
	// NotAfter is when that certificate expires; zero when the holder is a
	// Tenant of another key that has no certificate yet.
	NotAfter time.Time
}

func (e *HeldError) Error() string {
	if e.NotAfter.IsZero() {
		return fmt.Sprintf("%v: consumer %s has a Tenant of the %s flow for another key; "+
			"delete it (and readmit the consumer) to hand the ID to another key", ErrIdentityHeld, e.ConsumerID, e.Flow)
	}
	return fmt.Sprintf("%v: consumer %s holds a certificate issued by the %s flow, valid until %s, for another key; "+
		"a second key would share its user name, and Kubernetes cannot revoke the first certificate: "+
		"revoke the consumer (kubepact unauthenticate --revoke, or drain tenant and delete the Tenant) and readmit it to hand the ID to another key",
		ErrIdentityHeld, e.ConsumerID, e.Flow, e.NotAfter.UTC().Format(time.RFC3339))
}

func (e *HeldError) Unwrap() error { return ErrIdentityHeld }

// TenantReader reads stored Tenants: Get returns the Tenant
// namespace/name or an error wrapping tenant.ErrNotFound. tenant.Store is
// one.
type TenantReader interface {
	Get(ctx context.Context, namespace, name string) (*authv1beta1.Tenant, error)
}

// Admit is the lifecycle decision every flow that issues an identity for
// consumerID takes before it writes anything: it refuses a consumer whose
// stored Tenant is Drained (an error wrapping ErrDrained) and one whose
// revocation record is in force at now (a *RevokedError), and otherwise
// returns the stored Tenant, nil when there is none. A record that cannot
// be read fails the admission rather than passing it.
func Admit(ctx context.Context, tenants TenantReader, revocations Revocations, consumerID string, now time.Time) (*authv1beta1.Tenant, error) {
	if err := clusterid.Validate(consumerID); err != nil {
		return nil, err
	}
	// Both reads at once: a handshake waits for the slower, not the sum.
	var (
		revokedErr error
		read       = make(chan struct{})
	)
	go func() {
		defer close(read)
		revokedErr = Revoked(ctx, revocations, consumerID, now)
	}()
	stored, err := tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	<-read
	switch {
	case err == nil && Condition(stored.Spec.TenantCondition) == authv1beta1.TenantConditionDrained:
		return nil, fmt.Errorf("Tenant %s/%s: %w: delete it, and readmit the consumer, to bind it again", stored.Namespace, stored.Name, ErrDrained)
	case errors.Is(err, tenant.ErrNotFound):
		stored = nil
	case err != nil:
		return nil, err
	}
	return stored, revokedErr
}

// Revoked is the revocation half of Admit, for a flow that judges the
// Tenant's condition its own way (ResourceSlices): a *RevokedError when a
// revocation record of consumerID is in force at now, nil when there is
// none or it has ended. A record that cannot be read fails it rather than
// passing it.
func Revoked(ctx context.Context, revocations Revocations, consumerID string, now time.Time) error {
	r, err := revocations.Get(ctx, consumerID)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	return r.Check(now)
}

// Gate is Admit over its ports, for callers that hold the consumer ID only
// (saidentity.Issue).
type Gate struct {
	Tenants     TenantReader
	Revocations Revocations
	// Clock is the time revocation records are judged at; nil means the
	// real clock.
	Clock clock.PassiveClock
}

// Admit runs Admit for consumerID now.
func (g Gate) Admit(ctx context.Context, consumerID string) (*authv1beta1.Tenant, error) {
	if g.Tenants == nil || g.Revocations == nil {
		return nil, errors.New("lifecycle: the gate needs Tenants and Revocations")
	}
	c := g.Clock
	if c == nil {
		c = clock.RealClock{}
	}
	return Admit(ctx, g.Tenants, g.Revocations, consumerID, c.Now())
}

// CheckHolder refuses a new identity for consumerID while another key
// holds a live certificate for it, whatever flow issued it: Kubernetes
// cannot revoke a client certificate, and both would carry the same user
// name. stored is the consumer's stored Tenant (nil when there is none),
// cached the csr.Cache entry of csr.CacheKey{ConsumerID: consumerID} (nil
// when there is none), and claim the keys the new request proves it holds
// (the caller checks the proof before it signs anything): for a handshake
// the Tenant's spec.publicKey and its CSR's key, for the token server the
// CSR's key.
//
// A live certificate is one that parses and whose NotAfter is after now:
// the certificate in stored's status.authParams, and the cached one. Each
// is held by a set of keys. The stored Tenant's certificate is held by its
// spec.publicKey (the cluster key a handshake verified, or the key the
// token server recorded), the key of its spec.csr and the key of the
// certificate. The cached certificate is held by the key of its CSR and
// its certificate and, when that key is one of the stored Tenant's, by the
// Tenant's keys too: a Strict consumer's identity key is bound to its
// cluster key by the Tenant. A claim that shares a key with every live
// certificate's holders is the holder (a retry, a renewal with a fresh key
// under the same cluster key, a re-authentication signed by the same
// cluster key); otherwise CheckHolder returns a *HeldError naming the
// flow of the first certificate held by others: FlowOf(stored), or
// FlowUnrecorded for a cached certificate no stored Tenant accounts for.
func CheckHolder(consumerID string, stored *authv1beta1.Tenant, cached *csr.CacheEntry, claim []crypto.PublicKey, now time.Time) error {
	var tenantKeys []crypto.PublicKey
	if stored != nil {
		if pub, err := keys.ParsePublicKey(stored.Spec.PublicKey); err == nil {
			tenantKeys = append(tenantKeys, pub)
		}
		if pub := csrKey(stored.Spec.CSR); pub != nil {
			tenantKeys = append(tenantKeys, pub)
		}
		if stored.Status.AuthParams != nil {
			if leaf := live(stored.Status.AuthParams.SignedCRT, now); leaf != nil {
				held := slices.Concat(tenantKeys, []crypto.PublicKey{leaf.PublicKey})
				if !shares(held, claim) {
					return &HeldError{ConsumerID: consumerID, Flow: FlowOf(stored), NotAfter: leaf.NotAfter}
				}
			}
		}
	}
	if cached == nil {
		return nil
	}
	leaf := live(cached.Certificate, now)
	if leaf == nil {
		return nil
	}
	held := []crypto.PublicKey{leaf.PublicKey}
	if pub := csrKey(cached.CSR); pub != nil {
		held = append(held, pub)
	}
	flow := FlowUnrecorded
	if stored != nil && shares(tenantKeys, held) {
		held, flow = slices.Concat(held, tenantKeys), FlowOf(stored)
	}
	if !shares(held, claim) {
		return &HeldError{ConsumerID: consumerID, Flow: flow, NotAfter: leaf.NotAfter}
	}
	return nil
}

// live returns the leaf of chain when it parses and is valid after now,
// nil otherwise.
func live(chain []byte, now time.Time) *x509.Certificate {
	if len(chain) == 0 {
		return nil
	}
	leaf, err := csr.ParseCertificate(chain)
	if err != nil || !leaf.NotAfter.After(now) {
		return nil
	}
	return leaf
}

// csrKey returns the public key of a PEM CSR, nil when it does not parse.
func csrKey(b []byte) crypto.PublicKey {
	if len(b) == 0 || len(b) > csr.MaxSize {
		return nil
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return nil
	}
	return req.PublicKey
}

// shares reports whether a and b have a key in common.
func shares(a, b []crypto.PublicKey) bool {
	for _, x := range a {
		for _, y := range b {
			if x != nil && y != nil && keys.Equal(x, y) {
				return true
			}
		}
	}
	return false
}

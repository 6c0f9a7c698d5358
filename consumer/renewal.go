package consumer

import (
	"bytes"
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/step"
)

// ErrNotAuthenticated reports a renewal asked for a provider the consumer
// holds no applied ControlPlane Identity for.
var ErrNotAuthenticated = errors.New("no identity held for the provider")

// RenewalRequest is what a consumer keeps for the renewal of one
// ControlPlane identity.
type RenewalRequest struct {
	// Renew is the Renew to keep in the tenant namespace for the provider,
	// replicated to the provider.
	Renew *authv1beta1.Renew
	// At is when a Strict consumer renews the certificate held with a fresh
	// key (renewal.Deadline); the zero time for a consumer that leaves
	// renewal to the provider.
	At time.Time
}

// RenewRequest returns the Renew the consumer keeps for its ControlPlane
// Identity for providerID (see renewal.ForControlPlane), given the Renew
// held, nil when there is none. The Identity must be held, else
// ErrNotAuthenticated.
//
// A consumer that is not Strict sends what a Liqo consumer sends: the
// provider re-signs its certificate between half and two thirds of the
// lifetime, and the Renew's status brings it back. A Strict consumer asks for a certificate
// for the key it holds until the renewal deadline, and from then on for a
// fresh key, stored in Ports.IdentityKeys under
// renewal.NextKeyName before RenewRequest returns the CSR for it, so a
// retry after a crash asks for the same key; a switch to it that a crash
// interrupted is completed first. The CSR of held is kept while
// it is for the key asked for, so asking again writes nothing new. A
// consumer whose key of its own was only adopted on upgrade (AdoptKeys)
// renews as a Strict one does, so that key is replaced.
func (c *Consumer) RenewRequest(ctx context.Context, providerID string, held *authv1beta1.Renew) (*RenewalRequest, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	name := identity.ControlPlaneName(providerID)
	id, err := c.heldIdentity(ctx, clusterid.TenantNamespace(providerID), name)
	if err != nil {
		return nil, stepError(step.CertificateRenewed, err)
	}
	if id == nil || id.Status.KubeconfigSecretRef == nil {
		return nil, stepError(step.CertificateRenewed, fmt.Errorf("%w: %s", ErrNotAuthenticated, providerID))
	}
	out := &RenewalRequest{Renew: renewal.ForControlPlane(c.id, id)}
	if !c.opts.Strict {
		// A key adopted on upgrade (AdoptKeys) is replaced at the next
		// renewal, as a Strict consumer replaces every key.
		switch adopted, err := c.adoptedControlPlaneKey(ctx, providerID); {
		case err != nil:
			return nil, stepError(step.CertificateRenewed, err)
		case !adopted:
			return out, nil
		}
	}
	cert, err := csr.ParseCertificate(id.Spec.AuthParams.SignedCRT)
	if err != nil {
		return nil, stepError(step.CertificateRenewed, fmt.Errorf("%w: Identity %s: %w", identity.ErrMalformed, name, err))
	}
	// A switch that a crash interrupted completes first: the next key
	// becomes the identity's key, and the old one goes.
	if err := c.promoteKey(ctx, providerID, cert.PublicKey); err != nil {
		return nil, stepError(step.CertificateRenewed, err)
	}
	if out.At, err = c.renewalDeadline(providerID, cert); err != nil {
		return nil, stepError(step.CertificateRenewed, err)
	}
	key, err := c.tlsKey(ctx, providerID, id)
	if err != nil {
		return nil, stepError(step.CertificateRenewed, err)
	}
	if !c.opts.Clock.Now().Before(out.At) {
		// Stored before the CSR leaves: the key the provider certifies is
		// one the consumer holds, whatever happens next.
		key, err = c.ensureKey(ctx, renewal.NextKeyName(name), controlPlaneUse(providerID))
		if err != nil {
			return nil, stepError(step.CertificateRenewed, err)
		}
	}
	pub, err := keys.MarshalPublicKey(key.Public())
	if err != nil {
		return nil, stepError(step.CertificateRenewed, err)
	}
	out.Renew.Spec.PublicKey = pub
	if out.Renew.Spec.CSR = heldCSR(held, c.id, key.Public()); out.Renew.Spec.CSR == nil {
		if out.Renew.Spec.CSR, err = csr.Create(c.opts.Rand, key, csr.ControlPlaneSubject(c.id)); err != nil {
			return nil, stepError(step.CertificateRenewed, err)
		}
	}
	return out, nil
}

// heldCSR returns the CSR of held when it is consumerID's ControlPlane CSR
// for pub, nil otherwise.
func heldCSR(held *authv1beta1.Renew, consumerID string, pub crypto.PublicKey) []byte {
	if held == nil || len(held.Spec.CSR) == 0 {
		return nil
	}
	if _, err := csr.Check(held.Spec.CSR, csr.ControlPlanePolicy(consumerID, pub)); err != nil {
		return nil
	}
	return bytes.Clone(held.Spec.CSR)
}

// deadline is the renewal deadline drawn for one certificate.
type deadline struct {
	cert [sha256.Size]byte
	at   time.Time
}

// renewalDeadline returns the renewal deadline of cert, the certificate held
// for providerID, drawn once per certificate.
func (c *Consumer) renewalDeadline(providerID string, cert *x509.Certificate) (time.Time, error) {
	sum := sha256.Sum256(cert.Raw)
	c.renewMu.Lock()
	defer c.renewMu.Unlock()
	if d, ok := c.deadlines[providerID]; ok && d.cert == sum {
		return d.at, nil
	}
	at, err := renewal.Deadline(cert, c.opts.Rand)
	if err != nil {
		return time.Time{}, err
	}
	if c.deadlines == nil {
		c.deadlines = map[string]deadline{}
	}
	c.deadlines[providerID] = deadline{cert: sum, at: at}
	return at, nil
}

// Renewed applies the credentials that the provider providerID returned in
// the status of r, the Renew of the consumer's ControlPlane Identity for it,
// when they carry another certificate than the Identity held; otherwise it
// returns nil and changes nothing. r must be that Renew (renewal.ErrForeign)
// and the Identity must be held (ErrNotAuthenticated).
//
// The new credentials replace the held ones only as Apply allows (see
// Apply, whose checks and errors apply): the certificate must be the
// consumer's, for a key it holds, valid now, with the API server and CA of
// the kubeconfig held unless opts.ReplaceEndpoint, and, with
// Ports.Reviewer, proved online before anything is written; the
// kubeconfig Secret is then rewritten in one write. Until then the held
// kubeconfig stays as it is, and a failure changes nothing: the caller tries
// again later. A certificate for the key renewal.NextKeyName names makes
// that key the identity's key, and the old key is deleted after the
// kubeconfig Secret is written.
func (c *Consumer) Renewed(ctx context.Context, providerID string, r *authv1beta1.Renew, opts *ApplyOptions) (*Authenticated, error) {
	if err := clusterid.Validate(providerID); err != nil {
		return nil, err
	}
	name, namespace := identity.ControlPlaneName(providerID), clusterid.TenantNamespace(providerID)
	if r == nil || r.Name != renewal.Name(providerID) || r.Namespace != namespace || r.Spec.ConsumerClusterID != c.id {
		return nil, stepError(step.IdentityRenewed, fmt.Errorf("%w: not the Renew of %s's ControlPlane identity for %s", renewal.ErrForeign, c.id, providerID))
	}
	held, err := c.heldIdentity(ctx, namespace, name)
	if err != nil {
		return nil, stepError(step.IdentityRenewed, err)
	}
	if held == nil {
		return nil, stepError(step.IdentityRenewed, fmt.Errorf("%w: %s", ErrNotAuthenticated, providerID))
	}
	if !renewal.Changed(held.Spec.AuthParams.SignedCRT, &r.Status) {
		return nil, nil
	}
	next := held.DeepCopy()
	next.Spec.AuthParams = *r.Status.AuthParams.DeepCopy()
	a, err := c.Apply(ctx, providerID, next, opts)
	if err != nil {
		return nil, err
	}
	if c.ports.IdentityKeys != nil {
		cert, err := a.Kubeconfig.ClientCertificate()
		if err != nil {
			return nil, stepError(step.IdentityRenewed, err)
		}
		if err := c.promoteKey(ctx, providerID, cert.PublicKey); err != nil {
			return nil, stepError(step.IdentityRenewed, err)
		}
	}
	c.step(ctx, step.Done{Name: step.IdentityRenewed})
	return a, nil
}

// promoteKey makes the next key of providerID's ControlPlane identity its
// key once the identity's certificate, pub, is for it, attested under its
// new name, and deletes the old key. Each step resumes after a crash:
// tlsKey finds the key the certificate is for under either name meanwhile.
// Only a next key this consumer attested is promoted.
func (c *Consumer) promoteKey(ctx context.Context, providerID string, pub crypto.PublicKey) error {
	name, use := identity.ControlPlaneName(providerID), controlPlaneUse(providerID)
	nextName := renewal.NextKeyName(name)
	next, err := c.heldKey(ctx, nextName, use)
	switch {
	case err != nil:
		return err
	case next == nil:
		return nil
	case !keys.Equal(next.Public(), pub):
		return nil // a certificate for the key held: the next key waits for its own
	}
	if err := c.ports.IdentityKeys.Delete(ctx, name); err != nil {
		return err
	}
	if err := c.moveKey(ctx, name, use, next, false); err != nil {
		return fmt.Errorf("promoting key %s: %w", name, err)
	}
	return c.ports.IdentityKeys.Delete(ctx, nextName)
}

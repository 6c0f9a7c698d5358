package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/step"
)

// Renew answers r, a Renew found in a consumer's tenant namespace on this
// provider, and returns the credentials for r's status.
//
// The namespace decides which consumer asks (renewal.Check): a Renew
// anywhere else, naming another consumer, or asking for another identity
// than the ControlPlane's is refused, wrapping renewal.ErrForeign or
// renewal.ErrUnsupported. The consumer's Tenant must be accepted
// (renewal.ErrNotAccepted), and the consumer admitted as Accept admits it
// (lifecycle.Admit): a Drained Tenant is refused with an error wrapping
// renewal.ErrDrained and lifecycle.ErrDrained, a consumer whose
// revocation record is in force with a *lifecycle.RevokedError, whether
// or not a certificate is asked for.
//
// Without spec.csr, as a Liqo consumer sends it, Renew returns the Tenant's
// status.authParams, which the Tenant's reconciler re-signs between half and
// two thirds of the certificate's lifetime (renewal.ProviderDeadline). With spec.csr and spec.publicKey, as a Strict
// kubepact consumer sends them, the CSR must pass the exact ControlPlane
// policy of that consumer for that key (csr.ControlPlanePolicy). The
// certificate the Renew last gave, recorded under renewal.RecordKey, is
// given again while it is valid and for that key, since the consumer renews
// by changing its key; else the Tenant's, if it is for that key. A new key
// is refused before half the lifetime of the certificate the consumer holds
// (*renewal.TooEarlyError); otherwise the consumer's user name must hold no
// privilege of its own (rbac.CheckUnprivileged), and the CSR is signed and
// the certificate checked (csr.CheckIssued). A Signer's errors,
// csr.ErrPending included, are returned as they are. Every certificate
// given that the record does not hold yet is recorded before it is
// returned: Renew writes nothing else but what the Signer does.
//
// The certificate the consumer holds is decided from the provider's own
// records only: the record, a Secret in the tenant namespace that no
// identity of the consumer may read or write, or else the Tenant's status,
// which only the provider writes. r's status is the consumer's to write
// (Liqo's ControlPlane role grants renews/status) and is never read: junk,
// nothing, an old or a foreign certificate there cannot make the provider
// sign for key after key.
func (p *Provider) Renew(ctx context.Context, r *authv1beta1.Renew) (*authv1beta1.AuthParams, error) {
	consumerID, err := renewal.Check(r, p.id)
	if err != nil {
		return nil, stepError(step.CertificateRenewed, err)
	}
	t, err := p.admitRenewal(ctx, consumerID)
	if err != nil {
		return nil, stepError(step.CertificateRenewed, err)
	}
	params := t.Status.AuthParams.DeepCopy()
	if len(r.Spec.CSR) == 0 {
		p.step(ctx, step.Done{Name: step.CertificateRenewed})
		return params, nil
	}

	req, err := p.renewalRequest(r, consumerID)
	if err != nil {
		return nil, stepError(step.CertificateRenewed, err)
	}
	now := p.opts.Clock.Now()
	record := renewal.RecordKey(consumerID)
	var renewed []byte
	switch e, err := p.ports.Certificates.Get(ctx, record); {
	case err == nil:
		renewed = e.Certificate
	case !errors.Is(err, csr.ErrNotFound):
		return nil, stepError(step.CertificateRenewed, fmt.Errorf("reading certificate record %s/%s: %w", record.Namespace(), record.SecretName(), err))
	}
	// Recorded before it leaves: a consumer given a certificate holds it,
	// whatever it writes in the Renew's status afterwards.
	keep := func(cert []byte) error {
		if err := p.ports.Certificates.Put(ctx, record, csr.CacheEntry{CSR: req.CSR.PEM(), Certificate: cert}); err != nil {
			return stepError(step.CertificateRenewed, fmt.Errorf("writing certificate record %s/%s: %w", record.Namespace(), record.SecretName(), err))
		}
		return nil
	}
	for i, held := range [][]byte{renewed, params.SignedCRT} {
		if len(held) == 0 {
			continue
		}
		if _, err := csr.CheckIssued(held, req, now); err == nil {
			if i > 0 {
				// The Tenant's: given from now on, also once the Tenant's
				// reconciler re-signs it, until the consumer asks for a
				// new key.
				if err := keep(held); err != nil {
					return nil, err
				}
			}
			params.SignedCRT = bytes.Clone(held)
			return params, nil
		}
	}
	cert, err := p.signNewKey(ctx, consumerID, req, renewed, params.SignedCRT, now)
	if err != nil {
		return nil, stepError(step.CertificateRenewed, err)
	}
	if err := keep(cert); err != nil {
		return nil, err
	}
	params.SignedCRT = cert
	p.step(ctx, step.Done{Name: step.CertificateRenewed})
	return params, nil
}

// renewalRequest is the request of r, a Renew of consumerID with a CSR:
// its key must parse, and its CSR pass the exact ControlPlane policy of
// that consumer for that key.
func (p *Provider) renewalRequest(r *authv1beta1.Renew, consumerID string) (csr.Request, error) {
	pub, err := keys.ParsePublicKey(r.Spec.PublicKey)
	if err != nil {
		return csr.Request{}, fmt.Errorf("%w: spec.publicKey: %w", renewal.ErrMalformed, err)
	}
	checked, err := csr.Check(r.Spec.CSR, csr.ControlPlanePolicy(consumerID, pub))
	if err != nil {
		return csr.Request{}, err
	}
	return csr.Request{CSR: checked, Lifetime: p.opts.CertificateLifetime}, nil
}

// signNewKey signs req, a renewal of consumerID to a new key, and checks
// what was issued. A new key comes not before half the lifetime of the
// certificate the consumer holds: the last one the Renew gave (renewed),
// or else the Tenant's. The consumer's user name must hold no privilege.
func (p *Provider) signNewKey(ctx context.Context, consumerID string, req csr.Request, renewed, tenants []byte, now time.Time) ([]byte, error) {
	holds := tenants
	if cert, err := csr.ParseCertificate(renewed); err == nil && cert.Subject.CommonName == consumerID {
		holds = renewed
	}
	if cert, err := csr.ParseCertificate(holds); err == nil && now.Before(cert.NotAfter) && now.Before(renewal.EarliestNewKey(cert)) {
		return nil, &renewal.TooEarlyError{Until: renewal.EarliestNewKey(cert)}
	}
	if err := rbac.CheckUnprivileged(ctx, p.ports.RBAC, consumerID, controlPlaneGroups()); err != nil {
		return nil, err
	}
	cert, err := p.ports.Signer.Sign(ctx, req)
	if err != nil {
		return nil, err
	}
	if _, err := csr.CheckIssued(cert, req, now); err != nil {
		return nil, fmt.Errorf("certificate issued for %s: %w", consumerID, err)
	}
	return cert, nil
}

// admitRenewal returns the accepted Tenant of consumerID, which asks for a
// renewal, admitted as Accept admits it (lifecycle.Admit).
func (p *Provider) admitRenewal(ctx context.Context, consumerID string) (*authv1beta1.Tenant, error) {
	namespace := clusterid.TenantNamespace(consumerID)
	t, err := lifecycle.Admit(ctx, p.ports.Tenants, p.ports.Lifecycle.Revocations, consumerID, p.opts.Clock.Now())
	switch {
	case errors.Is(err, lifecycle.ErrDrained):
		return nil, fmt.Errorf("%w: %w", renewal.ErrDrained, err)
	case err != nil:
		return nil, err
	case t == nil:
		return nil, fmt.Errorf("%w: no Tenant %s/%s", renewal.ErrNotAccepted, namespace, consumerID)
	case t.Status.AuthParams == nil || len(t.Status.AuthParams.SignedCRT) == 0:
		return nil, fmt.Errorf("%w: Tenant %s/%s has no certificate yet", renewal.ErrNotAccepted, namespace, consumerID)
	}
	return t, nil
}

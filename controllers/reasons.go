package controllers

import (
	"context"
	"errors"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/peer"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// reasonOf returns the Event reason for err and whether err is terminal:
// the object itself is refused and retrying the same object cannot help.
// fallback is the reason of any other error, which is transient.
func reasonOf(err error, fallback string) (string, bool) {
	if reason, terminal, ok := admissionReason(err); ok {
		return reason, terminal
	}
	return objectReason(err, fallback)
}

// admissionReason is reasonOf for a refusal of the consumer, whatever its
// object: its lifecycle, its nonce, its commitment, its privileges, the
// provider's configuration.
func admissionReason(err error) (reason string, terminal, ok bool) {
	switch {
	case errors.Is(err, lifecycle.ErrRevoked):
		return contract.ReasonConsumerRevoked, true, true
	case errors.Is(err, lifecycle.ErrDrained):
		return contract.ReasonTenantDrained, true, true
	case errors.Is(err, lifecycle.ErrTransition):
		return contract.ReasonTransitionRefused, true, true
	case errors.Is(err, nonce.ErrRedeemed):
		return contract.ReasonNonceRedeemed, true, true
	case errors.Is(err, nonce.ErrExpired):
		return contract.ReasonNonceExpired, true, true
	case errors.Is(err, nonce.ErrNotFound), errors.Is(err, nonce.ErrMalformed):
		return contract.ReasonNonceNotFound, true, true
	case errors.Is(err, rbac.ErrPrivilegedUser):
		return contract.ReasonPrivilegedUser, true, true
	case errors.Is(err, lifecycle.ErrIdentityHeld):
		return contract.ReasonIdentityHeld, true, true
	case errors.Is(err, enrol.ErrNotCommitted):
		return contract.ReasonNotCommitted, true, true
	case errors.Is(err, enrol.ErrBadRequest), errors.Is(err, enrol.ErrMalformed), errors.Is(err, enrol.ErrClusterKeyCSR):
		return contract.ReasonRequestRejected, true, true
	case errors.Is(err, provider.ErrNoEndpoint):
		return contract.ReasonAPIServerURLUnknown, true, true
	case errors.Is(err, rbac.ErrMissingRole):
		return contract.ReasonPeerRoleMissing, false, true
	}
	return "", false, false
}

// objectReason is reasonOf for a refusal of the object itself: its
// signature, its CSR, its Identity, its form.
func objectReason(err error, fallback string) (string, bool) {
	var denied *csr.DeniedError
	switch {
	case errors.Is(err, tenant.ErrTranscriptMissing), errors.Is(err, tenant.ErrTranscriptMismatch),
		errors.Is(err, tenant.ErrTranscriptExpired):
		return contract.ReasonTranscriptRejected, true
	case errors.Is(err, keys.ErrBadSignature):
		return contract.ReasonInvalidSignature, true
	case errors.Is(err, tenant.ErrNotTenantNamespace):
		return contract.ReasonNotTenantNamespace, true
	case errors.As(err, &denied):
		return contract.ReasonCSRDenied, true
	case errors.Is(err, csr.ErrMalformed), errors.Is(err, csr.ErrSignature), errors.Is(err, csr.ErrCommonName),
		errors.Is(err, csr.ErrOrganization), errors.Is(err, csr.ErrSAN), errors.Is(err, csr.ErrKeyMismatch):
		return contract.ReasonCSRRejected, true
	case errors.Is(err, csr.ErrFailed), errors.Is(err, csr.ErrBadCertificate):
		return contract.ReasonSigningFailed, false
	case errors.Is(err, identity.ErrRejected), errors.Is(err, identity.ErrWrongUser):
		return contract.ReasonIdentityRejected, true
	case errors.Is(err, identity.ErrMalformed), errors.Is(err, identity.ErrUntrusted), errors.Is(err, identity.ErrKeyMismatch),
		errors.Is(err, identity.ErrExpired), errors.Is(err, identity.ErrNotYetValid), errors.Is(err, identity.ErrSubject),
		errors.Is(err, identity.ErrCACertificate), errors.Is(err, identity.ErrKeyUsage), errors.Is(err, identity.ErrInvalidServer),
		errors.Is(err, identity.ErrWrongProvider):
		return contract.ReasonInvalidIdentity, true
	case errors.Is(err, clusterid.ErrInvalid), errors.Is(err, keys.ErrMalformed), errors.Is(err, keys.ErrUnsupported),
		errors.Is(err, keys.ErrWeak), errors.Is(err, keys.ErrWeakKey), errors.Is(err, tenant.ErrInvalidProxyURL),
		errors.Is(err, tenant.ErrMalformed), errors.Is(err, peer.ErrInvalidConfig):
		return contract.ReasonInvalidTenant, true
	}
	return fallback, false
}

// retried reports whether a failure of reason is retried with backoff: not
// when it is terminal, nor when it is fallback, the reconciler's reason for
// any other error (reasonOf), and err is not transient either.
func retried(err error, reason, fallback string, terminal bool) bool {
	return !terminal && (transient(err) || reason != fallback)
}

// transient reports whether err is worth retrying with backoff: an API
// error, a network error or a deadline. Anything else a step returns
// describes the object, and is terminal.
func transient(err error) bool {
	var status apierrors.APIStatus
	var netErr net.Error
	return errors.As(err, &status) || errors.As(err, &netErr) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// boundReason returns the Event reason naming the bound err is over.
func boundReason(err error) string {
	switch {
	case errors.Is(err, resourceslice.ErrSliceLimit):
		return contract.ReasonSliceLimitReached
	case errors.Is(err, resourceslice.ErrRekeyTooSoon):
		return contract.ReasonRekeyTooSoon
	default:
		return contract.ReasonCertificateRateLimited
	}
}

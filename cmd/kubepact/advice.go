package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
)

// consumerPlaceholder stands, in the texts of remedies, for the consumer of
// the handshake; advice replaces it with the consumer's ID when it knows it.
const consumerPlaceholder = "CONSUMER_ID"

// newNonceAdvice ends the advice of every failure that only a new nonce cures.
const newNonceAdvice = "ask the provider for a new nonce: kubepact create nonce --remote-cluster-id " + consumerPlaceholder + "; " +
	"then the consumer signs it: kubepact generate tenant --nonce NONCE ..."

// missingRole is the advice when the provider lacks a ClusterRole consumers
// are bound to.
const missingRole = "the provider has not installed the ClusterRoles consumers are bound to: its administrator runs " +
	"kubepact install roles (or kubectl apply -k config/roles); on a Liqo provider, Liqo's chart installs them"

// remedy is what to do about one kind of failure.
type remedy struct {
	// errs are the errors that report the failure: it is err's remedy when
	// err wraps one of them (errors.Is).
	errs []error
	// as, when set, reports the failure for errors of a type (errors.As).
	as func(err error) bool
	// reasons are the reasons of the Warning Events with which kubepact's
	// controllers (contract.Final) or Liqo's refuse an object for this
	// failure.
	reasons []string
	// text is the advice; consumerPlaceholder stands for the consumer.
	text string
}

// remedies are what to do about each failure, in the order advice tries
// them: the first whose errors err wraps is err's.
var remedies = []remedy{
	{errs: []error{consumer.ErrInUse},
		text: "ResourceSlices of this consumer still hold identities on the provider: " +
			"delete those ResourceSlices (their Identities go with them), then run unauthenticate again"},
	{errs: []error{tenant.ErrNotTenantNamespace}, reasons: []string{contract.ReasonNotTenantNamespace},
		text: "a namespace of that name exists but was not made for this peer (it lacks the tenant namespace labels), " +
			"and whoever made it may hold rights in it: find who created it (the audit log; kubectl get rolebindings,roles -n NAMESPACE), " +
			"delete it, or, if an administrator made it for this peer, label it liqo.io/tenant-namespace=true and liqo.io/remote-cluster-id=ID"},
	{errs: []error{errUntrustedTenant},
		text: "someone who may write Secrets in the consumer's tenant namespace wrote that Tenant: nothing was applied; " +
			"find who (the audit log), take their rights on that namespace away, delete the Secret liqo-signed-nonce there and run authenticate again"},
	{errs: []error{lifecycle.ErrDrained}, reasons: []string{contract.ReasonTenantDrained},
		text: "the provider drained this consumer's Tenant; it is never bound again: the provider's administrator deletes it " +
			"(kubectl delete tenant -n liqo-tenant-" + consumerPlaceholder + " " + consumerPlaceholder + ") and, to bind the consumer before its old " +
			"certificates expire, runs kubepact readmit tenant --remote-cluster-id " + consumerPlaceholder},
	{errs: []error{lifecycle.ErrRevoked}, reasons: []string{contract.ReasonConsumerRevoked},
		text: "the provider revoked this consumer's certificates (drain, unauthenticate --revoke, or a Tenant annotated kubepact.io/revoke) and waits for them to expire; " +
			"its administrator may lift that: kubepact readmit tenant --remote-cluster-id " + consumerPlaceholder},
	{errs: []error{rbac.ErrMissingRole}, text: missingRole},
	{errs: []error{lifecycle.ErrTransition},
		text: "cordon only an Active Tenant, uncordon only a Cordoned one; drain works from any condition"},
	{errs: []error{nonce.ErrRedeemed}, reasons: []string{contract.ReasonNonceRedeemed},
		text: "another Tenant already redeemed the consumer's nonce; " + newNonceAdvice},
	{errs: []error{nonce.ErrNotFound}, reasons: []string{contract.ReasonNonceNotFound},
		text: "the consumer's nonce is gone: it was never issued, or a Tenant already redeemed it; " + newNonceAdvice},
	{errs: []error{nonce.ErrExpired}, reasons: []string{contract.ReasonNonceExpired},
		text: "the nonce expired before the Tenant came back; " + newNonceAdvice},
	{errs: []error{tenant.ErrTranscriptMissing},
		text: "this provider requires the transcript a kubepact consumer signs (--policy strict): " +
			"the consumer must generate the Tenant with kubepact generate tenant"},
	{errs: []error{tenant.ErrTranscriptExpired},
		text: "the Tenant's transcript expired before the provider accepted it (see --transcript-lifetime of generate tenant); " + newNonceAdvice},
	{errs: []error{tenant.ErrTranscriptMismatch},
		text: "the Tenant's transcript was signed for another provider, nonce or CSR; " +
			"the consumer must generate the Tenant with --remote-cluster-id set to this provider; " + newNonceAdvice},
	{errs: []error{keys.ErrBadSignature}, reasons: []string{contract.ReasonInvalidSignature, liqoSignatureVerificationFailed},
		text: "the Tenant is not signed over this nonce with the key it carries; " + newNonceAdvice},
	{errs: []error{csr.ErrCommonName, csr.ErrOrganization, csr.ErrSAN, csr.ErrKeyMismatch, csr.ErrSignature, csr.ErrMalformed},
		reasons: []string{contract.ReasonCSRRejected, liqoInvalidCSR},
		text: "the Tenant's CSR must be the ControlPlane CSR of its own key (CN = the consumer's cluster ID, O = liqo.io only, no SANs): " +
			"have the consumer generate it with kubepact generate tenant"},
	{as: isDenied,
		text: "the provider cluster denied the certificate signing request; see the CertificateSigningRequest's conditions"},
	{errs: []error{consumer.ErrEndpointChanged},
		text: "the provider's Identity names another API server or CA than the kubeconfig this cluster holds for it; " +
			"if the provider really moved or rotated its CA, run again with --replace-endpoint"},
	{errs: []error{identity.ErrWrongProvider},
		text: "this Identity was issued by another provider than --remote-cluster-id names: check which provider sent it"},
	{errs: []error{identity.ErrInvalidServer},
		text: "the provider hands out an API server that is not an https URL with a host: " +
			"it must give its https URL (--api-server-url of authenticate or generate identity)"},
	{errs: []error{identity.ErrKeyMismatch},
		text: "this Identity was issued for another key than this cluster's: it answers a Tenant signed with another key " +
			"(for example one made with --key-file); generate the Tenant on this cluster and ask the provider for a new Identity"},
	{errs: []error{identity.ErrExpired},
		text: "the Identity's certificate has expired: ask the provider for a new Identity"},
	{errs: []error{identity.ErrNotYetValid},
		text: "the Identity's certificate is not valid yet: check the clocks of both clusters"},
	{errs: []error{identity.ErrUntrusted},
		text: "the Identity's certificate does not chain to the --client-ca bundle: check that it holds the client CA of the provider's API server " +
			"(its --client-ca-file), not its serving CA, or ask the provider for a new Identity"},
	{errs: []error{identity.ErrSubject, identity.ErrCACertificate, identity.ErrKeyUsage},
		text: "this Identity was not issued to this cluster by that provider: ask the provider for a new Identity"},
	{errs: []error{identity.ErrRejected}, reasons: []string{contract.ReasonIdentityRejected},
		text: "the provider's API server refuses the Identity's certificate: it was not signed by a CA the provider trusts for clients, " +
			"or the provider no longer trusts it; ask the provider for a new Identity"},
	{errs: []error{identity.ErrWrongUser},
		text: "the provider's API server takes the Identity's certificate for another user than this cluster: ask the provider for a new Identity"},
	{errs: []error{keys.ErrUnattested}, reasons: []string{contract.ReasonKeyUnattested},
		text: "a key Secret in the consumer's key namespace was not made by this cluster's kubepact (someone created it under an expected name): " +
			"it is never used; delete it (kubectl delete secret -n liqo NAME, the name quoted above), find out who could create it, and run the command again"},
	{errs: []error{keys.ErrNotFound},
		text: "this cluster has no cluster key yet: the Tenant answered by this Identity must be generated on this cluster (kubepact generate tenant)"},
	{errs: []error{tenant.ErrNotFound},
		text: "the provider holds no Tenant for " + consumerPlaceholder + ": store it with kubepact apply tenant FILE, or pass it with -f FILE"},
	{errs: []error{context.DeadlineExceeded},
		text: "timed out: raise --timeout"},
	{as: apierrors.IsForbidden,
		text: "the kubeconfig's user lacks a permission this command needs"},
}

// blockerAdvice is what to do about a controller that cannot go on, by the
// reason of its Warning Event (contract.Blocking).
var blockerAdvice = map[string]string{
	contract.ReasonAPIServerURLUnknown: "the provider's controller does not know the https URL at which consumers reach its API server " +
		"(its cluster has no kube-public/cluster-info ConfigMap, as many managed clusters): its administrator sets " +
		"kubepact-controller's --api-server-url (and --api-server-ca-file unless its kubeconfig's CA serves it) in its Deployment; " +
		"once it restarted, run authenticate again",
	contract.ReasonPeerRoleMissing: missingRole + "; the controller retries the Tenant, and authenticate run again waits for it",
	contract.ReasonPublishRefused: "the consumer's controller runs under another identity than its ServiceAccount (an administrator's kubeconfig?), " +
		"and only kubepact-controller's ServiceAccount may publish the cluster's public key (admission policy kubepact-cluster-public-key): " +
		"run kubepact-controller as its ServiceAccount, in the cluster as config/ deploys it, or outside with a kubeconfig whose token is " +
		"kubectl create token kubepact-controller -n kubepact-system (or with --as=system:serviceaccount:kubepact-system:kubepact-controller); " +
		"then run authenticate again",
}

// advice returns what to do about err, or "" when there is nothing to add.
// consumerID is the consumer of the handshake, when known.
func advice(err error, consumerID string) string {
	consumer := consumerID
	if consumer == "" {
		consumer = consumerPlaceholder
	}
	if text, ok := waitAdvice(err, consumer); ok {
		return text
	}
	for _, r := range remedies {
		if r.matches(err) {
			return strings.ReplaceAll(r.text, consumerPlaceholder, consumer)
		}
	}
	return ""
}

// matches reports whether err is r's failure.
func (r remedy) matches(err error) bool {
	if r.as != nil && r.as(err) {
		return true
	}
	return slices.ContainsFunc(r.errs, func(target error) bool { return errors.Is(err, target) })
}

// refusalAdvice returns what to do about an object a controller refused
// with an Event of reason, "" when there is nothing to add.
func refusalAdvice(reason, consumer string) string {
	for _, r := range remedies {
		if slices.Contains(r.reasons, reason) {
			return strings.ReplaceAll(r.text, consumerPlaceholder, consumer)
		}
	}
	return ""
}

// waitAdvice returns what to do about err when err ended a wait of the CLI
// for a controller, or a run of it, and whether it did.
func waitAdvice(err error, consumer string) (string, bool) {
	var (
		refused *RefusedError
		blocked *BlockedError
		timeout *TimeoutError
		gone    *ControllerGoneError
		stopped *InterruptedError
		failed  *step.Error
	)
	switch {
	case errors.Is(err, errProviderNeedsClusterKey):
		return "the provider's controller is Liqo's, which certifies only the consumer's cluster key: run authenticate again with " +
			"--send-cluster-key to send it, knowing that the cluster's private key then lands in the kubeconfig Secret of this peering " +
			"(SECURITY.md, \"Where the cluster key goes\")", true
	case errors.As(err, &stopped):
		return strings.Trim(strings.Join([]string{stopped.Resume, stopped.Clean}, "; "), "; "), true
	case errors.As(err, &gone):
		return fmt.Sprintf("the %s cluster's controller (%s) stopped while the CLI waited for it, as if killed: "+
			"look at its pods, their restarts and logs (kubectl get pods -A -l app.kubernetes.io/name=%s, kubectl logs); "+
			"once it runs again, run the command again: it goes on from what is left", gone.Role, gone.Where, kubepactApp), true
	case errors.As(err, &blocked) && blockerAdvice[blocked.Reason] != "":
		return blockerAdvice[blocked.Reason], true
	case errors.As(err, &refused):
		return refusalAdvice(refused.Reason, consumer), true
	case errors.As(err, &timeout):
		return timeoutAdvice(timeout, consumer), true
	case errors.Is(err, context.DeadlineExceeded) && errors.As(err, &failed) && failed.Step == step.CertificateIssued:
		return "timed out waiting for the certificate: raise --timeout, and check that the provider's kube-controller-manager signs CertificateSigningRequests", true
	}
	return "", false
}

// timeoutAdvice returns what to do about a wait that --timeout ended.
func timeoutAdvice(timeout *TimeoutError, consumer string) string {
	switch {
	case timeout.CSRPending:
		return fmt.Sprintf("the provider's controller waits for the consumer's CertificateSigningRequest to be signed: "+
			"check that the provider's kube-controller-manager signs CertificateSigningRequests "+
			"(kubectl get csr -l %s=%s shows one approved but not issued), then raise --timeout", clusterid.Label, consumer)
	case timeout.LastWarning != nil || (timeout.Last != nil && timeout.Last.Type == "Warning"):
		return "the controller's last Warning, quoted above, says what went wrong; fix it, or raise --timeout"
	case timeout.Controller != "":
		return "the controller (" + timeout.Controller + ") has not answered: look at its logs, or raise --timeout"
	}
	return "timed out: raise --timeout"
}

// isDenied reports whether err is a signer's denial of a CSR.
func isDenied(err error) bool {
	var denied *csr.DeniedError
	return errors.As(err, &denied)
}

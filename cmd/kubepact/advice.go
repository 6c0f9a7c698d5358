package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
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

// advice returns what to do about err, or "" when there is nothing to add.
// consumerID is the consumer of the handshake, when known.
func advice(err error, consumerID string) string {
	consumer := consumerID
	if consumer == "" {
		consumer = "CONSUMER_ID"
	}
	newNonce := fmt.Sprintf("ask the provider for a new nonce: kubepact create nonce --remote-cluster-id %s; "+
		"then the consumer signs it: kubepact generate tenant --nonce NONCE ...", consumer)
	var denied *csr.DeniedError
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
			"(SECURITY.md, \"Where the cluster key goes\")"
	case errors.As(err, &stopped):
		return strings.Trim(strings.Join([]string{stopped.Resume, stopped.Clean}, "; "), "; ")
	case errors.As(err, &gone):
		return fmt.Sprintf("the %s cluster's controller (%s) stopped while the CLI waited for it, as if killed: "+
			"look at its pods, their restarts and logs (kubectl get pods -A -l app.kubernetes.io/name=%s, kubectl logs); "+
			"once it runs again, run the command again: it goes on from what is left", gone.Role, gone.Where, kubepactApp)
	case errors.As(err, &blocked) && blocked.Reason == contract.ReasonAPIServerURLUnknown:
		return "the provider's controller does not know the https URL at which consumers reach its API server " +
			"(its cluster has no kube-public/cluster-info ConfigMap, as many managed clusters): its administrator sets " +
			"kubepact-controller's --api-server-url (and --api-server-ca-file unless its kubeconfig's CA serves it) in its Deployment; " +
			"once it restarted, run authenticate again"
	case errors.As(err, &blocked) && blocked.Reason == contract.ReasonPeerRoleMissing:
		return advice(rbac.ErrMissingRole, consumerID) + "; the controller retries the Tenant, and authenticate run again waits for it"
	case errors.As(err, &refused):
		if cause, ok := refusalCauses[refused.Reason]; ok {
			return advice(cause, consumerID)
		}
		return ""
	case errors.As(err, &timeout):
		switch {
		case timeout.CSRPending:
			return fmt.Sprintf("the provider's controller waits for the consumer's CertificateSigningRequest to be signed: "+
				"check that the provider's kube-controller-manager signs CertificateSigningRequests "+
				"(kubectl get csr -l %s=%s shows one approved but not issued), then raise --timeout", clusterid.Label, consumer)
		case timeout.Last != nil && timeout.Last.Type == "Warning":
			return "the controller's last Warning, quoted above, says what went wrong; fix it, or raise --timeout"
		case timeout.Controller != "":
			return "the controller (" + timeout.Controller + ") has not answered: look at its logs, or raise --timeout"
		}
		return "timed out: raise --timeout"
	case errors.Is(err, context.DeadlineExceeded) && errors.As(err, &failed) && failed.Step == step.CertificateIssued:
		return "timed out waiting for the certificate: raise --timeout, and check that the provider's kube-controller-manager signs CertificateSigningRequests"
	case errors.Is(err, kubepact.ErrInUse):
		return "ResourceSlices of this consumer still hold identities on the provider: " +
			"delete those ResourceSlices (their Identities go with them), then run unauthenticate again"
	case errors.Is(err, tenant.ErrNotTenantNamespace):
		return "a namespace of that name exists but was not made for this peer (it lacks the tenant namespace labels), " +
			"and whoever made it may hold rights in it: find who created it (the audit log; kubectl get rolebindings,roles -n NAMESPACE), " +
			"delete it, or, if an administrator made it for this peer, label it liqo.io/tenant-namespace=true and liqo.io/remote-cluster-id=ID"
	case errors.Is(err, errUntrustedTenant):
		return "someone who may write Secrets in the consumer's tenant namespace wrote that Tenant: nothing was applied; " +
			"find who (the audit log), take their rights on that namespace away, delete the Secret liqo-signed-nonce there and run authenticate again"
	case errors.Is(err, lifecycle.ErrDrained):
		return "the provider drained this consumer's Tenant; it is never bound again: the provider's administrator deletes it " +
			"(kubectl delete tenant -n liqo-tenant-" + consumer + " " + consumer + ") and, to bind the consumer before its old " +
			"certificates expire, runs kubepact readmit tenant --remote-cluster-id " + consumer
	case errors.Is(err, lifecycle.ErrRevoked):
		return "the provider revoked this consumer's certificates (drain, unauthenticate --revoke, or a Tenant annotated kubepact.io/revoke) and waits for them to expire; " +
			"its administrator may lift that: kubepact readmit tenant --remote-cluster-id " + consumer
	case errors.Is(err, rbac.ErrMissingRole):
		return "the provider has not installed the ClusterRoles consumers are bound to: its administrator runs " +
			"kubepact install roles (or kubectl apply -k config/roles); on a Liqo provider, Liqo's chart installs them"
	case errors.Is(err, lifecycle.ErrTransition):
		return "cordon only an Active Tenant, uncordon only a Cordoned one; drain works from any condition"
	case errors.Is(err, nonce.ErrRedeemed):
		return "another Tenant already redeemed the consumer's nonce; " + newNonce
	case errors.Is(err, nonce.ErrNotFound):
		return "the consumer's nonce is gone: it was never issued, or a Tenant already redeemed it; " + newNonce
	case errors.Is(err, nonce.ErrExpired):
		return "the nonce expired before the Tenant came back; " + newNonce
	case errors.Is(err, tenant.ErrTranscriptMissing):
		return "this provider requires the transcript a kubepact consumer signs (--policy strict): " +
			"the consumer must generate the Tenant with kubepact generate tenant"
	case errors.Is(err, tenant.ErrTranscriptExpired):
		return "the Tenant's transcript expired before the provider accepted it (see --transcript-lifetime of generate tenant); " + newNonce
	case errors.Is(err, tenant.ErrTranscriptMismatch):
		return "the Tenant's transcript was signed for another provider, nonce or CSR; " +
			"the consumer must generate the Tenant with --remote-cluster-id set to this provider; " + newNonce
	case errors.Is(err, keys.ErrBadSignature):
		return "the Tenant is not signed over this nonce with the key it carries; " + newNonce
	case errors.Is(err, csr.ErrCommonName), errors.Is(err, csr.ErrOrganization), errors.Is(err, csr.ErrSAN),
		errors.Is(err, csr.ErrKeyMismatch), errors.Is(err, csr.ErrSignature), errors.Is(err, csr.ErrMalformed):
		return "the Tenant's CSR must be the ControlPlane CSR of its own key (CN = the consumer's cluster ID, O = liqo.io only, no SANs): " +
			"have the consumer generate it with kubepact generate tenant"
	case errors.As(err, &denied):
		return "the provider cluster denied the certificate signing request; see the CertificateSigningRequest's conditions"
	case errors.Is(err, kubepact.ErrEndpointChanged):
		return "the provider's Identity names another API server or CA than the kubeconfig this cluster holds for it; " +
			"if the provider really moved or rotated its CA, run again with --replace-endpoint"
	case errors.Is(err, identity.ErrWrongProvider):
		return "this Identity was issued by another provider than --remote-cluster-id names: check which provider sent it"
	case errors.Is(err, identity.ErrInvalidServer):
		return "the provider hands out an API server that is not an https URL with a host: " +
			"it must give its https URL (--api-server-url of authenticate or generate identity)"
	case errors.Is(err, identity.ErrKeyMismatch):
		return "this Identity was issued for another key than this cluster's: it answers a Tenant signed with another key " +
			"(for example one made with --key-file); generate the Tenant on this cluster and ask the provider for a new Identity"
	case errors.Is(err, identity.ErrExpired):
		return "the Identity's certificate has expired: ask the provider for a new Identity"
	case errors.Is(err, identity.ErrNotYetValid):
		return "the Identity's certificate is not valid yet: check the clocks of both clusters"
	case errors.Is(err, identity.ErrUntrusted):
		return "the Identity's certificate does not chain to the --client-ca bundle: check that it holds the client CA of the provider's API server " +
			"(its --client-ca-file), not its serving CA, or ask the provider for a new Identity"
	case errors.Is(err, identity.ErrSubject), errors.Is(err, identity.ErrCACertificate), errors.Is(err, identity.ErrKeyUsage):
		return "this Identity was not issued to this cluster by that provider: ask the provider for a new Identity"
	case errors.Is(err, identity.ErrRejected):
		return "the provider's API server refuses the Identity's certificate: it was not signed by a CA the provider trusts for clients, " +
			"or the provider no longer trusts it; ask the provider for a new Identity"
	case errors.Is(err, identity.ErrWrongUser):
		return "the provider's API server takes the Identity's certificate for another user than this cluster: ask the provider for a new Identity"
	case errors.Is(err, keys.ErrUnattested):
		return "a key Secret in the consumer's key namespace was not made by this cluster's kubepact (someone created it under an expected name): " +
			"it is never used; delete it (kubectl delete secret -n liqo NAME, the name quoted above), find out who could create it, and run the command again"
	case errors.Is(err, keys.ErrNotFound):
		return "this cluster has no cluster key yet: the Tenant answered by this Identity must be generated on this cluster (kubepact generate tenant)"
	case errors.Is(err, tenant.ErrNotFound):
		return fmt.Sprintf("the provider holds no Tenant for %s: store it with kubepact apply tenant FILE, or pass it with -f FILE", consumer)
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out: raise --timeout"
	case apierrors.IsForbidden(err):
		return "the kubeconfig's user lacks a permission this command needs"
	}
	return ""
}

// refusalCauses are the errors whose advice fits the refusals of
// kubepact's and Liqo's controllers, by the reason of their Event.
var refusalCauses = map[string]error{
	contract.ReasonConsumerRevoked:    lifecycle.ErrRevoked,
	contract.ReasonTenantDrained:      lifecycle.ErrDrained,
	contract.ReasonNonceRedeemed:      nonce.ErrRedeemed,
	contract.ReasonNonceNotFound:      nonce.ErrNotFound,
	contract.ReasonNonceExpired:       nonce.ErrExpired,
	contract.ReasonInvalidSignature:   keys.ErrBadSignature,
	liqoSignatureVerificationFailed:   keys.ErrBadSignature,
	contract.ReasonCSRRejected:        csr.ErrMalformed,
	liqoInvalidCSR:                    csr.ErrMalformed,
	contract.ReasonKeyUnattested:      keys.ErrUnattested,
	contract.ReasonNotTenantNamespace: tenant.ErrNotTenantNamespace,
	contract.ReasonIdentityRejected:   identity.ErrRejected,
}

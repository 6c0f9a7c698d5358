package contract

// The keys kubepact adds to a liqo-signed-nonce Secret, beside Liqo's own
// (nonce.SecretKey, nonce.SignedSecretKey), which keep their meaning: a Liqo
// tool reading the Secret ignores these.
const (
	// TenantKey holds the Tenant the consumer sends to answer data.nonce,
	// as YAML in Liqo's wire format (tenant.Decode reads it): the cluster's
	// public key, the signature over the nonce, the CSR and kubepact's
	// transcript (made for the provider the Secret's namespace is for, and
	// expiring after tenant.DefaultTranscriptLifetime). The signed-nonce
	// reconciler writes it with the signature, and again whenever it is
	// removed: a tool removes it to ask for a fresh one.
	//
	// It sits on the Secret rather than on an object of its own because it
	// answers that Secret's nonce: it is written in the same apply as the
	// signature, held to the Secret as read, so it can never answer another
	// nonce than the one beside it; a tool that creates the Secret and
	// waits for its signature (kubepact authenticate, liqoctl) reads it
	// with the same rights; and the signed-nonce admission policy already
	// limits who may ask for it (config/signed-nonce-policy). Nothing in it
	// is secret: the keys stay in the key namespace, so a tool that applies
	// it on the provider needs no access to them.
	TenantKey = "tenant.yaml"
	// TenantProxyURLKey, when set by whoever writes the request, is the
	// http(s) proxy the consumer reaches the provider through, written into
	// the Tenant's spec.proxyURL (and its transcript). It is data of a
	// Secret, not an annotation, because a proxy URL may carry a password.
	TenantProxyURLKey = "proxyURL"
	// TenantOwnKeyKey, set to TenantOwnKey by whoever writes the request,
	// asks for a Tenant whose CSR is for a fresh key of the ControlPlane
	// identity's own, as a Strict consumer makes (consumer.Options.Strict),
	// whatever this controller's own setting: the cluster key then only
	// signs the nonce and never lands in a kubeconfig. The key is stored in
	// the keyring (kubepact-key-controlplane-<provider ID> in the key
	// namespace) before the CSR is built, and the Identity reconciler
	// applies the certificate issued for it. Only a kubepact provider
	// accepts such a Tenant (a Liqo provider requires the CSR to be for the
	// cluster key), so kubepact authenticate asks for it only when it finds
	// kubepact-controller on the provider. Any other value is refused
	// (ReasonInvalidSignedNonceSecret) and nothing is signed.
	TenantOwnKeyKey = "ownKey"
	// TenantOwnKey is the one value of TenantOwnKeyKey.
	TenantOwnKey = "true"
)

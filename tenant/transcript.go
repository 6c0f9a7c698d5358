package tenant

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"golang.org/x/crypto/cryptobyte"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/nonce"
)

// The transcript is kubepact's addition to Liqo's handshake. Liqo's consumer
// signs only the nonce, which binds the signature to nothing else: not to the
// provider, not to the CSR, not to a time. A kubepact consumer also signs a
// canonical transcript of the handshake and carries it in annotations of the
// Tenant, where a Liqo provider ignores it.
const (
	// TranscriptContext separates transcript signatures from any other use
	// of the cluster key.
	TranscriptContext = "kubepact tenant transcript"
	// TranscriptVersion is the version of the transcript encoding that
	// Build signs. Version 2 covers every field of the Tenant's spec that
	// changes the outcome of the handshake; version 1 (no version
	// annotation) omitted spec.proxyURL, spec.authzPolicy and
	// spec.tenantCondition, so it is accepted only under the Compatible
	// policy and only when those fields are absent or at their defaults.
	TranscriptVersion = 2

	// TranscriptVersionAnnotation is the transcript's version; a transcript
	// without it is version 1.
	TranscriptVersionAnnotation = "kubepact.io/transcript-version"
	// TranscriptSignatureAnnotation carries the base64 transcript signature.
	TranscriptSignatureAnnotation = "kubepact.io/transcript-signature"
	// TranscriptProviderAnnotation names the provider the Tenant is for.
	TranscriptProviderAnnotation = "kubepact.io/transcript-provider-id"
	// TranscriptExpiryAnnotation is when the transcript expires, in Unix
	// seconds.
	TranscriptExpiryAnnotation = "kubepact.io/transcript-expiry"

	// DefaultTranscriptLifetime is how long a consumer's transcript is valid
	// unless configured otherwise.
	DefaultTranscriptLifetime = 10 * time.Minute
	// MaxTranscriptLifetime is the longest validity a provider accepts.
	MaxTranscriptLifetime = time.Hour
)

var (
	// ErrTranscriptMissing reports a Tenant without a transcript under the
	// strict policy.
	ErrTranscriptMissing = errors.New("tenant carries no transcript")
	// ErrTranscriptMismatch reports a transcript whose signature does not
	// cover this handshake: another provider, consumer, nonce or CSR.
	ErrTranscriptMismatch = errors.New("transcript does not match this handshake")
	// ErrTranscriptExpired reports a transcript past its expiry, or one
	// valid for longer than MaxTranscriptLifetime.
	ErrTranscriptExpired = errors.New("transcript expired")
)

// Transcript is what a consumer signs, besides the nonce, to bind its Tenant
// to one provider, one nonce, one CSR, the terms it asks for and a
// deadline.
type Transcript struct {
	// Version is the encoding: TranscriptVersion, or 1 for the older one
	// that covers no terms. Zero means TranscriptVersion.
	Version    int
	ProviderID string
	ConsumerID string
	Nonce      nonce.Nonce
	// CSR is the PEM CSR exactly as carried in Tenant.spec.csr.
	CSR []byte
	// Expiry is when the transcript stops being valid, to the second.
	Expiry time.Time
	// AuthzPolicy, TenantCondition and ProxyURL are the Tenant's terms,
	// covered from version 2 on. Empty policy and condition stand for
	// their defaults, KeysExchange and Active.
	AuthzPolicy     authv1beta1.AuthzPolicy
	TenantCondition authv1beta1.TenantCondition
	ProxyURL        *string
}

// Marshal returns the canonical encoding of t: the context string, the
// version, then each field length-prefixed, the SHA-256 of the CSR, the
// expiry in Unix seconds and, from version 2 on, the authorization policy,
// the tenant condition and the proxy URL (a presence byte, then the URL).
func (t Transcript) Marshal() ([]byte, error) {
	version := t.Version
	if version == 0 {
		version = TranscriptVersion
	}
	if version != 1 && version != 2 {
		return nil, fmt.Errorf("%w: unknown transcript version %d", ErrTranscriptMismatch, version)
	}
	sum := sha256.Sum256(t.CSR)
	var b cryptobyte.Builder
	addString := func(s string) {
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(s)) })
	}
	addString(TranscriptContext)
	b.AddUint8(uint8(version))
	addString(t.ProviderID)
	addString(t.ConsumerID)
	addString(t.Nonce.Text())
	b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(sum[:]) })
	b.AddUint64(uint64(t.Expiry.Unix()))
	if version == 1 {
		return b.Bytes()
	}
	policy, condition := withDefaults(t.AuthzPolicy, t.TenantCondition)
	addString(string(policy))
	addString(string(condition))
	if t.ProxyURL == nil {
		b.AddUint8(0)
	} else {
		b.AddUint8(1)
		addString(*t.ProxyURL)
	}
	return b.Bytes()
}

// withDefaults returns the policy and condition with the defaults the API
// server fills in for empty values.
func withDefaults(p authv1beta1.AuthzPolicy, c authv1beta1.TenantCondition) (authv1beta1.AuthzPolicy, authv1beta1.TenantCondition) {
	if p == "" {
		p = authv1beta1.KeysExchange
	}
	if c == "" {
		c = authv1beta1.TenantConditionActive
	}
	return p, c
}

// coversTerms reports whether a version 1 transcript, which does not cover
// the Tenant's terms, leaves nothing uncovered in t: no proxy, and the
// default policy and condition.
func coversTerms(t *authv1beta1.Tenant) bool {
	p, c := withDefaults(t.Spec.AuthzPolicy, t.Spec.TenantCondition)
	return t.Spec.ProxyURL == nil && p == authv1beta1.KeysExchange && c == authv1beta1.TenantConditionActive
}

// Policy is how strictly a provider checks Tenants.
type Policy int

const (
	// Compatible accepts Tenants from Liqo consumers, which carry no
	// transcript, but checks a transcript whenever one is present.
	Compatible Policy = iota
	// Strict requires a valid transcript.
	Strict
)

func (p Policy) String() string {
	if p == Strict {
		return "Strict"
	}
	return "Compatible"
}

// signTranscript adds the transcript annotations to t.
func signTranscript(t *authv1beta1.Tenant, tr Transcript, sign func([]byte) ([]byte, error)) error {
	msg, err := tr.Marshal()
	if err != nil {
		return fmt.Errorf("encoding transcript: %w", err)
	}
	sig, err := sign(msg)
	if err != nil {
		return fmt.Errorf("signing transcript: %w", err)
	}
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[TranscriptSignatureAnnotation] = base64.StdEncoding.EncodeToString(sig)
	t.Annotations[TranscriptProviderAnnotation] = tr.ProviderID
	t.Annotations[TranscriptExpiryAnnotation] = strconv.FormatInt(tr.Expiry.Unix(), 10)
	if tr.Version != 1 {
		t.Annotations[TranscriptVersionAnnotation] = strconv.Itoa(TranscriptVersion)
	}
	return nil
}

// readTranscript returns the transcript t claims to carry and its signature,
// or ok == false when t carries none.
func readTranscript(t *authv1beta1.Tenant, n nonce.Nonce) (tr Transcript, sig []byte, ok bool, err error) {
	encoded, ok := t.Annotations[TranscriptSignatureAnnotation]
	if !ok {
		return Transcript{}, nil, false, nil
	}
	if sig, err = base64.StdEncoding.Strict().DecodeString(encoded); err != nil || len(sig) == 0 || len(sig) > MaxSignatureSize {
		return Transcript{}, nil, true, fmt.Errorf("%w: signature is not base64 of at most %d bytes", ErrTranscriptMismatch, MaxSignatureSize)
	}
	expiry, err := strconv.ParseInt(t.Annotations[TranscriptExpiryAnnotation], 10, 64)
	if err != nil || expiry <= 0 || expiry > math.MaxInt32*4 {
		return Transcript{}, nil, true, fmt.Errorf("%w: expiry is not a Unix time", ErrTranscriptMismatch)
	}
	version := 1
	if v, ok := t.Annotations[TranscriptVersionAnnotation]; ok {
		if v != strconv.Itoa(TranscriptVersion) {
			return Transcript{}, nil, true, fmt.Errorf("%w: unknown transcript version %.8q", ErrTranscriptMismatch, v)
		}
		version = TranscriptVersion
	}
	return Transcript{
		Version:         version,
		ProviderID:      t.Annotations[TranscriptProviderAnnotation],
		ConsumerID:      t.Spec.ClusterID,
		Nonce:           n,
		CSR:             t.Spec.CSR,
		Expiry:          time.Unix(expiry, 0),
		AuthzPolicy:     t.Spec.AuthzPolicy,
		TenantCondition: t.Spec.TenantCondition,
		ProxyURL:        t.Spec.ProxyURL,
	}, sig, true, nil
}

// transcriptAnnotations are the annotations that carry a transcript.
var transcriptAnnotations = []string{TranscriptSignatureAnnotation, TranscriptProviderAnnotation, TranscriptExpiryAnnotation, TranscriptVersionAnnotation}

// TranscriptAnnotations returns the annotations of t that carry its
// transcript, or nil when it carries none.
func TranscriptAnnotations(t *authv1beta1.Tenant) map[string]string {
	var out map[string]string
	for _, k := range transcriptAnnotations {
		if v, ok := t.Annotations[k]; ok {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// digestContext separates Tenant digests from any other hash kubepact makes.
const digestContext = "kubepact tenant digest v1"

// Digest returns the SHA-256 of everything in t that the provider verifies
// or acts on: the spec, with the defaults the API server fills in, and the
// transcript annotations. Two Tenants with the same digest ask for the same
// thing with the same signatures; other metadata does not count. A provider
// binds its consumer's nonce to the digest of the Tenant that redeems it.
func Digest(t *authv1beta1.Tenant) []byte {
	var b cryptobyte.Builder
	add := func(v []byte) {
		b.AddUint32LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(v) })
	}
	policy, condition := withDefaults(t.Spec.AuthzPolicy, t.Spec.TenantCondition)
	add([]byte(digestContext))
	add([]byte(t.Spec.ClusterID))
	add([]byte(policy))
	add(t.Spec.PublicKey)
	add(t.Spec.CSR)
	add(t.Spec.Signature)
	if t.Spec.ProxyURL == nil {
		b.AddUint8(0)
	} else {
		b.AddUint8(1)
		add([]byte(*t.Spec.ProxyURL))
	}
	add([]byte(condition))
	for _, k := range transcriptAnnotations {
		if v, ok := t.Annotations[k]; ok {
			b.AddUint8(1)
			add([]byte(v))
		} else {
			b.AddUint8(0)
		}
	}
	sum := sha256.Sum256(b.BytesOrPanic())
	return sum[:]
}

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
	// TranscriptVersion is the version of the transcript encoding.
	TranscriptVersion = 1

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
// to one provider, one nonce, one CSR and a deadline.
type Transcript struct {
	ProviderID string
	ConsumerID string
	Nonce      nonce.Nonce
	// CSR is the PEM CSR exactly as carried in Tenant.spec.csr.
	CSR []byte
	// Expiry is when the transcript stops being valid, to the second.
	Expiry time.Time
}

// Marshal returns the canonical encoding of t: the context string, the
// version, then each field length-prefixed, the SHA-256 of the CSR, and the
// expiry in Unix seconds.
func (t Transcript) Marshal() ([]byte, error) {
	sum := sha256.Sum256(t.CSR)
	var b cryptobyte.Builder
	addString := func(s string) {
		b.AddUint16LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes([]byte(s)) })
	}
	addString(TranscriptContext)
	b.AddUint8(TranscriptVersion)
	addString(t.ProviderID)
	addString(t.ConsumerID)
	addString(t.Nonce.Text())
	b.AddUint8LengthPrefixed(func(b *cryptobyte.Builder) { b.AddBytes(sum[:]) })
	b.AddUint64(uint64(t.Expiry.Unix()))
	return b.Bytes()
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
	return Transcript{
		ProviderID: t.Annotations[TranscriptProviderAnnotation],
		ConsumerID: t.Spec.ClusterID,
		Nonce:      n,
		CSR:        t.Spec.CSR,
		Expiry:     time.Unix(expiry, 0),
	}, sig, true, nil
}

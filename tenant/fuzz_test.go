package tenant_test

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	mathrand "math/rand/v2"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/internal/weakkeys"
	"github.com/kubepact/kubepact/internal/wiretest"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/tenant"
)

// The fuzz targets below run their seeds as ordinary tests under go test.
// The nonce and the Ed25519 keys come from fixed seeds, so every fuzzing
// worker process holds the same ones as the coordinator; the public key and
// the signatures travel in the fuzzed Tenant itself.

const (
	fuzzConsumerID = "cl-consumer"
	fuzzProviderID = "cl-provider"
)

var fuzzNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func fuzzRand(seed byte) *mathrand.ChaCha8 {
	var s [32]byte
	for i := range s {
		s[i] = seed
	}
	return mathrand.NewChaCha8(s)
}

// fuzzFields are the fuzzed fields of a Tenant.
type fuzzFields struct {
	clusterID          string
	publicKey          []byte
	csr                []byte
	signature          []byte
	proxyURL           string
	hasProxy           bool
	transcriptSig      string
	transcriptProvider string
	transcriptExpiry   string
	transcriptVersion  string
	hasTranscript      bool
	strict             bool
}

func fieldsOf(t *authv1beta1.Tenant) fuzzFields {
	v := fuzzFields{
		clusterID: t.Spec.ClusterID,
		publicKey: t.Spec.PublicKey,
		csr:       t.Spec.CSR,
		signature: t.Spec.Signature,
	}
	if t.Spec.ProxyURL != nil {
		v.proxyURL, v.hasProxy = *t.Spec.ProxyURL, true
	}
	v.transcriptSig, v.hasTranscript = t.Annotations[tenant.TranscriptSignatureAnnotation]
	v.transcriptProvider = t.Annotations[tenant.TranscriptProviderAnnotation]
	v.transcriptExpiry = t.Annotations[tenant.TranscriptExpiryAnnotation]
	v.transcriptVersion = t.Annotations[tenant.TranscriptVersionAnnotation]
	return v
}

func (v fuzzFields) tenant() *authv1beta1.Tenant {
	t := &authv1beta1.Tenant{}
	t.Name = fuzzConsumerID
	t.Namespace = clusterid.TenantNamespace(fuzzConsumerID)
	t.Spec = authv1beta1.TenantSpec{
		ClusterID: v.clusterID,
		PublicKey: v.publicKey,
		CSR:       v.csr,
		Signature: v.signature,
	}
	if v.hasProxy {
		t.Spec.ProxyURL = &v.proxyURL
	}
	if v.hasTranscript {
		t.Annotations = map[string]string{
			tenant.TranscriptSignatureAnnotation: v.transcriptSig,
			tenant.TranscriptProviderAnnotation:  v.transcriptProvider,
			tenant.TranscriptExpiryAnnotation:    v.transcriptExpiry,
		}
		if v.transcriptVersion != "" {
			t.Annotations[tenant.TranscriptVersionAnnotation] = v.transcriptVersion
		}
	}
	return t
}

// fuzzSetup returns the fixed nonce and cluster key, and seeds: real Tenants
// and Tenants with one field damaged.
func fuzzSetup(f *testing.F) (nonce.Nonce, *keys.PrivateKey, []fuzzFields) {
	f.Helper()
	n, err := nonce.Generate(fuzzRand(1))
	if err != nil {
		f.Fatal(err)
	}
	key, err := keys.Generate(fuzzRand(2), keys.Ed25519)
	if err != nil {
		f.Fatal(err)
	}
	identityKey, err := keys.Generate(fuzzRand(3), keys.Ed25519)
	if err != nil {
		f.Fatal(err)
	}
	ecKey, err := keys.Generate(nil, keys.ECDSAP256)
	if err != nil {
		f.Fatal(err)
	}
	otherNonce, err := nonce.Generate(fuzzRand(4))
	if err != nil {
		f.Fatal(err)
	}
	expiry := fuzzNow.Add(tenant.DefaultTranscriptLifetime)
	build := func(id string, k crypto.Signer, n nonce.Nonce, opts *tenant.BuildOptions) fuzzFields {
		f.Helper()
		t, err := tenant.Build(id, k, n, opts)
		if err != nil {
			f.Fatal(err)
		}
		return fieldsOf(t)
	}
	liqo := build(fuzzConsumerID, key, n, nil)
	withProxy := build(fuzzConsumerID, key, n, &tenant.BuildOptions{ProxyURL: "http://proxy.example:3128"})
	withTranscript := build(fuzzConsumerID, key, n, &tenant.BuildOptions{ProviderID: fuzzProviderID, Expiry: expiry})
	withIdentityKey := build(fuzzConsumerID, key, n, &tenant.BuildOptions{ProviderID: fuzzProviderID, Expiry: expiry, IdentityKey: identityKey})
	ecdsaTenant := build(fuzzConsumerID, ecKey, n, &tenant.BuildOptions{ProviderID: fuzzProviderID, Expiry: expiry})
	forOtherNonce := build(fuzzConsumerID, key, otherNonce, nil)
	forOtherProvider := build(fuzzConsumerID, key, n, &tenant.BuildOptions{ProviderID: "cl-other", Expiry: expiry})
	otherConsumer := build("cl-other", key, n, nil)
	expired := build(fuzzConsumerID, key, n, &tenant.BuildOptions{ProviderID: fuzzProviderID, Expiry: fuzzNow})
	tooLong := build(fuzzConsumerID, key, n, &tenant.BuildOptions{ProviderID: fuzzProviderID, Expiry: fuzzNow.Add(2 * tenant.MaxTranscriptLifetime)})

	weak, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		f.Fatal(err)
	}
	weakDER, err := x509.MarshalPKIXPublicKey(&weak.PublicKey)
	if err != nil {
		f.Fatal(err)
	}
	slice, err := csr.Create(nil, key, csr.ResourceSliceSubject(fuzzConsumerID, "slice-a"))
	if err != nil {
		f.Fatal(err)
	}
	identityCSR, err := csr.Create(nil, identityKey, csr.ControlPlaneSubject(fuzzConsumerID))
	if err != nil {
		f.Fatal(err)
	}
	rawEd25519 := []byte(key.Public().(ed25519.PublicKey)) // as Liqo before v1.0.2 sends it

	var seeds []fuzzFields
	add := func(v fuzzFields) { seeds = append(seeds, v) }
	with := func(v fuzzFields, edit func(*fuzzFields)) fuzzFields {
		edit(&v)
		return v
	}
	for _, v := range []fuzzFields{liqo, withProxy, withTranscript, withIdentityKey, ecdsaTenant, forOtherNonce, forOtherProvider, otherConsumer, expired, tooLong} {
		add(v)
	}
	for _, edit := range []func(*fuzzFields){
		func(v *fuzzFields) { v.clusterID = "" },
		func(v *fuzzFields) { v.clusterID = "CL_consumer" },
		func(v *fuzzFields) { v.clusterID = strings.Repeat("a", clusterid.MaxLength+1) },
		func(v *fuzzFields) { v.clusterID = "cl-other" },
		func(v *fuzzFields) { v.publicKey = v.publicKey[:len(v.publicKey)/2] },
		func(v *fuzzFields) { v.publicKey = rawEd25519 },
		func(v *fuzzFields) { v.publicKey = ecdsaTenant.publicKey },
		func(v *fuzzFields) { v.publicKey = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: weakDER}) },
		func(v *fuzzFields) { v.publicKey = nil },
		func(v *fuzzFields) { v.csr = nil },
		func(v *fuzzFields) { v.csr = slice },
		func(v *fuzzFields) { v.csr = identityCSR },
		func(v *fuzzFields) { v.csr = v.csr[:len(v.csr)-30] },
		func(v *fuzzFields) { v.csr = bytes.Repeat([]byte("A"), csr.MaxSize+1) },
		func(v *fuzzFields) { v.signature = nil },
		func(v *fuzzFields) { v.signature = v.signature[:len(v.signature)-1] },
		func(v *fuzzFields) { v.signature = append(bytes.Clone(v.signature), 0) },
		func(v *fuzzFields) { v.signature = make([]byte, tenant.MaxSignatureSize+1) },
		func(v *fuzzFields) { v.signature = forOtherNonce.signature },
		func(v *fuzzFields) { v.proxyURL, v.hasProxy = "", true },
		func(v *fuzzFields) { v.proxyURL, v.hasProxy = "socks5://proxy.example:1080", true },
		func(v *fuzzFields) { v.proxyURL, v.hasProxy = "http://", true },
		func(v *fuzzFields) { v.proxyURL, v.hasProxy = "http://[::1", true },
		func(v *fuzzFields) { v.proxyURL, v.hasProxy = "proxy.example:3128", true },
	} {
		add(with(liqo, edit))
		add(with(withTranscript, edit))
	}
	for _, edit := range []func(*fuzzFields){
		func(v *fuzzFields) { v.transcriptProvider = "cl-other" },
		func(v *fuzzFields) { v.transcriptProvider = "" },
		func(v *fuzzFields) { v.transcriptExpiry = strconv.FormatInt(fuzzNow.Unix(), 10) },
		func(v *fuzzFields) {
			v.transcriptExpiry = strconv.FormatInt(fuzzNow.Add(tenant.MaxTranscriptLifetime+time.Minute).Unix(), 10)
		},
		func(v *fuzzFields) { v.transcriptExpiry = "-1" },
		func(v *fuzzFields) { v.transcriptExpiry = "1e9" },
		func(v *fuzzFields) { v.transcriptExpiry = "" },
		func(v *fuzzFields) { v.transcriptSig = "" },
		func(v *fuzzFields) { v.transcriptSig = v.transcriptSig[:len(v.transcriptSig)-2] },
		func(v *fuzzFields) { v.transcriptSig = base64.RawStdEncoding.EncodeToString(make([]byte, 64)) },
		func(v *fuzzFields) {
			v.transcriptSig = base64.StdEncoding.EncodeToString(make([]byte, tenant.MaxSignatureSize+1))
		},
		func(v *fuzzFields) { v.transcriptSig = base64.StdEncoding.EncodeToString(v.signature) },
		func(v *fuzzFields) { v.csr = identityCSR }, // another identity key than the signed one
		func(v *fuzzFields) { v.hasTranscript = false },
	} {
		add(with(withTranscript, edit))
		add(with(withIdentityKey, edit))
	}
	// Keyless forgeries: keys of small order, whose "signatures" verify
	// without a private key, in both encodings of the key.
	points, _ := weakkeys.SmallOrder()
	encodings, _ := weakkeys.NonCanonical()
	for _, pub := range append(points, encodings...) {
		forged, err := weakkeys.ForgedTenant(fuzzConsumerID, fuzzProviderID, pub, n, expiry)
		if err != nil {
			f.Fatal(err)
		}
		add(fieldsOf(forged))
		add(fieldsOf(weakkeys.RawForm(forged, pub)))
		add(with(fieldsOf(forged), func(v *fuzzFields) { v.hasTranscript = false }))
	}
	return n, key, seeds
}

// addFields adds seeds to f's corpus, each under both policies.
func addFields(f *testing.F, seeds []fuzzFields) {
	for _, v := range seeds {
		for _, strict := range []bool{false, true} {
			f.Add(v.clusterID, v.publicKey, v.csr, v.signature, v.proxyURL, v.hasProxy,
				v.transcriptSig, v.transcriptProvider, v.transcriptExpiry, v.transcriptVersion, v.hasTranscript, strict)
		}
	}
}

// fieldSentinels are the causes Validate and Verify may report per field.
var fieldSentinels = map[string][]error{
	"spec.clusterID": {clusterid.ErrInvalid},
	"spec.publicKey": {keys.ErrMalformed, keys.ErrUnsupported, keys.ErrWeak, keys.ErrWeakKey},
	"spec.csr": {csr.ErrMalformed, csr.ErrSignature, csr.ErrCommonName, csr.ErrOrganization,
		csr.ErrSAN, csr.ErrKeyMismatch, keys.ErrMalformed, keys.ErrUnsupported, keys.ErrWeak, keys.ErrWeakKey},
	"spec.signature": {keys.ErrBadSignature, nonce.ErrMalformed},
	"spec.proxyURL":  {tenant.ErrInvalidProxyURL},
	"metadata.annotations[" + tenant.TranscriptSignatureAnnotation + "]": {
		tenant.ErrTranscriptMissing, tenant.ErrTranscriptMismatch, tenant.ErrTranscriptExpired},
}

// checkFieldError fails t unless err is a *tenant.FieldError for tn that
// names a known field and wraps a cause documented for it.
func checkFieldError(t *testing.T, tn *authv1beta1.Tenant, err error) {
	t.Helper()
	fe, ok := err.(*tenant.FieldError)
	if !ok {
		t.Fatalf("error %q is a %T, not a *tenant.FieldError", err, err)
	}
	if fe.Tenant != tn.Name {
		t.Fatalf("FieldError names tenant %q, want %q", fe.Tenant, tn.Name)
	}
	sentinels, known := fieldSentinels[fe.Field]
	if !known {
		t.Fatalf("FieldError names unknown field %q: %v", fe.Field, fe.Err)
	}
	for _, s := range sentinels {
		if errors.Is(fe.Err, s) {
			return
		}
	}
	t.Fatalf("%s: cause %q wraps none of %q", fe.Field, fe.Err, sentinels)
}

// checkValidated fails t unless what Validate accepted is valid.
func checkValidated(t *testing.T, v fuzzFields, pub crypto.PublicKey) {
	t.Helper()
	if err := clusterid.Validate(v.clusterID); err != nil {
		t.Fatalf("accepted cluster ID %q: %v", v.clusterID, err)
	}
	want, err := keys.ParsePublicKey(v.publicKey)
	if err != nil || !keys.Equal(want, pub) {
		t.Fatalf("returned key is not spec.publicKey (%v)", err)
	}
	if len(v.csr) == 0 || len(v.csr) > csr.MaxSize {
		t.Fatalf("accepted a CSR of %d bytes", len(v.csr))
	}
	if len(v.signature) == 0 || len(v.signature) > tenant.MaxSignatureSize {
		t.Fatalf("accepted a signature of %d bytes", len(v.signature))
	}
	if v.hasProxy {
		u, err := url.Parse(v.proxyURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Fatalf("accepted proxy URL %q", v.proxyURL)
		}
	}
}

func FuzzValidate(f *testing.F) {
	_, _, seeds := fuzzSetup(f)
	addFields(f, seeds)
	f.Fuzz(func(t *testing.T, clusterID string, publicKey, csrPEM, signature []byte, proxyURL string, hasProxy bool,
		transcriptSig, transcriptProvider, transcriptExpiry, transcriptVersion string, hasTranscript, strict bool) {
		v := fuzzFields{clusterID, publicKey, csrPEM, signature, proxyURL, hasProxy,
			transcriptSig, transcriptProvider, transcriptExpiry, transcriptVersion, hasTranscript, strict}
		tn := v.tenant()
		pub, err := tenant.Validate(tn)
		if err != nil {
			if pub != nil {
				t.Fatalf("Validate returned a key and error %q", err)
			}
			checkFieldError(t, tn, err)
			return
		}
		checkValidated(t, v, pub)
	})
}

func FuzzVerify(f *testing.F) {
	n, key, seeds := fuzzSetup(f)
	addFields(f, seeds)
	f.Fuzz(func(t *testing.T, clusterID string, publicKey, csrPEM, signature []byte, proxyURL string, hasProxy bool,
		transcriptSig, transcriptProvider, transcriptExpiry, transcriptVersion string, hasTranscript, strict bool) {
		v := fuzzFields{clusterID, publicKey, csrPEM, signature, proxyURL, hasProxy,
			transcriptSig, transcriptProvider, transcriptExpiry, transcriptVersion, hasTranscript, strict}
		tn := v.tenant()
		opts := &tenant.VerifyOptions{ProviderID: fuzzProviderID, Now: fuzzNow}
		if strict {
			opts.Policy = tenant.Strict
		}
		got, err := tenant.Verify(tn, n, opts)
		if err != nil {
			if got != nil {
				t.Fatalf("Verify returned a result and error %q", err)
			}
			checkFieldError(t, tn, err)
			return
		}
		checkValidated(t, v, got.PublicKey)

		// The signature over the nonce really verifies, and for the fixed key
		// it is the one real (deterministic) signature.
		if err := keys.VerifyMessage(got.PublicKey, []byte(n.Text()), signature); err != nil {
			t.Fatalf("accepted a signature that does not verify: %v", err)
		}
		if keys.Equal(key.Public(), got.PublicKey) {
			real, err := nonce.Sign(nil, key, n)
			if err != nil || !bytes.Equal(real, signature) {
				t.Fatalf("accepted signature %x, the real one is %x (%v)", signature, real, err)
			}
		}

		if got.ClusterID != clusterID {
			t.Fatalf("Verified.ClusterID = %q, want %q", got.ClusterID, clusterID)
		}
		if (got.ProxyURL != nil) != hasProxy || (hasProxy && *got.ProxyURL != proxyURL) {
			t.Fatalf("Verified.ProxyURL = %v, want %q", got.ProxyURL, proxyURL)
		}
		if !bytes.Equal(got.CSR.PEM(), csrPEM) {
			t.Fatalf("Verified.CSR is not spec.csr")
		}
		if s := got.CSR.Subject(); s.CommonName != clusterID || !slices.Equal(s.Organization, []string{csr.ControlPlaneOrganization}) {
			t.Fatalf("accepted CSR for CN=%q O=%q, cluster %q", s.CommonName, s.Organization, clusterID)
		}

		switch {
		case hasTranscript && !got.Transcript:
			t.Fatalf("a Tenant carrying a transcript passed without it being verified")
		case strict && !got.Transcript:
			t.Fatalf("the strict policy accepted a Tenant without a verified transcript")
		case !got.Transcript:
			if !keys.Equal(got.PublicKey, got.CSR.PublicKey()) {
				t.Fatalf("without a transcript, accepted a CSR for another key than the cluster key")
			}
			return
		}
		if transcriptProvider != fuzzProviderID {
			t.Fatalf("accepted a transcript for provider %q", transcriptProvider)
		}
		unix, err := strconv.ParseInt(transcriptExpiry, 10, 64)
		if err != nil {
			t.Fatalf("accepted transcript expiry %q: %v", transcriptExpiry, err)
		}
		expiry := time.Unix(unix, 0)
		if !fuzzNow.Before(expiry) || expiry.Sub(fuzzNow) > tenant.MaxTranscriptLifetime {
			t.Fatalf("accepted a transcript expiring at %v, now is %v", expiry, fuzzNow)
		}
		sig, err := base64.StdEncoding.DecodeString(transcriptSig)
		if err != nil {
			t.Fatalf("accepted transcript signature %q: %v", transcriptSig, err)
		}
		version := tenant.TranscriptVersion
		switch transcriptVersion {
		case "":
			version = 1
			if hasProxy || strict {
				t.Fatalf("accepted a version 1 transcript with a proxy URL or under the strict policy")
			}
		case "2":
		default:
			t.Fatalf("accepted transcript version %q", transcriptVersion)
		}
		var proxy *string
		if hasProxy {
			proxy = &proxyURL
		}
		msg, err := tenant.Transcript{Version: version, ProviderID: fuzzProviderID, ConsumerID: clusterID, Nonce: n, CSR: csrPEM, Expiry: expiry, ProxyURL: proxy}.Marshal()
		if err != nil {
			t.Fatalf("Transcript.Marshal: %v", err)
		}
		if err := keys.VerifyMessage(got.PublicKey, msg, sig); err != nil {
			t.Fatalf("accepted a transcript signature that does not verify: %v", err)
		}
	})
}

func FuzzDecode(f *testing.F) {
	n, key, seeds := fuzzSetup(f)
	for i, v := range seeds {
		tn := v.tenant()
		tn.APIVersion, tn.Kind = authv1beta1.SchemeGroupVersion.String(), authv1beta1.TenantKind
		y, err := yaml.Marshal(tn)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(y)
		if i == 0 {
			j, err := json.Marshal(tn)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(j)
			f.Add(y[:len(y)/2])
			f.Add(bytes.Replace(y, []byte("kind: Tenant"), []byte("kind: Identity"), 1))
			f.Add(bytes.Replace(y, []byte("spec:"), []byte("unknown: 1\nspec:"), 1))
			f.Add(bytes.Replace(y, []byte("signature: "), []byte("signature: \"not base64!\"\n  x: "), 1))
			f.Add(append(bytes.Clone(y), "---\nkind: Tenant\n"...))
			f.Add(append(bytes.Clone(y), bytes.Repeat([]byte("#"), tenant.MaxObjectSize)...))
		}
	}
	f.Add([]byte{})
	f.Add([]byte("null"))

	opts := &tenant.VerifyOptions{ProviderID: fuzzProviderID, Now: fuzzNow}
	f.Fuzz(func(t *testing.T, data []byte) {
		tn, err := tenant.Decode(data)
		if err != nil {
			if tn != nil {
				t.Fatalf("Decode returned a Tenant and error %q", err)
			}
			if !errors.Is(err, tenant.ErrMalformed) {
				t.Fatalf("Decode error %q does not wrap ErrMalformed", err)
			}
			return
		}
		if len(data) == 0 || len(data) > tenant.MaxObjectSize {
			t.Fatalf("decoded %d bytes", len(data))
		}
		if tn.APIVersion != authv1beta1.SchemeGroupVersion.String() || tn.Kind != authv1beta1.TenantKind {
			t.Fatalf("decoded apiVersion %q kind %q", tn.APIVersion, tn.Kind)
		}
		// A decoded Tenant goes through Validate and Verify; they report
		// only FieldErrors.
		if _, err := tenant.Validate(tn); err != nil {
			checkFieldError(t, tn, err)
		}
		if v, err := tenant.Verify(tn, n, opts); err != nil {
			checkFieldError(t, tn, err)
		} else if err := keys.VerifyMessage(v.PublicKey, []byte(n.Text()), tn.Spec.Signature); err != nil {
			t.Fatalf("a decoded Tenant verified with a signature that does not verify: %v", err)
		} else if real, _ := nonce.Sign(nil, key, n); keys.Equal(key.Public(), v.PublicKey) && !bytes.Equal(real, tn.Spec.Signature) {
			t.Fatalf("a decoded Tenant verified with signature %x, the real one is %x", tn.Spec.Signature, real)
		}
		// What Decode accepted, marshalled again, decodes to the same Tenant.
		if !wiretest.Times(&tn.ObjectMeta) {
			return
		}
		out, err := yaml.Marshal(tn)
		if err != nil {
			t.Fatalf("Marshal of a decoded Tenant: %v", err)
		}
		if len(out) > tenant.MaxObjectSize {
			return
		}
		again, err := tenant.Decode(out)
		if err != nil {
			t.Fatalf("a marshalled Tenant does not decode: %v\n%s", err, out)
		}
		if !apiequality.Semantic.DeepEqual(tn, again) {
			t.Fatalf("Tenant changed in a round trip:\n%s", cmp.Diff(tn, again))
		}
	})
}

package kubepact_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/tenant"
)

// leakScan collects everything kubepact lets out — errors, log lines and
// printed values — and the secrets that must never be in any of it.
type leakScan struct {
	mu       sync.Mutex
	outputs  []string
	secrets  map[string][]string // what it is -> encodings to look for
	logLines int
}

func newLeakScan() *leakScan { return &leakScan{secrets: map[string][]string{}} }

// logger returns a logger that records every line at every verbosity.
func (l *leakScan) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.outputs = append(l.outputs, prefix+" "+args)
		l.logLines++
	}, funcr.Options{Verbosity: 10})
}

func (l *leakScan) output(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outputs = append(l.outputs, s)
}

func (l *leakScan) err(err error) {
	if err != nil {
		l.output(err.Error())
		l.output(fmt.Sprintf("%+v", err))
	}
}

// printed records every fmt form of v.
func (l *leakScan) printed(v any) {
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		l.output(fmt.Sprintf(verb, v))
	}
}

// secret registers b under name, in every encoding it could be printed in.
func (l *leakScan) secret(name string, b []byte) {
	if len(b) < 16 {
		panic("secret too short to scan for: " + name)
	}
	forms := []string{
		base64.StdEncoding.EncodeToString(b),
		base64.RawStdEncoding.EncodeToString(b),
		hex.EncodeToString(b),
		strings.Trim(fmt.Sprint(b[:12]), "[]"), // how %v prints a []byte
	}
	if bytes.HasPrefix(b, []byte("-----BEGIN")) {
		for block, rest := pem.Decode(b); block != nil; block, rest = pem.Decode(rest) {
			l.secret(name+" DER", block.Bytes)
		}
	}
	l.secrets[name] = append(l.secrets[name], forms...)
}

// text registers s, a secret held as text (a password in a URL, an access
// key), as itself and in every encoding secret looks for.
func (l *leakScan) text(name, s string) {
	l.secret(name, []byte(s))
	l.secrets[name] = append(l.secrets[name], s, url.UserPassword("u", s).String()[2:], fmt.Sprintf("%X", s))
}

func (l *leakScan) privateKey(name string, k *keys.PrivateKey) {
	pemBytes, err := keys.MarshalPrivateKey(k)
	if err != nil {
		panic(err)
	}
	l.secret(name, pemBytes)
	block, _ := pem.Decode(pemBytes)
	l.secret(name+" seed", block.Bytes[len(block.Bytes)-32:])
}

func (l *leakScan) check(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for name, forms := range l.secrets {
		for _, form := range forms {
			for _, out := range l.outputs {
				if strings.Contains(out, form) {
					t.Errorf("%s leaked in %q", name, out)
				}
			}
		}
	}
	for _, out := range l.outputs {
		require.NotContains(t, out, "PRIVATE KEY-----")
	}
}

// Text secrets that the API types and a proxy URL carry.
const (
	leakAWSSecret     = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYLEAKTESTKEY"
	leakProxyPassword = "proxy-password-7f3a9c41"
)

// leakProxy is a proxy URL with a password, which kubepact must use yet
// never print.
const leakProxy = "http://proxy-user:" + leakProxyPassword + "@proxy.example:3128"

// leakBadProxies are proxy URLs with the password that kubepact refuses,
// each for another reason; url.Parse's own errors would quote them.
var leakBadProxies = map[string]string{
	"scheme":    "ftp://proxy-user:" + leakProxyPassword + "@proxy.example",
	"no parse":  "http://proxy-user:" + leakProxyPassword + "@[::1",
	"bad port":  "http://proxy-user:" + leakProxyPassword + "/@proxy.example",
	"no scheme": "proxy-user:" + leakProxyPassword + "@proxy.example:3128",
	"opaque":    "http:proxy-user:" + leakProxyPassword + "@proxy.example:3128",
}

// TestNoSecretLeaks drives the failure paths of both sides and scans every
// error, log line and printed value for private keys, kubeconfigs,
// signatures, AWS secret access keys and proxy passwords.
func TestNoSecretLeaks(t *testing.T) {
	scan := newLeakScan()
	ctx := logr.NewContext(context.Background(), scan.logger())

	for _, strict := range []bool{false, true} {
		p := newModePair(t, tenant.Strict, strict)

		// A successful handshake provides the secrets to look for.
		done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.NoError(t, err)
		clusterKey, err := p.consumerCluster.Keys.Get(ctx)
		require.NoError(t, err)
		scan.privateKey("cluster key", clusterKey)
		if strict {
			idKey, err := p.consumerCluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(providerID))
			require.NoError(t, err)
			scan.privateKey("identity key", idKey.Key)
		}
		kcfg := done.Secret.Data[kubeconfig.SecretKey]
		scan.secret("kubeconfig", kcfg)
		scan.printed(done)
		scan.printed(done.Kubeconfig)
		scan.printed(clusterKey)
		scan.printed(*clusterKey)
		scan.printed(p.consumer)
		scan.printed(p.provider)
		scan.printed(p.providerCluster)
		scan.printed(p.consumerCluster)
		scan.printed(p.consumerCluster.Keys)
		scan.printed(p.consumerCluster.IdentityKeys)
		scan.printed(p.providerCluster.Signer.CA)
		scan.printed(kubeconfig.Params{Name: "x", Key: clusterKey})

		// API types holding an AWS secret access key, printed and logged.
		scan.text("AWS secret access key", leakAWSSecret)
		awsID := done.Identity.DeepCopy()
		awsID.Spec.AuthParams.AwsConfig = &authv1beta1.AwsConfig{
			AwsUserArn: "arn:aws:iam::123456789012:user/liqo", AwsAccessKeyID: "AKIAEXAMPLE",
			AwsSecretAccessKey: leakAWSSecret, AwsRegion: "eu-west-1", AwsClusterName: "provider",
		}
		awsTenant := &authv1beta1.Tenant{Status: authv1beta1.TenantStatus{AuthParams: awsID.Spec.AuthParams.DeepCopy()}}
		for _, v := range []any{awsID, *awsID, awsID.Spec, awsID.Spec.AuthParams, &awsID.Spec.AuthParams,
			awsID.Spec.AuthParams.AwsConfig, *awsID.Spec.AuthParams.AwsConfig, awsTenant, *awsTenant,
			authv1beta1.IdentityList{Items: []authv1beta1.Identity{*awsID}}} {
			scan.printed(v)
			logr.FromContextOrDiscard(ctx).Info("printed by reflection", "value", v)
		}
		applied, err := p.consumer.Apply(ctx, providerID, awsID, nil)
		scan.err(err)
		scan.printed(applied)

		// A handshake through a proxy whose URL holds a password.
		scan.text("proxy password", leakProxyPassword)
		r := newModePair(t, tenant.Strict, strict)
		proxied, err := kubepact.Authenticate(ctx, r.consumer, r.provider, &kubepact.AuthenticateOptions{ProxyURL: leakProxy})
		require.NoError(t, err)
		require.Equal(t, leakProxy, proxied.Kubeconfig.ProxyURL())
		scan.printed(proxied)
		scan.printed(proxied.Kubeconfig)
		scan.printed(proxied.Identity)
		scan.printed(*proxied.Identity)
		scan.printed(proxied.Identity.Spec)
		scan.printed(proxied.Identity.Spec.AuthParams)
		rKey, err := r.consumerCluster.Keys.Get(ctx)
		require.NoError(t, err)
		scan.printed(kubeconfig.Params{Name: "x", Server: "https://provider.example:6443", Key: rKey, ProxyURL: leakProxy})
		proxy := leakProxy
		proxyTenant := &authv1beta1.Tenant{
			Spec:   authv1beta1.TenantSpec{ClusterID: consumerID, ProxyURL: &proxy},
			Status: authv1beta1.TenantStatus{AuthParams: &authv1beta1.AuthParams{ProxyURL: &proxy}},
		}
		scan.printed(proxyTenant)
		scan.printed(*proxyTenant)
		scan.printed(proxyTenant.Spec)

		// Proxy URLs with the password that each step refuses.
		for name, bad := range leakBadProxies {
			require.ErrorIs(t, tenant.ValidateProxyURL(bad), tenant.ErrInvalidProxyURL, name)
			scan.err(tenant.ValidateProxyURL(bad))

			n, err := r.provider.IssueNonce(ctx, consumerID)
			require.NoError(t, err)
			_, err = r.consumer.Tenant(ctx, providerID, n, &consumer.TenantOptions{ProxyURL: bad})
			require.ErrorIs(t, err, tenant.ErrInvalidProxyURL, name)
			scan.err(err)
			tn, err := r.consumer.Tenant(ctx, providerID, n, nil)
			require.NoError(t, err)
			tn.Spec.ProxyURL = &bad
			_, err = r.provider.Accept(ctx, tn)
			require.ErrorIs(t, err, tenant.ErrInvalidProxyURL, name)
			scan.err(err)

			id := proxied.Identity.DeepCopy()
			id.Spec.AuthParams.ProxyURL = &bad
			_, err = r.consumer.Apply(ctx, providerID, id, nil)
			require.ErrorIs(t, err, identity.ErrMalformed, name)
			require.ErrorIs(t, err, tenant.ErrInvalidProxyURL, name)
			scan.err(err)

			_, err = kubeconfig.FromIdentity(id, rKey)
			require.ErrorIs(t, err, kubeconfig.ErrInvalid, name)
			scan.err(err)
			api := proxied.Kubeconfig.API()
			for _, cluster := range api.Clusters {
				cluster.ProxyURL = bad
			}
			data, err := clientcmd.Write(*api)
			require.NoError(t, err)
			_, err = kubeconfig.Parse(data)
			require.ErrorIs(t, err, kubeconfig.ErrMalformed, name)
			scan.err(err)
		}

		// Every Tenant rejection, each with fresh signatures to look for.
		mutations := map[string]func(*authv1beta1.Tenant){
			"bad nonce signature":    func(tn *authv1beta1.Tenant) { tn.Spec.Signature[0] ^= 1 },
			"truncated signature":    func(tn *authv1beta1.Tenant) { tn.Spec.Signature = tn.Spec.Signature[:40] },
			"CSR swapped":            func(tn *authv1beta1.Tenant) { tn.Spec.CSR = append(tn.Spec.CSR, '\n') },
			"bad public key":         func(tn *authv1beta1.Tenant) { tn.Spec.PublicKey = tn.Spec.PublicKey[:50] },
			"no transcript":          func(tn *authv1beta1.Tenant) { tn.Annotations = nil },
			"transcript to other":    func(tn *authv1beta1.Tenant) { tn.Annotations[tenant.TranscriptProviderAnnotation] = "cl-other" },
			"bad transcript base64":  func(tn *authv1beta1.Tenant) { tn.Annotations[tenant.TranscriptSignatureAnnotation] += "%" },
			"cluster ID not a label": func(tn *authv1beta1.Tenant) { tn.Spec.ClusterID = "NOT_VALID" },
			"proxy URL scheme":       func(tn *authv1beta1.Tenant) { s := "ftp://x"; tn.Spec.ProxyURL = &s },
			"nonce reused":           func(*authv1beta1.Tenant) {},
		}
		for name, mutate := range mutations {
			n, err := p.provider.IssueNonce(ctx, consumerID)
			require.NoError(t, err)
			tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
			require.NoError(t, err)
			scan.secret(name+": nonce signature", tn.Spec.Signature)
			tsig, err := base64.StdEncoding.DecodeString(tn.Annotations[tenant.TranscriptSignatureAnnotation])
			require.NoError(t, err)
			scan.secret(name+": transcript signature", tsig)
			if name == "nonce reused" {
				// Accepted, the nonce stays bound to the consumer's key:
				// a Tenant of another key over it is refused.
				_, err = p.provider.Accept(ctx, tn)
				require.NoError(t, err)
				tn, err = tenant.Build(consumerID, testkeys.Generate(t, keys.Ed25519), n,
					&tenant.BuildOptions{ProviderID: providerID, Expiry: p.clock.Now().Add(time.Minute)})
				require.NoError(t, err)
				scan.secret(name+": other key's nonce signature", tn.Spec.Signature)
			}
			mutate(tn)
			_, err = p.provider.Accept(ctx, tn)
			require.Error(t, err, name)
			scan.err(err)
		}

		// An expired nonce, a denied CSR. Revoked first, so the nonce
		// kept for the consumer's verified key is gone.
		require.NoError(t, p.provider.Revoke(ctx, consumerID))
		require.NoError(t, p.provider.Readmit(ctx, consumerID))
		n, err := p.provider.IssueNonce(ctx, consumerID)
		require.NoError(t, err)
		tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
		require.NoError(t, err)
		p.clock.Step(nonce.DefaultTTL)
		_, err = p.provider.Accept(ctx, tn)
		require.ErrorIs(t, err, nonce.ErrExpired)
		scan.err(err)
		q := newModePair(t, tenant.Strict, strict)
		q.providerCluster.Approver.Decide = func(name string, _ *csr.Checked) error {
			return &csr.DeniedError{Name: name, Reason: "Denied", Message: "by the test"}
		}
		_, err = kubepact.Authenticate(ctx, q.consumer, q.provider, nil)
		var denied *csr.DeniedError
		require.ErrorAs(t, err, &denied)
		scan.err(err)
		qKey, err := q.consumerCluster.Keys.Get(ctx)
		require.NoError(t, err)
		scan.privateKey("second cluster key", qKey)

		// Identity rejections on the consumer.
		id := done.Identity.DeepCopy()
		id.Spec.AuthParams.SignedCRT = id.Spec.AuthParams.SignedCRT[:100]
		_, err = p.consumer.Apply(ctx, providerID, id, nil)
		scan.err(err)
		p.clock.Step(2 * provider.DefaultCertificateLifetime)
		_, err = p.consumer.Apply(ctx, providerID, done.Identity, nil)
		require.ErrorIs(t, err, identity.ErrExpired)
		scan.err(err)

		// Parsers fed with damaged secrets.
		keyPEM, err := keys.MarshalPrivateKey(clusterKey)
		require.NoError(t, err)
		_, err = keys.ParsePrivateKey(keyPEM[:len(keyPEM)-30])
		scan.err(err)
		block, _ := pem.Decode(keyPEM)
		block.Bytes[5] ^= 0xff
		_, err = keys.ParsePrivateKey(pem.EncodeToMemory(block))
		scan.err(err)
		_, err = kubeconfig.Parse(kcfg[:len(kcfg)/2])
		scan.err(err)
		_, err = kubeconfig.Parse(bytes.Replace(kcfg, []byte("client-key-data"), []byte("client-key-date"), 1))
		scan.err(err)
		sec, err := keys.Secret("liqo", clusterKey)
		require.NoError(t, err)
		sec.Data[keys.PublicKeySecretKey] = []byte("garbage")
		_, err = keys.FromSecret(sec)
		scan.err(err)
	}
	require.Positive(t, scan.logLines, "the scan must see log lines")
	scan.check(t)
}

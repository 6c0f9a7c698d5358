package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/kube"
)

// TestMetrics runs the provider with the metrics endpoint it ships with
// (HTTPS, TokenReview and SubjectAccessReview): an anonymous scrape is
// refused; a ServiceAccount bound to config/'s metrics-reader role reads
// kubepact's metrics, and a handshake moves the accepted Tenants counter
// and sets the expiry gauges of the certificate issued, on the provider and
// on the consumer that holds it.
func TestMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const providerID, consumerID = "cl-met-provider", "cl-met-consumer"
	addr := freeAddr(t)
	start(t, providerEnv, "--cluster-id="+providerID, "--roles=provider",
		"--api-server-url="+providerEnv.cluster.Host(), "--api-server-ca-file="+writeFile(t, providerEnv.cluster.CA()),
		"--leader-elect=false", "--metrics-bind-address="+addr, "--health-probe-bind-address=0")
	start(t, consumerEnv, "--cluster-id="+consumerID, "--roles=consumer",
		"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=0")

	url := "https://" + addr + "/metrics"
	// The serving certificate is the self-signed one controller-runtime
	// makes without --metrics-cert-dir.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(token string) (int, string) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}

	var code int
	eventually(t, "the metrics endpoint", func() bool { code, _ = get(""); return code != 0 })
	require.Contains(t, []int{http.StatusUnauthorized, http.StatusForbidden}, code, "an anonymous scrape")
	// controller-runtime's filter answers 500 for a token the TokenReview
	// does not authenticate.
	code, _ = get("not-a-token")
	require.NotEqual(t, http.StatusOK, code, "a bad token")

	token := scraperToken(ctx, t)
	var body string
	eventually(t, "an authorized scrape", func() bool { code, body = get(token); return code == http.StatusOK })
	require.Contains(t, body, "# TYPE kubepact_handshakes_total counter")
	require.Contains(t, body, `kubepact_build_info{version="`+Version()+`"} 1`)
	accepted := `kubepact_handshakes_total{flow="tenant",reason="TenantAccepted",result="accepted"}`
	before, ok := sample(body, accepted)
	require.True(t, ok, "the counter is there before any handshake")
	_, ok = sample(body, `kubepact_handshakes_total{flow="tenant",reason="InvalidSignature",result="refused"}`)
	require.True(t, ok)

	handshake(ctx, t, providerID, consumerID)
	tn, err := kube.NewTenantStore(providerEnv.typed).Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	cert, err := csr.ParseCertificate(tn.Status.AuthParams.SignedCRT)
	require.NoError(t, err)
	notAfter := float64(cert.NotAfter.Unix())

	code, body = get(token)
	require.Equal(t, http.StatusOK, code)
	after, _ := sample(body, accepted)
	require.GreaterOrEqual(t, after, before+1, "the accepted Tenant is counted")
	count, ok := sample(body, `kubepact_handshake_duration_seconds_count{flow="tenant"}`)
	require.True(t, ok)
	require.Positive(t, count)
	require.Contains(t, body, "# TYPE kubepact_certificate_expiration_timestamp_seconds gauge")
	got, ok := sample(body, `kubepact_certificate_expiration_timestamp_seconds{identity="ControlPlane",peer="`+consumerID+`",role="provider"}`)
	require.True(t, ok, "the provider's gauge for its consumer")
	require.Equal(t, notAfter, got)
	// The consumer's controller runs in this process too: its gauge for
	// the certificate it holds from the provider is in the same registry.
	held := regexp.MustCompile(`(?m)^kubepact_certificate_expiration_timestamp_seconds\{identity="[^"]+",peer="` + providerID + `",role="consumer"\} (\S+)$`).FindStringSubmatch(body)
	require.NotNil(t, held, "the consumer's gauge for its provider")
	v, err := strconv.ParseFloat(held[1], 64)
	require.NoError(t, err)
	require.Equal(t, notAfter, v)
}

// scraperToken creates, as admin, a ServiceAccount bound to the
// kubepact-controller-metrics-reader ClusterRole config/ ships, and returns
// a token for it from the TokenRequest API.
func scraperToken(ctx context.Context, t *testing.T) string {
	t.Helper()
	const ns, name = metav1.NamespaceDefault, "metrics-scraper"
	admin := providerEnv.admin
	_, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "kubepact-controller-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx := context.Background()
		_ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = admin.CoreV1().ServiceAccounts(ns).Delete(ctx, name, metav1.DeleteOptions{})
	})
	tr, err := admin.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// sample returns the value of the series whose name and labels, as the
// text exposition format writes them (labels sorted by name), are series.
func sample(body, series string) (float64, bool) {
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			return f, err == nil
		}
	}
	return 0, false
}

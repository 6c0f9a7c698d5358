package kube_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
)

var errResponseLost = errors.New("response lost")

// lossyClients returns clients for cfg whose request number lose (counted
// from 1 in *n) reaches the API server and takes effect, but whose response
// never arrives.
func lossyClients(t *testing.T, cfg *rest.Config, n *atomic.Int64, lose *atomic.Int64) (kubernetes.Interface, client.Client) {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(r)
			if n.Add(1) == lose.Load() && err == nil {
				resp.Body.Close()
				return nil, errResponseLost
			}
			return resp, err
		})
	})
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	typed, err := kube.NewClient(cfg, nil)
	require.NoError(t, err)
	return client, typed
}

// TestLostResponseAtEveryRequest loses the response of each API request of a
// handshake in turn, on both real clusters. The handshake fails with that
// error (or recovers by itself, as a watch does), then completes when run
// again, leaving one CSR object, one of every Secret and binding, and the
// cluster key stored by the failed run.
func TestLostResponseAtEveryRequest(t *testing.T) {
	// Count the requests of one clean handshake on each cluster.
	var pn, cn, never atomic.Int64
	run := func(i int, pLose, cLose *atomic.Int64) (*kubepact.Provider, *kubepact.Consumer, string, string, string) {
		providerID, consumerID := fmt.Sprintf("fp-%d", i), fmt.Sprintf("fc-%d", i)
		keyNS := "keys-" + consumerID
		pc, pd := lossyClients(t, providerEnv.cluster.AdminConfig(), &pn, pLose)
		cc, cd := lossyClients(t, consumerEnv.cluster.AdminConfig(), &cn, cLose)
		nonces := kube.NewNonceStore(pc)
		p, err := provider.New(providerID, provider.Endpoint{Server: providerEnv.cluster.Host(), CA: providerEnv.cluster.CA()}, provider.Ports{
			Core: provider.Core{
				Namespaces:   kube.NewNamespaces(pc),
				Nonces:       nonces,
				Peek:         nonces,
				Tenants:      kube.NewTenantStore(pd),
				Signer:       kube.NewCSRSigner(pc, kube.NewApprover(pc)),
				Certificates: kube.NewCertificateCache(pc),
				RBAC:         kube.NewRBAC(pc),
			},
			Lifecycle: kube.NewLifecyclePorts(pc, pd),
		}, nil)
		require.NoError(t, err)
		c, err := consumer.New(consumerID, consumer.Ports{
			Core: consumer.Core{
				Namespaces: kube.NewNamespaces(cc),
				Keys:       kube.NewKeyStore(cc, keyNS),
				Identities: kube.NewIdentityStore(cd),
				Secrets:    kube.NewSecretWriter(cc),
			},
			IdentityKeys: kube.NewKeyring(cc, keyNS),
		}, &consumer.Options{KeyNamespace: keyNS})
		require.NoError(t, err)
		return p, c, providerID, consumerID, keyNS
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	base := time.Now().Unix() % 100000
	p, c, _, _, _ := run(int(base), &never, &never)
	pn.Store(0)
	cn.Store(0)
	_, err := kubepact.Authenticate(ctx, c, p, nil)
	require.NoError(t, err)
	providerRequests, consumerRequests := int(pn.Load()), int(cn.Load())
	t.Logf("a handshake makes %d requests on the provider and %d on the consumer", providerRequests, consumerRequests)

	for cluster, count := range map[string]int{"provider": providerRequests, "consumer": consumerRequests} {
		for req := 1; req <= count; req++ {
			t.Run(fmt.Sprintf("%s-request-%02d", cluster, req), func(t *testing.T) {
				var pLose, cLose atomic.Int64
				if cluster == "provider" {
					pLose.Store(int64(req))
				} else {
					cLose.Store(int64(req))
				}
				i := int(base)*100 + req
				if cluster == "consumer" {
					i += 50
				}
				p, c, providerID, consumerID, keyNS := run(i, &pLose, &cLose)
				pn.Store(0)
				cn.Store(0)
				_, err := kubepact.Authenticate(ctx, c, p, nil)
				if err == nil {
					// A lost watch response is re-established, and a lost
					// write is retried and found done: the run recovered.
					t.Logf("recovered from the lost response of request %d", req)
				} else {
					require.ErrorIs(t, err, errResponseLost)
				}
				// The identity's own key, as Authenticate asks for one.
				keyBefore, _ := kube.NewKeyring(consumerEnv.client, keyNS).Get(ctx, identity.ControlPlaneName(providerID))

				pLose.Store(0)
				cLose.Store(0)
				done, err := kubepact.Authenticate(ctx, c, p, nil)
				require.NoError(t, err, "the handshake completes when run again")
				checkSingleIdentity(t, ctx, providerID, consumerID)
				if keyBefore.Key != nil {
					cert, err := done.Kubeconfig.ClientCertificate()
					require.NoError(t, err)
					require.True(t, keys.Equal(keyBefore.Key.Public(), cert.PublicKey), "the key stored by the failed run is kept")
				}
			})
		}
	}
}

// checkSingleIdentity checks that one of each object exists for the pair.
func checkSingleIdentity(t *testing.T, ctx context.Context, providerID, consumerID string) {
	t.Helper()
	csrs, err := providerEnv.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{LabelSelector: kube.CSRLabel + "=true"})
	require.NoError(t, err)
	require.Equal(t, 1, countRequests(csrs.Items, consumerID), "one CSR object")
	tenantNS := "liqo-tenant-" + consumerID
	bindings, err := providerEnv.client.RbacV1().RoleBindings(tenantNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, bindings.Items, 1)
	require.Equal(t, rbac.BindingName(rbac.ControlPlaneClusterRoleName), bindings.Items[0].Name)
	secrets, err := providerEnv.client.CoreV1().Secrets(tenantNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{"liqo-nonce", "liqo-remote-certificate"}, secretNames(secrets.Items), "the certificate cache and the redeemed nonce")
	e, err := kube.NewNonceStore(providerEnv.client).Get(ctx, consumerID)
	require.NoError(t, err)
	require.NotNil(t, e.Redemption, "the nonce is bound to the key that redeemed it")
	stored, err := kube.NewTenantStore(providerEnv.typed).Get(ctx, tenantNS, consumerID)
	require.NoError(t, err)
	pub, err := keys.ParsePublicKey(stored.Spec.PublicKey)
	require.NoError(t, err)
	require.Equal(t, keys.Fingerprint(pub), e.Redemption.Key)
	ids, err := kube.NewIdentityStore(consumerEnv.typed).List(ctx, "liqo-tenant-"+providerID)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	require.Equal(t, identity.ControlPlaneName(providerID), ids[0].Name)
	kcs, err := consumerEnv.client.CoreV1().Secrets("liqo-tenant-"+providerID).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	require.ElementsMatch(t, []string{kubeconfig.SecretName(ids[0].Name), nonce.SignedSecretName}, secretNames(kcs.Items))
}

// secretNames returns the names of secrets, never their data.
func secretNames(secrets []corev1.Secret) []string {
	names := make([]string, 0, len(secrets))
	for _, s := range secrets {
		names = append(names, s.Name)
	}
	return names
}

package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubepact/kubepact/authserver"
	"github.com/kubepact/kubepact/authtoken"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/saidentity"
	"github.com/kubepact/kubepact/wire"
)

// TestPeerIdentitiesReachNothingOfOurs makes a two-way peering between the
// package's clusters, as shipped, with a ResourceSlice accepted each way,
// then takes every identity a peer can hold on a cluster, with the
// credentials the peer really holds: its ControlPlane kubeconfig and its
// slice kubeconfig (from the peer's own Secrets), the certificate the
// token server (authserver) hands it for its ControlPlane key, and a
// ServiceAccount identity's token (saidentity.Issue, as kubepact create
// serviceaccount-identity does). As each, it asks the cluster's API server
// which Secrets and ConfigMaps it may get, list, watch, create, update,
// patch or delete: a SelfSubjectRulesReview in every namespace,
// SelfSubjectAccessReviews across all namespaces, a real list in every
// namespace, and a real get and a dry-run patch of every Secret and
// ConfigMap the cluster keeps where a peer could look (the peer's tenant
// namespace, the Liqo namespace, kubepact-system) and of the names the
// cluster keeps there (kubeconfig-controlplane-<peer>, liqo-signed-nonce,
// liqo-nonce, authentication-keys, kubepact-revocation,
// liqo-remote-certificate*). It logs the table of what it found and fails
// on anything of this cluster's own.
func TestPeerIdentitiesReachNothingOfOurs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	a, b := peer{providerEnv, "cl-grants-a"}, peer{consumerEnv, "cl-grants-b"}
	for _, p := range []peer{a, b} {
		startCurrent(ctx, t, p)
	}
	peerBothWays(ctx, t, a, b)
	makeSlice(ctx, t, b, a, sliceOf(a))
	makeSlice(ctx, t, a, b, sliceOf(b))

	for _, x := range [][2]peer{{a, b}, {b, a}} {
		us, them := x[0], x[1]
		t.Run(us.id, func(t *testing.T) {
			held := []heldIdentity{
				{"ControlPlane", restConfigOf(t, controlPlaneKubeconfig(ctx, t, us, them))},
				{"ResourceSlice", restConfigOf(t, sliceKubeconfig(ctx, t, us, them, sliceOf(them)))},
				{"TokenServer", tokenServerIdentity(ctx, t, us, them)},
				{"ServiceAccount", serviceAccountIdentity(ctx, t, us, them)},
			}
			var all []reach
			for _, id := range held {
				all = append(all, inventory(ctx, t, us, them, id)...)
			}
			var table strings.Builder
			w := tabwriter.NewWriter(&table, 0, 0, 2, ' ', 0)
			fmt.Fprintln(w, "IDENTITY\tNAMESPACE\tRESOURCE\tNAMES\tVERBS\tFOUND BY\tVERDICT")
			for _, r := range all {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.identity, orAll(r.namespace), r.resource, orAll(strings.Join(r.names, ",")),
					strings.Join(r.verbs, ","), r.via, r.verdict())
			}
			for _, id := range held {
				if !slices.ContainsFunc(all, func(r reach) bool { return r.identity == id.name }) {
					fmt.Fprintf(w, "%s\t-\t-\t-\t-\t-\tnothing\n", id.name)
				}
			}
			w.Flush()
			t.Logf("Secrets and ConfigMaps %s's identities reach on %s:\n%s", them.id, us.id, table.String())
			for _, id := range held {
				var ours []string
				for _, r := range all {
					if r.identity == id.name && !r.peerOwned {
						ours = append(ours, fmt.Sprintf("%s %s in %s (%s)", r.resource, orAll(strings.Join(r.names, ",")),
							orAll(r.namespace), strings.Join(r.verbs, ",")))
					}
				}
				assert.Empty(t, ours, "%s's %s identity reaches Secrets or ConfigMaps of %s (the table above says how)", them.id, id.name, us.id)
			}
		})
	}
}

// heldIdentity is a credential a peer holds on a cluster.
type heldIdentity struct {
	name string
	cfg  *rest.Config
}

// reach is access an identity has to Secrets or ConfigMaps of a cluster.
type reach struct {
	identity  string
	namespace string   // "" for every namespace
	resource  string   // secrets or configmaps
	names     []string // the objects the access is limited to; none for all
	verbs     []string
	via       string // how the API server said so
	// peerOwned is set for the one grant a peer needs on a Secret: the
	// ServiceAccount identity's Secret named after the consumer, which
	// holds only what the consumer writes (saidentity's Role).
	peerOwned bool
}

func (r reach) verdict() string {
	if r.peerOwned {
		return "the peer's own Secret (absent here)"
	}
	return "REACHES THIS CLUSTER'S"
}

func orAll(s string) string {
	if s == "" {
		return "*"
	}
	return s
}

// accessVerbs read or write an object.
var accessVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}

// inventory asks us's API server, as id, what id may do to Secrets and
// ConfigMaps there, and returns every access found. Peer them holds id.
func inventory(ctx context.Context, t *testing.T, us, them peer, id heldIdentity) []reach {
	t.Helper()
	as, err := kubernetes.NewForConfig(id.cfg)
	require.NoError(t, err)
	var found []reach
	add := func(r reach) {
		r.identity = id.name
		r.peerOwned = id.name == "ServiceAccount" && r.resource == "secrets" && r.namespace == clusterid.TenantNamespace(them.id) &&
			slices.Equal(r.names, []string{them.id})
		found = append(found, r)
	}
	resources := []string{"secrets", "configmaps"}

	// The rules of every namespace, and a real list there.
	namespaces, err := us.admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, ns := range namespaces.Items {
		rr, err := as.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns.Name}}, metav1.CreateOptions{})
		require.NoError(t, err, "%s's rules in %s", id.name, ns.Name)
		require.False(t, rr.Status.Incomplete, "%s's rules in %s are complete (RBAC alone authorizes): %s", id.name, ns.Name, rr.Status.EvaluationError)
		for _, rule := range rr.Status.ResourceRules {
			verbs := matching(rule.Verbs, accessVerbs)
			if len(verbs) == 0 || len(matching(rule.APIGroups, []string{""})) == 0 {
				continue
			}
			for _, res := range matching(rule.Resources, resources) {
				add(reach{namespace: ns.Name, resource: res, names: rule.ResourceNames, verbs: verbs, via: "rules review"})
			}
		}
		if _, err := as.CoreV1().Secrets(ns.Name).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			add(reach{namespace: ns.Name, resource: "secrets", verbs: []string{"list"}, via: "list"})
		} else {
			requireForbidden(t, err, id.name, "list secrets in "+ns.Name)
		}
		if _, err := as.CoreV1().ConfigMaps(ns.Name).List(ctx, metav1.ListOptions{Limit: 1}); err == nil {
			add(reach{namespace: ns.Name, resource: "configmaps", verbs: []string{"list"}, via: "list"})
		} else {
			requireForbidden(t, err, id.name, "list configmaps in "+ns.Name)
		}
	}

	// Across every namespace at once.
	for _, res := range resources {
		var verbs []string
		for _, v := range accessVerbs {
			r, err := as.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: v, Version: "v1", Resource: res}}}, metav1.CreateOptions{})
			require.NoError(t, err)
			if r.Status.Allowed {
				verbs = append(verbs, v)
			}
		}
		if len(verbs) > 0 {
			add(reach{resource: res, verbs: verbs, via: "access review, all namespaces"})
		}
	}

	// This cluster's own objects where a peer could look, by name: a get
	// answered 404 is allowed as well as a 200 (authorization comes first).
	tenantNS := clusterid.TenantNamespace(them.id)
	own := map[[2]string][]string{
		{tenantNS, "secrets"}: {
			// ours as consumer of them
			kubeconfig.SecretName(identity.ControlPlaneName(them.id)), kubeconfig.SecretName(identity.ResourceSliceName(sliceOf(us))),
			nonce.SignedSecretName, authserver.IdentitySecretName(them.id),
			// ours as provider of them
			nonce.SecretName, csr.CacheKey{ConsumerID: them.id}.SecretName(), csr.CacheKey{ConsumerID: them.id, Slice: sliceOf(them)}.SecretName(),
			them.id, // the ServiceAccount identity's Secret
		},
		{tenantNS, "configmaps"}:              {kube.RevocationName},
		{keys.DefaultNamespace, "secrets"}:    {keys.SecretName, authtoken.SecretName},
		{keys.DefaultNamespace, "configmaps"}: {clusterid.RecordName},
	}
	for _, ns := range []string{tenantNS, keys.DefaultNamespace, "kubepact-system"} {
		secrets, err := us.admin.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, s := range secrets.Items {
			own[[2]string{ns, "secrets"}] = append(own[[2]string{ns, "secrets"}], s.Name)
		}
		configMaps, err := us.admin.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		for _, cm := range configMaps.Items {
			own[[2]string{ns, "configmaps"}] = append(own[[2]string{ns, "configmaps"}], cm.Name)
		}
	}
	probe := []byte(`{"metadata":{"annotations":{"kubepact.io/probe":"peer"}}}`)
	dryRun := metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}
	for k, names := range own {
		ns, res := k[0], k[1]
		slices.Sort(names)
		for _, name := range slices.Compact(names) {
			var getErr, patchErr error
			switch res {
			case "secrets":
				_, getErr = as.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
				_, patchErr = as.CoreV1().Secrets(ns).Patch(ctx, name, types.MergePatchType, probe, dryRun)
			default:
				_, getErr = as.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
				_, patchErr = as.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, probe, dryRun)
			}
			for _, try := range []struct {
				verb string
				err  error
			}{{"get", getErr}, {"patch", patchErr}} {
				switch {
				case try.err == nil:
					add(reach{namespace: ns, resource: res, names: []string{name}, verbs: []string{try.verb}, via: try.verb})
				case apierrors.IsNotFound(try.err):
					add(reach{namespace: ns, resource: res, names: []string{name}, verbs: []string{try.verb}, via: try.verb + " (404: allowed, absent)"})
				default:
					requireForbidden(t, try.err, id.name, try.verb+" "+res+" "+ns+"/"+name)
				}
			}
		}
	}
	// The peer's own Secret is allowed only while nothing of ours bears its
	// name.
	if slices.ContainsFunc(found, func(r reach) bool { return r.peerOwned }) {
		_, err := us.admin.CoreV1().Secrets(tenantNS).Get(ctx, them.id, metav1.GetOptions{})
		require.True(t, apierrors.IsNotFound(err), "no Secret %s/%s on %s: the ServiceAccount identity of %s may read and write it", tenantNS, them.id, us.id, them.id)
	}
	return found
}

// sliceOf returns the name of the ResourceSlice peer p makes as consumer
// in TestPeerIdentitiesReachNothingOfOurs.
func sliceOf(p peer) string {
	return "slice-grants-" + strings.TrimPrefix(p.id, "cl-grants-")
}

// matching returns the values of want that a rule's list allows, "*"
// allowing all.
func matching(rule, want []string) []string {
	if slices.Contains(rule, "*") {
		return want
	}
	var out []string
	for _, w := range want {
		if slices.Contains(rule, w) {
			out = append(out, w)
		}
	}
	return out
}

// requireForbidden fails t unless err is the API server's refusal of the
// request: any other failure leaves the inventory unproven.
func requireForbidden(t *testing.T, err error, who, what string) {
	t.Helper()
	require.True(t, apierrors.IsForbidden(err), "%s: %s: want Forbidden, got %v", who, what, err)
}

// tokenServerIdentity returns the identity the token server (authserver,
// kubepact serve) of us hands peer them for the key of them's ControlPlane
// kubeconfig: the flow binds the same consumer user, and for the key a
// handshake already certified it answers with that certificate. The server
// runs in the test with the admin's ports: its own rights are not what is
// measured here.
func tokenServerIdentity(ctx context.Context, t *testing.T, us, them peer) *rest.Config {
	t.Helper()
	cp := controlPlaneKubeconfig(ctx, t, us, them)
	var key *keys.PrivateKey
	for _, u := range cp.API().AuthInfos {
		var err error
		key, err = keys.ParsePrivateKey(u.ClientKeyData)
		require.NoError(t, err)
	}
	require.NotNil(t, key, "the ControlPlane kubeconfig holds a key")
	ports, err := wire.NewProviderPorts(us.cluster.AdminConfig(), nil)
	require.NoError(t, err)
	tokens := kube.NewTokenStore(us.admin, keys.DefaultNamespace)
	_, err = us.admin.CoreV1().Secrets(keys.DefaultNamespace).Get(ctx, authtoken.SecretName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		t.Cleanup(func() {
			err := us.admin.CoreV1().Secrets(keys.DefaultNamespace).Delete(context.Background(), authtoken.SecretName, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("deleting the token: %v", err)
			}
		})
	}
	tok, err := authtoken.Ensure(ctx, tokens, rand.Reader)
	require.NoError(t, err)
	endpoint := provider.Endpoint{Server: us.cluster.Host(), CA: us.cluster.CA()}
	srv, err := authserver.New(us.id, endpoint, ports, tokens, nil)
	require.NoError(t, err)
	pemCSR, err := csr.Create(rand.Reader, key, csr.ControlPlaneSubject(them.id))
	require.NoError(t, err)
	body, err := json.Marshal(authserver.CertificateRequest{Cluster: authserver.ClusterIdentity{ClusterID: them.id},
		DestinationClusterToken: tok.Reveal(), CertificateSigningRequest: pemCSR})
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodPost, authserver.CertificatePath, bytes.NewReader(body)))
	require.Equal(t, http.StatusAccepted, rec.Code, "the token server's answer to %s: %s", them.id, rec.Body.String())
	var resp authserver.CertificateResponse
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &resp))
	cfg, err := kubeconfig.Build(kubeconfig.Params{Name: us.id, Server: resp.APIServerURL, CA: resp.APIServerCA,
		Certificate: resp.Certificate, Key: key, Namespace: resp.Namespace})
	require.NoError(t, err)
	return restConfigOf(t, cfg)
}

// serviceAccountIdentity issues peer them a ServiceAccount identity on us,
// as kubepact create serviceaccount-identity does, and returns its token's
// configuration. The identity is revoked when t ends.
func serviceAccountIdentity(ctx context.Context, t *testing.T, us, them peer) *rest.Config {
	t.Helper()
	ports := saidentity.ProviderPorts{
		Namespaces:      kube.NewNamespaces(us.admin),
		ServiceAccounts: kube.NewServiceAccounts(us.admin),
		RBAC:            kube.NewServiceAccountRBAC(us.admin),
		Lifecycle: lifecycle.Gate{Tenants: kube.NewTenantStore(us.typed),
			Revocations: kube.NewLifecyclePorts(us.admin, us.typed).Revocations},
	}
	id, err := saidentity.Issue(ctx, ports, saidentity.Endpoint{Server: us.cluster.Host(), CA: us.cluster.CA()}, them.id,
		&saidentity.IssueOptions{ProviderID: us.id})
	require.NoError(t, err)
	t.Cleanup(func() {
		if err := saidentity.Revoke(context.Background(), ports, them.id); err != nil {
			t.Errorf("revoking %s's ServiceAccount identity: %v", them.id, err)
		}
	})
	return restConfigOf(t, id.Kubeconfig)
}

package kubepact_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubepact/kubepact"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/kubeconfig"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/resourceslice"
	"github.com/kubepact/kubepact/tenant"
)

// replicate copies the consumer's slice to the provider as the replicator
// does: spec, in the consumer's tenant namespace there, with the provider
// labels.
func replicate(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) *authv1beta1.ResourceSlice {
	return replicateB(t, p, s)
}

func replicateB(t testing.TB, p *pair, s *authv1beta1.ResourceSlice) *authv1beta1.ResourceSlice {
	t.Helper()
	remote := &authv1beta1.ResourceSlice{TypeMeta: s.TypeMeta, Spec: *s.Spec.DeepCopy()}
	remote.Name, remote.Namespace = s.Name, clusterid.TenantNamespace(consumerID)
	remote.Labels = resourceslice.ProviderLabels(consumerID)
	stored, err := p.providerCluster.Slices.Put(context.Background(), remote)
	require.NoError(t, err)
	return stored
}

// createSlice builds slice name on the consumer and stores it there.
func createSlice(t *testing.T, p *pair, name string) *authv1beta1.ResourceSlice {
	return createSliceB(t, p, name)
}

func createSliceB(t testing.TB, p *pair, name string) *authv1beta1.ResourceSlice {
	t.Helper()
	s, err := p.consumer.Slice(context.Background(), providerID, name, &consumer.SliceOptions{
		Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	})
	require.NoError(t, err)
	s.UID = types.UID("uid-" + name)
	s, err = p.consumerCluster.Slices.Put(context.Background(), s)
	require.NoError(t, err)
	return s
}

// sliceRoundTrip creates slice name, replicates it, lets the provider
// accept it and the consumer apply its identity.
func sliceRoundTrip(t *testing.T, p *pair, name string) (*authv1beta1.ResourceSlice, *consumer.Authenticated) {
	t.Helper()
	ctx := context.Background()
	local := createSlice(t, p, name)
	status, err := p.provider.AcceptSlice(ctx, replicate(t, p, local))
	require.NoError(t, err)
	local.Status = *status
	done, err := p.consumer.ApplySliceIdentity(ctx, local, nil)
	require.NoError(t, err)
	return local, done
}

// offloadNS is the namespace the test providers offload to consumerID's
// slices (provider.Options.SliceNamespaces: offloaded), as Liqo's
// offloading module would: a slice identity's namespaced rights are there,
// never in the tenant namespace.
const offloadNS = "offloaded-" + consumerID

func offloaded(consumerID string) []string { return []string{"offloaded-" + consumerID} }

// allowed asks the provider's RBAC what the slice identity of name may do.
func allowed(t *testing.T, p *pair, name, namespace, verb, res string) bool {
	t.Helper()
	subject := csr.ResourceSliceSubject(consumerID, name)
	ok, err := p.providerCluster.RBAC.Allowed(context.Background(), subject.CommonName, subject.Organization,
		authorizationv1.ResourceAttributes{Namespace: namespace, Verb: verb, Version: "v1", Resource: res})
	require.NoError(t, err)
	return ok
}

func TestSliceEndToEnd(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		policy tenant.Policy
		strict bool
	}{
		{"compatible provider, compatible consumer", tenant.Compatible, false},
		{"strict provider, strict consumer", tenant.Strict, true},
		{"compatible provider, strict consumer", tenant.Compatible, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			p := newModePair(t, tt.policy, tt.strict)
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)

			a, doneA := sliceRoundTrip(t, p, "slice-a")
			_, doneB := sliceRoundTrip(t, p, "slice-b")
			for _, cond := range a.Status.Conditions {
				require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, cond.Status, cond.Type)
			}
			require.Equal(t, resourceslice.ReasonAuthenticationAccepted,
				resourceslice.Condition(&a.Status, authv1beta1.ResourceSliceConditionTypeAuthentication).Reason)

			id := doneA.Identity
			require.Equal(t, identity.ResourceSliceName("slice-a"), id.Name)
			require.Equal(t, authv1beta1.ResourceSliceIdentityType, id.Spec.Type)
			require.Equal(t, "slice-a", id.Labels[resourceslice.IdentityLabel])
			require.Equal(t, a.UID, id.OwnerReferences[0].UID)
			require.Equal(t, kubeconfig.SecretName(id.Name), doneA.Secret.Name)
			subject := csr.ResourceSliceSubject(consumerID, "slice-a")
			require.Equal(t, subject.CommonName, doneA.Kubeconfig.User())

			// A consumer whose ControlPlane identity has a key of its own
			// (every one Authenticate peers with a kubepact provider) holds a
			// fresh key per slice, strict or not.
			certA, err := doneA.Kubeconfig.ClientCertificate()
			require.NoError(t, err)
			certB, err := doneB.Kubeconfig.ClientCertificate()
			require.NoError(t, err)
			clusterKey, err := p.consumerCluster.Keys.Get(ctx)
			require.NoError(t, err)
			require.False(t, keys.Equal(certA.PublicKey, clusterKey.Public()))
			require.False(t, keys.Equal(certA.PublicKey, certB.PublicKey))

			// Exactly the slice RBAC: allowed in the offloaded namespace,
			// nowhere else, the tenant namespace least of all.
			tenantNS := clusterid.TenantNamespace(consumerID)
			require.True(t, allowed(t, p, "slice-a", offloadNS, "create", "configmaps"))
			require.True(t, allowed(t, p, "slice-a", offloadNS, "get", "pods"))
			require.False(t, allowed(t, p, "slice-a", offloadNS, "create", "pods"))
			require.False(t, allowed(t, p, "slice-a", "default", "get", "configmaps"))
			for _, res := range []string{"secrets", "configmaps"} {
				for _, verb := range rbac.Verbs() {
					require.False(t, allowed(t, p, "slice-a", tenantNS, verb, res), "%s %s in the tenant namespace", verb, res)
				}
			}
			require.Len(t, p.providerCluster.RBAC.ClusterRoleBindings.Objects(""), 1)

			// Deleting one slice keeps the bindings the other needs.
			require.NoError(t, p.providerCluster.Slices.Delete(ctx, tenantNS, "slice-a"))
			require.NoError(t, p.provider.ForgetSlice(ctx, tenantNS, "slice-a"))
			require.True(t, allowed(t, p, "slice-b", offloadNS, "create", "configmaps"))
			_, err = p.providerCluster.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID, Slice: "slice-a"})
			require.ErrorIs(t, err, csr.ErrNotFound)
			// The last one takes them.
			require.NoError(t, p.providerCluster.Slices.Delete(ctx, tenantNS, "slice-b"))
			require.NoError(t, p.provider.ForgetSlice(ctx, tenantNS, "slice-b"))
			require.False(t, allowed(t, p, "slice-b", offloadNS, "create", "configmaps"))
			require.Len(t, p.providerCluster.RBAC.ClusterRoleBindings.Objects(""), 1, "the accepted Tenant keeps its cluster-wide binding, as Liqo's")

			// The consumer forgets its slices.
			require.NoError(t, p.consumer.ForgetSlice(ctx, providerID, "slice-a"))
			require.NotContains(t, secretNames(p.consumerCluster), kubeconfig.SecretName(id.Name))
			_, err = p.consumerCluster.IdentityKeys.Get(ctx, identity.ResourceSliceKeyName(providerID, "slice-a"))
			require.ErrorIs(t, err, keys.ErrNotFound)
		})
	}
}

// badCSR returns a CSR made with key for template.
func badCSR(t *testing.T, key any, template *x509.CertificateRequest) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(nil, template, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func TestAcceptSliceRejectsAndBindsNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	subject := csr.ResourceSliceSubject(consumerID, "slice-a")
	for _, tt := range []struct {
		name   string
		mutate func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice)
		want   error
	}{
		{"in another consumer's namespace", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Namespace = clusterid.TenantNamespace("cl-other")
		}, resourceslice.ErrWrongNamespace},
		{"outside a tenant namespace", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Namespace = "default"
		}, resourceslice.ErrWrongNamespace},
		{"mismatching consumerClusterID", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			id := "cl-other"
			s.Spec.ConsumerClusterID = &id
		}, resourceslice.ErrWrongNamespace},
		{"wrong provider", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			id := "cl-elsewhere"
			s.Spec.ProviderClusterID = &id
		}, resourceslice.ErrWrongProvider},
		{"no Tenant", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			require.NoError(t, p.providerCluster.Tenants.Delete(ctx, s.Namespace, consumerID))
		}, resourceslice.ErrNoTenant},
		{"wrong CN", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Spec.CSR = badCSR(t, clusterKey(t, p), &x509.CertificateRequest{Subject: pkix.Name{CommonName: "slice-b-0123456789ab", Organization: subject.Organization}})
		}, csr.ErrCommonName},
		{"the ControlPlane CN", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Spec.CSR = badCSR(t, clusterKey(t, p), &x509.CertificateRequest{Subject: csr.ControlPlaneSubject(consumerID)})
		}, csr.ErrCommonName},
		{"extra O", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Spec.CSR = badCSR(t, clusterKey(t, p), &x509.CertificateRequest{Subject: pkix.Name{CommonName: subject.CommonName, Organization: []string{consumerID, "system:masters"}}})
		}, csr.ErrOrganization},
		{"SANs", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Spec.CSR = badCSR(t, clusterKey(t, p), &x509.CertificateRequest{Subject: subject, URIs: []*url.URL{{Scheme: "spiffe", Host: "x"}}})
		}, csr.ErrSAN},
		{"two PEM blocks", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Spec.CSR = append(append([]byte{}, s.Spec.CSR...), s.Spec.CSR...)
		}, csr.ErrMalformed},
		{"the cluster key, the ControlPlane identity having its own", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Spec.CSR = badCSR(t, mustClusterKey(t, p), &x509.CertificateRequest{Subject: subject})
		}, csr.ErrKeyMismatch},
		{"the ControlPlane identity's key", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Spec.CSR = badCSR(t, mustIdentityKey(t, p), &x509.CertificateRequest{Subject: subject})
		}, csr.ErrKeyMismatch},
		{"a slice user that is another consumer's user", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			victim := subject.CommonName // a consumer whose ID is the slice's CN
			_, err := p.providerCluster.Tenants.Update(ctx, &authv1beta1.Tenant{
				ObjectMeta: metav1.ObjectMeta{Name: victim, Namespace: clusterid.TenantNamespace(victim)},
				Spec:       authv1beta1.TenantSpec{ClusterID: victim},
			})
			require.NoError(t, err)
		}, resourceslice.ErrUserTaken},
		{"a consumer revoked, its Tenant still there", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			require.NoError(t, p.providerCluster.Revocations.Put(ctx, lifecycle.Revocation{
				ConsumerID: consumerID, Until: p.clock.Now().Add(time.Hour), Reason: lifecycle.ReasonRevoked,
			}))
		}, lifecycle.ErrRevoked},
		{"privileged group", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			require.NoError(t, p.providerCluster.RBAC.ApplyClusterRole(ctx, &rbacv1.ClusterRole{
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}}},
			}))
			require.NoError(t, p.providerCluster.RBAC.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
				Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, Name: consumerID}},
				RoleRef:  rbacv1.RoleRef{Kind: "ClusterRole", Name: ""},
			}))
		}, rbac.ErrPrivilegedUser},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			remote := replicate(t, p, createSlice(t, p, "slice-a"))
			tt.mutate(t, p, remote)
			signed, rbWrites, crbs := p.providerCluster.Signer.Signed(), p.providerCluster.RBAC.RoleBindings.Writes(), len(p.providerCluster.RBAC.ClusterRoleBindings.Objects(""))

			status, err := p.provider.AcceptSlice(ctx, remote)
			require.ErrorIs(t, err, resourceslice.ErrDenied)
			require.ErrorIs(t, err, tt.want)
			var denied *resourceslice.DeniedError
			require.ErrorAs(t, err, &denied)
			require.NotNil(t, status)
			auth := resourceslice.Condition(status, authv1beta1.ResourceSliceConditionTypeAuthentication)
			require.Equal(t, authv1beta1.ResourceSliceConditionDenied, auth.Status)
			require.Equal(t, resourceslice.ReasonAuthenticationDenied, auth.Reason)
			require.Equal(t, authv1beta1.ResourceSliceConditionDenied,
				resourceslice.Condition(status, authv1beta1.ResourceSliceConditionTypeResources).Status)
			require.Nil(t, status.AuthParams)
			require.Equal(t, signed, p.providerCluster.Signer.Signed(), "nothing signed")
			require.Equal(t, rbWrites, p.providerCluster.RBAC.RoleBindings.Writes(), "nothing bound")
			require.LessOrEqual(t, len(p.providerCluster.RBAC.ClusterRoleBindings.Objects("")), crbs, "nothing bound")
			_, err = p.providerCluster.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID, Slice: "slice-a"})
			require.ErrorIs(t, err, csr.ErrNotFound)
		})
	}
}

func clusterKey(t *testing.T, p *pair) *keys.PrivateKey {
	t.Helper()
	k, err := p.consumerCluster.Keys.Get(context.Background())
	require.NoError(t, err)
	return k
}

// A Strict consumer's slice must have a key of its own: neither the cluster
// key nor the ControlPlane identity's.
func TestAcceptSliceRefusesReusedKeyOfStrictConsumer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newModePair(t, tenant.Strict, true)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	cpKey, err := p.consumerCluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(providerID))
	require.NoError(t, err)
	for name, key := range map[string]*keys.PrivateKey{"cluster key": clusterKey(t, p), "ControlPlane key": cpKey.Key} {
		remote := replicate(t, p, createSlice(t, p, "slice-a"))
		remote.Spec.CSR = badCSR(t, key, &x509.CertificateRequest{Subject: csr.ResourceSliceSubject(consumerID, "slice-a")})
		_, err := p.provider.AcceptSlice(ctx, remote)
		require.ErrorIs(t, err, csr.ErrKeyMismatch, name)
	}
}

func TestSliceResourcesFollowTenantCondition(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	setCondition := func(c authv1beta1.TenantCondition) {
		tn, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
		require.NoError(t, err)
		tn.Spec.TenantCondition = c
		_, err = p.providerCluster.Tenants.Update(ctx, tn)
		require.NoError(t, err)
	}
	resources := func(s *authv1beta1.ResourceSliceStatus) *authv1beta1.ResourceSliceCondition {
		return resourceslice.Condition(s, authv1beta1.ResourceSliceConditionTypeResources)
	}

	old := replicate(t, p, createSlice(t, p, "slice-old"))
	status, err := p.provider.AcceptSlice(ctx, old)
	require.NoError(t, err)
	old.Status = *status
	accepted := resources(status).LastTransitionTime

	setCondition(authv1beta1.TenantConditionCordoned)
	p.clock.Step(time.Hour)
	status, err = p.provider.AcceptSlice(ctx, old)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted, resources(status).Status, "accepted before the cordon")
	require.Equal(t, accepted, resources(status).LastTransitionTime, "no transition, no new time")
	require.NotNil(t, status.AuthParams)

	fresh := replicate(t, p, createSlice(t, p, "slice-new"))
	signed := p.providerCluster.Signer.Signed()
	status, err = p.provider.AcceptSlice(ctx, fresh)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.ResourceSliceConditionAccepted,
		resourceslice.Condition(status, authv1beta1.ResourceSliceConditionTypeAuthentication).Status)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, resources(status).Status, "new slice while cordoned")
	require.Equal(t, resourceslice.ReasonResourcesDenied, resources(status).Reason)
	require.Nil(t, status.AuthParams)
	require.Equal(t, signed, p.providerCluster.Signer.Signed())

	setCondition(authv1beta1.TenantConditionDrained)
	p.clock.Step(time.Hour)
	status, err = p.provider.AcceptSlice(ctx, old)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, resources(status).Status, "drained")
	require.True(t, resources(status).LastTransitionTime.After(accepted.Time))
	require.Nil(t, status.AuthParams)

	setCondition(authv1beta1.TenantConditionActive)
	other := replicate(t, p, createSlice(t, p, "slice-gpu"))
	other.Spec.Class = "gpu"
	status, err = p.provider.AcceptSlice(ctx, other)
	require.NoError(t, err)
	require.Equal(t, authv1beta1.ResourceSliceConditionDenied, resources(status).Status, "class not offered")
}

func TestApplySliceIdentityRejectsHostileStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name   string
		mutate func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice)
		want   error
	}{
		{"junk certificate", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Status.AuthParams.SignedCRT = []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
		}, identity.ErrMalformed},
		{"huge status", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Status.AuthParams.SignedCRT = []byte(strings.Repeat("A", 4<<20))
		}, identity.ErrMalformed},
		{"the ControlPlane certificate", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			tn, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
			require.NoError(t, err)
			s.Status.AuthParams.SignedCRT = tn.Status.AuthParams.SignedCRT
		}, identity.ErrKeyMismatch},
		{"another slice's certificate", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			b, _ := sliceRoundTrip(t, p, "slice-b")
			s.Status.AuthParams.SignedCRT = b.Status.AuthParams.SignedCRT
		}, identity.ErrKeyMismatch},
		{"the slice's key with the ControlPlane subject", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			own, err := p.consumerCluster.IdentityKeys.Get(ctx, identity.ResourceSliceKeyName(providerID, s.Name))
			require.NoError(t, err)
			req, err := csr.Check(badCSR(t, own.Key, &x509.CertificateRequest{Subject: csr.ControlPlaneSubject(consumerID)}),
				csr.Policy{CommonName: consumerID, Organization: csr.ControlPlaneOrganization})
			require.NoError(t, err)
			s.Status.AuthParams.SignedCRT, err = p.providerCluster.Signer.Sign(ctx, csr.Request{CSR: req, Lifetime: time.Hour})
			require.NoError(t, err)
		}, identity.ErrSubject},
		{"certificate for another key", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			req, err := csr.Check(badCSR(t, testkeys.Generate(t, keys.Ed25519), &x509.CertificateRequest{Subject: csr.ResourceSliceSubject(consumerID, s.Name)}),
				csr.ResourceSlicePolicy(consumerID, s.Name, nil))
			require.NoError(t, err)
			s.Status.AuthParams.SignedCRT, err = p.providerCluster.Signer.Sign(ctx, csr.Request{CSR: req, Lifetime: time.Hour})
			require.NoError(t, err)
		}, identity.ErrKeyMismatch},
		{"another API server", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Status.AuthParams.APIServer = "https://attacker.example"
		}, consumer.ErrEndpointChanged},
		{"another CA", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Status.AuthParams.CA = p.consumerCluster.Signer.CA.Certificate()
		}, consumer.ErrEndpointChanged},
		{"huge API server", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Status.AuthParams.APIServer = "https://provider.example/" + strings.Repeat("a", 1<<20)
		}, identity.ErrMalformed},
		{"http API server", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			s.Status.AuthParams.APIServer = "http://provider.example:6443"
		}, identity.ErrInvalidServer},
		{"not for the provider of the namespace", func(t *testing.T, p *pair, s *authv1beta1.ResourceSlice) {
			id := "cl-elsewhere"
			s.Spec.ProviderClusterID = &id
		}, resourceslice.ErrMalformed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
			require.NoError(t, err)
			local := createSlice(t, p, "slice-a")
			status, err := p.provider.AcceptSlice(ctx, replicate(t, p, local))
			require.NoError(t, err)
			local.Status = *status
			tt.mutate(t, p, local)
			secrets, ids := secretNames(p.consumerCluster), len(p.consumerCluster.Identities.Objects(""))

			_, err = p.consumer.ApplySliceIdentity(ctx, local, nil)
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, secrets, secretNames(p.consumerCluster), "no kubeconfig Secret")
			require.Len(t, p.consumerCluster.Identities.Objects(""), ids, "no Identity")
		})
	}
}

func TestApplySliceIdentityRemovesDeniedAndWaitsForPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)

	pending := createSlice(t, p, "slice-p")
	_, err = p.consumer.ApplySliceIdentity(ctx, pending, nil)
	require.ErrorIs(t, err, consumer.ErrSlicePending)

	local, done := sliceRoundTrip(t, p, "slice-a")
	require.Contains(t, secretNames(p.consumerCluster), done.Secret.Name)
	resourceslice.SetCondition(&local.Status, authv1beta1.ResourceSliceConditionTypeAuthentication,
		authv1beta1.ResourceSliceConditionDenied, resourceslice.ReasonAuthenticationDenied, "no", p.clock.Now())
	_, err = p.consumer.ApplySliceIdentity(ctx, local, nil)
	require.ErrorIs(t, err, consumer.ErrSliceDenied)
	require.NotContains(t, secretNames(p.consumerCluster), done.Secret.Name)
	for _, id := range p.consumerCluster.Identities.Objects("") {
		require.NotEqual(t, done.Identity.Name, id.Name)
	}
}

func TestUnauthenticateRefusesWhileSlicesExist(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	createSlice(t, p, "slice-a") // no identity yet
	before := p.writes()
	err = kubepact.Unauthenticate(ctx, p.consumer, p.provider)
	require.ErrorIs(t, err, consumer.ErrInUse)
	require.Equal(t, before, p.writes())
}

func TestForgetForceRemovesOnlyLocalObjects(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		p := newModePair(t, tenant.Compatible, strict)
		ctx := context.Background()
		_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
		require.NoError(t, err)
		sliceRoundTrip(t, p, "slice-a")
		createSlice(t, p, "slice-b")
		require.ErrorIs(t, p.consumer.Forget(ctx, providerID), consumer.ErrInUse)

		pc := p.providerCluster
		providerWrites := pc.Tenants.Writes() + pc.Slices.Writes() + pc.RBAC.RoleBindings.Writes() + pc.Certificates.Len() + pc.Secrets.Writes()
		f, err := p.consumer.ForgetForce(ctx, providerID)
		require.NoError(t, err)
		require.Equal(t, []string{"slice-a", "slice-b"}, f.Slices)
		require.Contains(t, f.String(), "NOT contacted")
		require.Equal(t, providerWrites, pc.Tenants.Writes()+pc.Slices.Writes()+pc.RBAC.RoleBindings.Writes()+pc.Certificates.Len()+pc.Secrets.Writes(),
			"nothing changed on the provider")
		require.Len(t, pc.Tenants.Objects(""), 1)

		cc := p.consumerCluster
		require.Empty(t, cc.Slices.Objects(""))
		require.Empty(t, cc.Identities.Objects(""))
		require.Empty(t, secretNames(cc))
		if strict {
			for _, name := range []string{identity.ControlPlaneName(providerID), identity.ResourceSliceKeyName(providerID, "slice-a"), identity.ResourceSliceKeyName(providerID, "slice-b")} {
				_, err := cc.IdentityKeys.Get(ctx, name)
				require.ErrorIs(t, err, keys.ErrNotFound, name)
			}
		}
		_, err = cc.Keys.Get(ctx) // the cluster key stays: it is the cluster's
		require.NoError(t, err)
	}
}

// A slice accepted before and denied now loses its certificate, and the
// consumer its slice bindings unless another slice may need them; with no
// Tenant left, every binding goes at once.
func TestDeniedSliceReleasesBindings(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newPair(t)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	tenantNS := clusterid.TenantNamespace(consumerID)
	accept := func(name string) *authv1beta1.ResourceSlice {
		remote := replicate(t, p, createSlice(t, p, name))
		status, err := p.provider.AcceptSlice(ctx, remote)
		require.NoError(t, err)
		remote.Status = *status
		stored, err := p.providerCluster.Slices.Put(ctx, remote)
		require.NoError(t, err)
		return stored
	}
	a, b := accept("slice-a"), accept("slice-b")
	cached := func(name string) bool {
		_, err := p.providerCluster.Certificates.Get(ctx, csr.CacheKey{ConsumerID: consumerID, Slice: name})
		return err == nil
	}

	// slice-a's CSR turns bad: its certificate goes, slice-b keeps the bindings.
	a.Spec.CSR = badCSR(t, mustClusterKey(t, p), &x509.CertificateRequest{Subject: csr.ResourceSliceSubject(consumerID, "slice-a")})
	status, err := p.provider.AcceptSlice(ctx, a)
	require.ErrorIs(t, err, csr.ErrKeyMismatch)
	a.Status = *status
	_, err = p.providerCluster.Slices.Put(ctx, a)
	require.NoError(t, err)
	require.False(t, cached("slice-a"))
	require.True(t, cached("slice-b"))
	require.True(t, allowed(t, p, "slice-b", offloadNS, "create", "configmaps"))

	// Forgetting slice-b: the only other slice is denied, the bindings go.
	require.NoError(t, p.provider.ForgetSlice(ctx, tenantNS, "slice-b"))
	require.False(t, allowed(t, p, "slice-b", offloadNS, "create", "configmaps"))
	require.Len(t, p.providerCluster.RBAC.ClusterRoleBindings.Objects(""), 1, "the accepted Tenant keeps its cluster-wide binding")

	// Accepted again, then the Tenant goes: every binding goes with the first denial.
	b = accept("slice-b")
	accept("slice-c")
	require.True(t, allowed(t, p, "slice-b", offloadNS, "create", "configmaps"))
	require.NoError(t, p.providerCluster.Tenants.Delete(ctx, tenantNS, consumerID))
	_, err = p.provider.AcceptSlice(ctx, b)
	require.ErrorIs(t, err, resourceslice.ErrNoTenant)
	require.False(t, allowed(t, p, "slice-c", offloadNS, "create", "configmaps"), "no Tenant: powerless at once")
	require.Empty(t, p.providerCluster.RBAC.ClusterRoleBindings.Objects(""))
}

package liqo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	liqoauthv1beta1 "github.com/liqotech/liqo/apis/authentication/v1beta1"
	liqov1beta1 "github.com/liqotech/liqo/apis/core/v1beta1"
	liqoauthentication "github.com/liqotech/liqo/pkg/liqo-controller-manager/authentication"
	"github.com/liqotech/liqo/pkg/liqo-controller-manager/offloading/forge"
	tenantnamespace "github.com/liqotech/liqo/pkg/tenantNamespace"
	"github.com/liqotech/liqo/pkg/utils/getters"
	liqokubeconfig "github.com/liqotech/liqo/pkg/utils/kubeconfig"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/internal/testenv"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/renewal"
	"github.com/kubepact/kubepact/wire"
)

// TestInterop runs the peering steps in both directions at once, on the
// same two clusters: the Liqo cluster consumes the kubepact cluster while
// the kubepact cluster consumes the Liqo cluster. Each cluster's tenant
// namespace for the other then holds both its own objects and its peer's
// copies, as with any two clusters peered both ways.
func TestInterop(t *testing.T) {
	t.Run("directions", func(t *testing.T) {
		t.Run("Liqo consumer, kubepact provider", func(t *testing.T) {
			t.Parallel()
			steps(t, liqoSide, kubepactSide)
		})
		t.Run("kubepact consumer, Liqo provider", func(t *testing.T) {
			t.Parallel()
			steps(t, kubepactSide, liqoSide)
		})
	})
	// Both directions are done. kubepact-controller saw its peer's copies
	// beside its own objects in one namespace, and took none for its own.
	t.Run("each side reconciles only its own objects", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		events, err := kubepactSide.admin.CoreV1().Events(tenantNamespace(ctx, t, kubepactSide, liqoSide.id)).List(ctx, metav1.ListOptions{})
		require.NoError(t, err)
		// The Liqo cluster's objects, copied here by its CRD replicator.
		copies := map[string]bool{
			"Renew/" + renewal.Name(kubepactSide.id):   true,
			"ResourceSlice/" + sliceName(kubepactSide): true,
		}
		for _, e := range events.Items {
			switch e.Reason {
			case contract.ReasonInvalidRenew, contract.ReasonInvalidSlice:
				// Nothing in this suite is malformed: a reconciler took
				// the other side's object for its own.
			case contract.ReasonReplicationFailed:
				if !copies[e.InvolvedObject.Kind+"/"+e.InvolvedObject.Name] {
					continue
				}
			default:
				continue
			}
			t.Errorf("Event %s on %s %s: %s", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Message)
		}
	})
}

// steps drives consumer c and provider p with liqoctl, as a Liqo user
// does, and checks each step from the Liqo side: what Liqo's own code reads
// on the consumer, and what the identity it got may do on the provider.
func steps(t *testing.T, c, p *side) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range []*side{c, p} {
				t.Logf("%s cluster:\n%s", s.name, describe(s))
			}
		}
	})

	t.Run("authenticate", func(t *testing.T) {
		liqoctl(ctx, t, "authenticate", "--kubeconfig", c.kubeconfig, "--remote-kubeconfig", p.kubeconfig)
		requireControlPlane(ctx, t, c, p)
		// Again, as liqoctl users do: it changes nothing that works.
		liqoctl(ctx, t, "authenticate", "--kubeconfig", c.kubeconfig, "--remote-kubeconfig", p.kubeconfig)
		requireControlPlane(ctx, t, c, p)
	})

	requested := sliceName(p)
	t.Run("resourceslice", func(t *testing.T) {
		liqoctl(ctx, t, "create", "resourceslice", requested, "--kubeconfig", c.kubeconfig,
			"--remote-cluster-id", p.id, "--cpu", "2", "--memory", "4Gi", "--pods", "110", "--no-virtual-node")
		ns := tenantNamespace(ctx, t, c, p.id)
		var slice liqoauthv1beta1.ResourceSlice
		require.NoError(t, eventually(ctx, time.Minute, func(ctx context.Context) error {
			if err := c.client.Get(ctx, client.ObjectKey{Namespace: ns, Name: requested}, &slice); err != nil {
				return err
			}
			for _, typ := range []liqoauthv1beta1.ResourceSliceConditionType{
				liqoauthv1beta1.ResourceSliceConditionTypeAuthentication, liqoauthv1beta1.ResourceSliceConditionTypeResources,
			} {
				if cond := liqoauthentication.GetCondition(&slice, typ); cond == nil || cond.Status != liqoauthv1beta1.ResourceSliceConditionAccepted {
					return fmt.Errorf("condition %s: %+v", typ, cond)
				}
			}
			if len(slice.Status.Resources) == 0 {
				return errors.New("no status.resources yet")
			}
			return nil
		}), "the consumer's ResourceSlice accepted, with resources")

		// The capacity a Liqo consumer builds its virtual node from, as
		// Liqo's own code reads it from the slice.
		vn := forge.VirtualNodeOptionsFromResourceSlice(&slice, "", nil)
		for name, want := range map[corev1.ResourceName]string{corev1.ResourceCPU: "2", corev1.ResourceMemory: "4Gi", corev1.ResourcePods: "110"} {
			got, ok := vn.ResourceList[name]
			require.True(t, ok, "the virtual node's %s", name)
			require.Zero(t, got.Cmp(resource.MustParse(want)), "the virtual node's %s is %s, want %s", name, got.String(), want)
		}

		// The slice's own identity, as Liqo's code finds it, works.
		id, err := getters.GetIdentityFromResourceSlice(ctx, c.client, liqov1beta1.ClusterID(p.id), requested)
		require.NoError(t, err)
		secret, err := getters.GetKubeconfigSecretFromIdentity(ctx, c.client, id)
		require.NoError(t, err)
		cfg, err := liqokubeconfig.BuildConfigFromSecret(secret)
		require.NoError(t, err)
		// Liqo's ResourceSlice certificate: O = the consumer's ID, the group
		// a provider binds cluster-wide when it accepts the Tenant.
		user := requireUser(ctx, t, cfg)
		require.Contains(t, user.Groups, c.id)
		requireRole(ctx, t, cfg, "virtual-kubelet-remote-clusterwide", "")
	})

	t.Run("renewal", func(t *testing.T) {
		before := controlPlaneConfig(ctx, t, c, p)
		// The provider re-signs by two thirds of the lifetime; the consumer
		// has the new certificate through its Renew soon after.
		require.NoError(t, eventually(ctx, certificateLifetime+30*time.Second, func(ctx context.Context) error {
			after, err := controlPlaneConfigErr(ctx, c, p)
			if err != nil {
				return err
			}
			if bytes.Equal(after.CertData, before.CertData) {
				return errors.New("the consumer's kubeconfig still holds the first certificate")
			}
			return nil
		}), "a renewed certificate on the consumer")
		requireControlPlane(ctx, t, c, p)
	})

	t.Run("unauthenticate and authenticate again", func(t *testing.T) {
		// liqoctl unauthenticate refuses while ResourceSlices remain, and
		// liqoctl has no delete for them: a user runs kubectl delete.
		slice := &liqoauthv1beta1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNamespace(ctx, t, c, p.id), Name: requested}}
		require.NoError(t, client.IgnoreNotFound(c.client.Delete(ctx, slice)))
		require.NoError(t, eventually(ctx, time.Minute, func(ctx context.Context) error {
			if err := c.client.Get(ctx, client.ObjectKeyFromObject(slice), slice); err == nil {
				return fmt.Errorf("the ResourceSlice is still there, finalizers %v", slice.Finalizers)
			} else if !apierrors.IsNotFound(err) {
				return err
			}
			return nil
		}), "the ResourceSlice deleted")
		unauthenticate(ctx, t, c, p)
		liqoctl(ctx, t, "authenticate", "--kubeconfig", c.kubeconfig, "--remote-kubeconfig", p.kubeconfig)
		requireControlPlane(ctx, t, c, p)
	})

	if p != kubepactSide {
		return // a kubepact revocation needs a kubepact provider
	}
	t.Run("revoked until readmitted", func(t *testing.T) {
		// liqoctl drain tenant: a kubepact provider takes it as a
		// revocation of the consumer's certificates.
		before := controlPlaneConfig(ctx, t, c, p)
		liqoctl(ctx, t, "drain", "tenant", c.id, "--kubeconfig", p.kubeconfig, "--skip-confirm")
		// The consumer's kubeconfig may do nothing of what it could.
		cs, err := kubernetes.NewForConfig(before)
		require.NoError(t, err)
		rules, err := peerRoleRules(ctx, "remote-controlplane")
		require.NoError(t, err)
		require.NoError(t, eventually(ctx, time.Minute, func(ctx context.Context) error {
			for _, attrs := range ruleAttributes(rules, tenantNamespace(ctx, t, p, c.id)) {
				if allowed(ctx, t, cs, attrs) {
					return fmt.Errorf("a drained consumer may still %s %s/%s", attrs.Verb, attrs.Group, attrs.Resource)
				}
			}
			return nil
		}), "a drained consumer's kubeconfig refused")

		// Liqo's consumer keeps its kubeconfig Secret after this: its CRD
		// replicator's finalizer waits to delete its copies on the
		// provider, which the drain forbids; so does a Liqo provider's.
		liqoctl(ctx, t, "unauthenticate", "--kubeconfig", c.kubeconfig, "--remote-kubeconfig", p.kubeconfig, "--skip-confirm")
		out, err := liqoctlErr(ctx, "authenticate", "--kubeconfig", c.kubeconfig, "--remote-kubeconfig", p.kubeconfig, "--timeout", "20s")
		require.Error(t, err, "authenticate while revoked:\n%s", out)
		// The provider said why, on the new Tenant.
		events, err := p.admin.CoreV1().Events(tenantNamespace(ctx, t, p, c.id)).List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Tenant,reason=" + contract.ReasonConsumerRevoked})
		require.NoError(t, err)
		require.NotEmpty(t, events.Items, "a %s Event on the Tenant", contract.ReasonConsumerRevoked)

		prov := kubepactProvider(t, p)
		require.NoError(t, prov.Readmit(ctx, c.id))
		liqoctl(ctx, t, "authenticate", "--kubeconfig", c.kubeconfig, "--remote-kubeconfig", p.kubeconfig)
		requireControlPlane(ctx, t, c, p)
	})
}

// sliceName is the name of the ResourceSlice the suite asks provider p for.
func sliceName(p *side) string { return "interop-" + p.name }

// unauthenticate runs liqoctl unauthenticate and waits until the consumer's
// ControlPlane kubeconfig is gone (the garbage collector deletes it after
// its Identity).
func unauthenticate(ctx context.Context, t *testing.T, c, p *side) {
	t.Helper()
	liqoctl(ctx, t, "unauthenticate", "--kubeconfig", c.kubeconfig, "--remote-kubeconfig", p.kubeconfig, "--skip-confirm")
	require.NoError(t, eventually(ctx, time.Minute, func(ctx context.Context) error {
		if _, err := controlPlaneConfigErr(ctx, c, p); err == nil {
			return errors.New("the consumer still holds a kubeconfig for the provider")
		}
		return nil
	}), "the consumer's kubeconfig deleted")
}

// liqoctl runs the real liqoctl with args and fails t if it fails.
func liqoctl(ctx context.Context, t *testing.T, args ...string) string {
	t.Helper()
	out, err := liqoctlErr(ctx, args...)
	require.NoError(t, err, "liqoctl %s:\n%s", strings.Join(args, " "), out)
	return out
}

// liqoctlMu runs one liqoctl at a time, as one user at a terminal does:
// liqoctl itself does not expect two runs to create the same tenant
// namespace at once.
var liqoctlMu sync.Mutex

func liqoctlErr(ctx context.Context, args ...string) (string, error) {
	liqoctlMu.Lock()
	defer liqoctlMu.Unlock()
	cmd := exec.CommandContext(ctx, bins.liqoctl, args...)
	env, err := programEnv(testenv.Options{})
	if err != nil {
		return "", err
	}
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// tenantNamespace returns the tenant namespace s keeps for the peer
// peerID, as Liqo's tenant namespace manager finds it.
func tenantNamespace(ctx context.Context, t *testing.T, s *side, peerID string) string {
	t.Helper()
	ns, err := tenantnamespace.NewManager(s.admin, scheme).GetNamespace(ctx, liqov1beta1.ClusterID(peerID))
	require.NoError(t, err)
	return ns.Name
}

// controlPlaneConfig returns the rest.Config that Liqo's components on c
// use to reach p: the ControlPlane kubeconfig Secret, found and read by
// Liqo's own code.
func controlPlaneConfig(ctx context.Context, t *testing.T, c, p *side) *rest.Config {
	t.Helper()
	cfg, err := controlPlaneConfigErr(ctx, c, p)
	require.NoError(t, err)
	return cfg
}

func controlPlaneConfigErr(ctx context.Context, c, p *side) (*rest.Config, error) {
	secret, err := getters.GetControlPlaneKubeconfigSecretByClusterID(ctx, c.client, liqov1beta1.ClusterID(p.id))
	if err != nil {
		return nil, err
	}
	return liqokubeconfig.BuildConfigFromSecret(secret)
}

// requireControlPlane checks that c's ControlPlane identity for p works: its
// kubeconfig authenticates as c, may do everything Liqo's chart grants a
// consumer (remote-controlplane in its tenant namespace,
// virtual-kubelet-remote-clusterwide cluster-wide), and may not read
// Secrets elsewhere.
func requireControlPlane(ctx context.Context, t *testing.T, c, p *side) {
	t.Helper()
	// Liqo's ControlPlane certificate: CN = the consumer's ID, O = liqo.io.
	var cfg *rest.Config
	require.NoError(t, eventually(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		if cfg, err = controlPlaneConfigErr(ctx, c, p); err != nil {
			return err
		}
		user, err := whoAmI(ctx, cfg)
		switch {
		case err != nil:
			return err
		case user.Username != c.id || !slices.Contains(user.Groups, "liqo.io"):
			return fmt.Errorf("the kubeconfig authenticates as %q in %v", user.Username, user.Groups)
		}
		return nil
	}), "the consumer's ControlPlane kubeconfig authenticates as the consumer")
	requireRole(ctx, t, cfg, "remote-controlplane", tenantNamespace(ctx, t, p, c.id))
}

// requireRole checks that cfg may do everything Liqo's chart file for role
// grants, in namespace ("" for cluster-wide), and may not list Secrets in
// kube-system.
func requireRole(ctx context.Context, t *testing.T, cfg *rest.Config, role, namespace string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	rules, err := peerRoleRules(ctx, role)
	require.NoError(t, err)
	for _, attrs := range ruleAttributes(rules, namespace) {
		require.True(t, allowed(ctx, t, cs, attrs), "%s may %s %s/%s in %q", role, attrs.Verb, attrs.Group, attrs.Resource, attrs.Namespace)
	}
	require.False(t, allowed(ctx, t, cs, &authorizationv1.ResourceAttributes{Namespace: "kube-system", Verb: "list", Resource: "secrets"}),
		"the consumer may not list Secrets in kube-system")
}

// requireUser checks that cfg authenticates, and returns who it is.
func requireUser(ctx context.Context, t *testing.T, cfg *rest.Config) authenticationv1.UserInfo {
	t.Helper()
	user, err := whoAmI(ctx, cfg)
	require.NoError(t, err, "SelfSubjectReview")
	return user
}

// whoAmI returns who the API server takes cfg for (a SelfSubjectReview).
func whoAmI(ctx context.Context, cfg *rest.Config) (authenticationv1.UserInfo, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return authenticationv1.UserInfo{}, err
	}
	return review.Status.UserInfo, nil
}

// ruleAttributes expands rules into one request per group, resource and
// verb, in namespace.
func ruleAttributes(rules []rbacv1.PolicyRule, namespace string) []*authorizationv1.ResourceAttributes {
	var out []*authorizationv1.ResourceAttributes
	for _, r := range rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range r.Verbs {
					out = append(out, &authorizationv1.ResourceAttributes{Namespace: namespace, Group: g, Resource: resource, Subresource: sub, Verb: v})
				}
			}
		}
	}
	return out
}

func allowed(ctx context.Context, t *testing.T, cs kubernetes.Interface, attrs *authorizationv1.ResourceAttributes) bool {
	t.Helper()
	review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: attrs},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	return review.Status.Allowed
}

// kubepactProvider returns the kubepact library's Provider for p, as an
// administrator of p holds it.
func kubepactProvider(t *testing.T, p *side) *kubepact.Provider {
	t.Helper()
	ports, err := wire.NewProviderPorts(p.cluster.AdminConfig(), nil)
	require.NoError(t, err)
	prov, err := provider.New(p.id, provider.Endpoint{Server: p.cluster.Host(), CA: p.cluster.CA()}, ports, nil)
	require.NoError(t, err)
	return prov
}

// describe says what a failed step leaves on s: the tenant namespaces, and
// the Tenants, ResourceSlices and Identities with their status.
func describe(s *side) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	nss, err := s.admin.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: "liqo.io/tenant-namespace"})
	if err != nil {
		return err.Error()
	}
	for _, ns := range nss.Items {
		fmt.Fprintf(&b, "namespace %s %v\n", ns.Name, ns.Labels)
		secrets, err := s.admin.CoreV1().Secrets(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, sec := range secrets.Items {
			var owners []string
			for _, o := range sec.OwnerReferences {
				owners = append(owners, o.Kind+"/"+o.Name)
			}
			fmt.Fprintf(&b, "  Secret %s labels=%v owners=%v deleting=%t\n", sec.Name, sec.Labels, owners, sec.DeletionTimestamp != nil)
		}
	}
	var tenants liqoauthv1beta1.TenantList
	if err := s.client.List(ctx, &tenants); err == nil {
		for _, o := range tenants.Items {
			fmt.Fprintf(&b, "Tenant %s spec.tenantCondition=%s status.tenantNamespace=%s authParams=%t\n",
				o.Name, o.Spec.TenantCondition, o.Status.TenantNamespace, o.Status.AuthParams != nil)
		}
	}
	var slices liqoauthv1beta1.ResourceSliceList
	if err := s.client.List(ctx, &slices); err == nil {
		for _, o := range slices.Items {
			fmt.Fprintf(&b, "ResourceSlice %s/%s labels=%v conditions=%+v resources=%v authParams=%t\n",
				o.Namespace, o.Name, o.Labels, o.Status.Conditions, o.Status.Resources, o.Status.AuthParams != nil)
		}
	}
	var identities liqoauthv1beta1.IdentityList
	if err := s.client.List(ctx, &identities); err == nil {
		for _, o := range identities.Items {
			fmt.Fprintf(&b, "Identity %s/%s type=%s cluster=%s secret=%q\n", o.Namespace, o.Name, o.Spec.Type, o.Spec.ClusterID, o.Status.KubeconfigSecretRef)
		}
	}
	events, err := s.admin.CoreV1().Events("").List(ctx, metav1.ListOptions{FieldSelector: "type=Warning"})
	if err == nil {
		for _, e := range events.Items {
			fmt.Fprintf(&b, "Event %s %s/%s %s: %s\n", e.Reason, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Source.Component, e.Message)
		}
	}
	return b.String()
}

package kube_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/tenant"
)

// TestTenantStoreWithoutCRD checks that a cluster without the Tenant CRD is
// not mistaken for one without the Tenant: the provider would otherwise
// redeem the nonce and sign before failing to store it.
func TestTenantStoreWithoutCRD(t *testing.T) {
	t.Parallel()
	scheme, err := kube.NewScheme()
	require.NoError(t, err)
	gr := authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.TenantResource).GroupResource()
	for name, missing := range map[string]error{
		// What the client makes of a kind its REST mapper cannot find.
		"no kind match": &meta.NoKindMatchError{GroupKind: authv1beta1.SchemeGroupVersion.WithKind(authv1beta1.TenantKind).GroupKind()},
		// What client-go makes of the API server's 404 for an unknown resource.
		"unknown resource": apierrors.NewGenericServerResponse(http.StatusNotFound, "get", gr, "", "", 0, false),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
				Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
					return missing
				},
			}).Build()
			_, err := kube.NewTenantStore(c).Get(t.Context(), "liqo-tenant-x", "x")
			require.Error(t, err)
			require.False(t, errors.Is(err, tenant.ErrNotFound), "a missing CRD is not a missing Tenant: %v", err)
		})
	}

	// A missing Tenant is.
	_, err = kube.NewTenantStore(fake.NewClientBuilder().WithScheme(scheme).Build()).Get(t.Context(), "liqo-tenant-x", "x")
	require.ErrorIs(t, err, tenant.ErrNotFound)
}

// NewClient maps the authentication.liqo.io kinds without discovery, to
// their plural resources.
func TestNewClientKnowsTheAuthenticationKinds(t *testing.T) {
	t.Parallel()
	c, err := kube.NewClient(&rest.Config{Host: "https://127.0.0.1:1"}, nil)
	require.NoError(t, err)
	for kind, resource := range map[string]string{
		authv1beta1.TenantKind: authv1beta1.TenantResource, authv1beta1.IdentityKind: authv1beta1.IdentityResource,
		authv1beta1.ResourceSliceKind: authv1beta1.ResourceSliceResource, authv1beta1.RenewKind: authv1beta1.RenewResource,
	} {
		m, err := c.RESTMapper().RESTMapping(authv1beta1.SchemeGroupVersion.WithKind(kind).GroupKind(), authv1beta1.SchemeGroupVersion.Version)
		require.NoError(t, err, kind)
		require.Equal(t, authv1beta1.SchemeGroupVersion.WithResource(resource), m.Resource)
		require.Equal(t, meta.RESTScopeNameNamespace, m.Scope.Name())
	}
}

// TestTenantStoreDeleteKeepsATenantCreatedMeanwhile checks that Delete of a
// terminating Tenant removes kubepact's finalizer and deletes nothing else:
// a Tenant created under the same name once the old one is gone, before
// Delete's own delete call, stays.
func TestTenantStoreDeleteKeepsATenantCreatedMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	scheme, err := kube.NewScheme()
	require.NoError(t, err)
	real, err := client.NewWithWatch(providerEnv.cluster.AdminConfig(), client.Options{Scheme: scheme})
	require.NoError(t, err)
	id := "cl-" + shortName(t.Name(), 0)
	ns := clusterid.TenantNamespace(id)
	_, err = providerEnv.client.CoreV1().Namespaces().Create(ctx, tenant.Namespace(id), metav1.CreateOptions{})
	require.NoError(t, err)
	newTenant := func() *authv1beta1.Tenant {
		return &authv1beta1.Tenant{
			ObjectMeta: metav1.ObjectMeta{Name: id, Namespace: ns, Finalizers: []string{tenant.Finalizer}},
			Spec:       authv1beta1.TenantSpec{ClusterID: id},
		}
	}
	old := newTenant()
	require.NoError(t, real.Create(ctx, old))
	require.NoError(t, real.Delete(ctx, old)) // terminating, held by the finalizer

	var created *authv1beta1.Tenant
	c := interceptor.NewClient(real, interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if err := c.Patch(ctx, obj, patch, opts...); err != nil {
				return err
			}
			// The finalizer is gone, so is the old Tenant: the consumer
			// creates a new one at once.
			created = newTenant()
			created.Finalizers = nil
			return c.Create(ctx, created)
		},
	})
	require.NoError(t, kube.NewTenantStore(c).Delete(ctx, ns, id))
	require.NotNil(t, created, "the finalizer was removed with a patch")

	var got authv1beta1.Tenant
	require.NoError(t, real.Get(ctx, client.ObjectKey{Namespace: ns, Name: id}, &got), "the new Tenant stays")
	require.Equal(t, created.UID, got.UID)
	require.NotEqual(t, old.UID, got.UID)
	require.NoError(t, real.Delete(ctx, &got))
}

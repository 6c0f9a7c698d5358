package kube_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
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

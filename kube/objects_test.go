package kube_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/tenant"
)

// TestTenantStoreWithoutCRD checks that a cluster without the Tenant CRD is
// not mistaken for one without the Tenant: the provider would otherwise
// redeem the nonce and sign before failing to store it.
func TestTenantStoreWithoutCRD(t *testing.T) {
	gvr := authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.TenantResource)
	client := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "TenantList"})
	client.PrependReactor("get", "tenants", func(clienttesting.Action) (bool, runtime.Object, error) {
		// What client-go makes of the API server's 404 for an unknown resource.
		return true, nil, apierrors.NewGenericServerResponse(http.StatusNotFound, "get", gvr.GroupResource(), "", "", 0, false)
	})
	_, err := kube.NewTenantStore(client).Get(context.Background(), "liqo-tenant-x", "x")
	require.Error(t, err)
	require.False(t, errors.Is(err, tenant.ErrNotFound), "a missing CRD is not a missing Tenant: %v", err)

	// A missing Tenant is.
	_, err = kube.NewTenantStore(dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "TenantList"})).Get(context.Background(), "liqo-tenant-x", "x")
	require.ErrorIs(t, err, tenant.ErrNotFound)
}

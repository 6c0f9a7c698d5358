package v1beta1_test

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubescheme "k8s.io/client-go/kubernetes/scheme"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

var kinds = map[string]runtime.Object{
	"Tenant":            &authv1beta1.Tenant{},
	"TenantList":        &authv1beta1.TenantList{},
	"Identity":          &authv1beta1.Identity{},
	"IdentityList":      &authv1beta1.IdentityList{},
	"ResourceSlice":     &authv1beta1.ResourceSlice{},
	"ResourceSliceList": &authv1beta1.ResourceSliceList{},
}

func TestSchemeGroupVersion(t *testing.T) {
	t.Parallel()
	require.Equal(t, schema.GroupVersion{Group: "authentication.liqo.io", Version: "v1beta1"}, authv1beta1.SchemeGroupVersion)
	require.Equal(t, "authentication.liqo.io", authv1beta1.GroupName)
}

func TestAddToScheme(t *testing.T) {
	t.Parallel()
	s := runtime.NewScheme()
	require.NoError(t, authv1beta1.AddToScheme(s))
	require.NoError(t, authv1beta1.AddToScheme(s), "adding twice is harmless")

	got := map[string]reflect.Type{}
	for kind, typ := range s.KnownTypes(authv1beta1.SchemeGroupVersion) {
		got[kind] = typ
	}
	for kind, obj := range kinds {
		gvk := authv1beta1.SchemeGroupVersion.WithKind(kind)
		require.True(t, s.Recognizes(gvk), kind)
		require.Equal(t, reflect.TypeOf(obj).Elem(), got[kind], kind)

		made, err := s.New(gvk)
		require.NoError(t, err)
		require.IsType(t, obj, made)

		gvks, _, err := s.ObjectKinds(obj)
		require.NoError(t, err)
		require.Equal(t, []schema.GroupVersionKind{gvk}, gvks)
	}
	// metav1.AddToGroupVersion registers the common option and watch types.
	require.True(t, s.Recognizes(authv1beta1.SchemeGroupVersion.WithKind("WatchEvent")))
	require.True(t, s.Recognizes(authv1beta1.SchemeGroupVersion.WithKind("ListOptions")))
	_, err := s.New(authv1beta1.SchemeGroupVersion.WithKind("Nonce"))
	require.True(t, runtime.IsNotRegisteredError(err))
}

func TestAddToSchemeLeavesClientGoSchemeAlone(t *testing.T) {
	t.Parallel()
	for kind := range kinds {
		require.False(t, kubescheme.Scheme.Recognizes(authv1beta1.SchemeGroupVersion.WithKind(kind)), "before: %s", kind)
	}
	require.NoError(t, authv1beta1.AddToScheme(runtime.NewScheme()))
	for kind := range kinds {
		require.False(t, kubescheme.Scheme.Recognizes(authv1beta1.SchemeGroupVersion.WithKind(kind)), "after: %s", kind)
	}
	require.False(t, kubescheme.Scheme.IsGroupRegistered(authv1beta1.GroupName))
	// client-go's scheme still knows its own types: the check above is not vacuous.
	require.True(t, kubescheme.Scheme.Recognizes(schema.GroupVersionKind{Version: "v1", Kind: "Secret"}))
}

func TestResource(t *testing.T) {
	t.Parallel()
	tests := []struct {
		resource string
		want     schema.GroupResource
	}{
		{resource: authv1beta1.TenantResource, want: schema.GroupResource{Group: "authentication.liqo.io", Resource: "tenants"}},
		{resource: authv1beta1.IdentityResource, want: schema.GroupResource{Group: "authentication.liqo.io", Resource: "identities"}},
		{resource: authv1beta1.ResourceSliceResource, want: schema.GroupResource{Group: "authentication.liqo.io", Resource: "resourceslices"}},
	}
	for _, tt := range tests {
		t.Run(tt.resource, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, authv1beta1.Resource(tt.resource))
		})
	}
}

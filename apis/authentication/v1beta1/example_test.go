package v1beta1_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

func ExampleAddToScheme() {
	// Register the types in a scheme of your own; client-go's global scheme
	// is left alone.
	s := runtime.NewScheme()
	if err := authv1beta1.AddToScheme(s); err != nil {
		panic(err)
	}
	tenant := []byte(`
apiVersion: authentication.liqo.io/v1beta1
kind: Tenant
metadata:
  name: cl-consumer
  namespace: liqo-tenant-cl-consumer
spec:
  clusterID: cl-consumer
  publicKey: 11qYAYKxCrfVS/7TyWQHOg7hcvPapiMlrwIaaPcHURo=
`)
	obj, gvk, err := serializer.NewCodecFactory(s).UniversalDeserializer().Decode(tenant, nil, nil)
	if err != nil {
		panic(err)
	}
	t := obj.(*authv1beta1.Tenant)
	fmt.Println(gvk.Kind, t.Name, t.Spec.ClusterID, len(t.Spec.PublicKey))
	// Output: Tenant cl-consumer cl-consumer 32
}

func ExampleResource() {
	fmt.Println(authv1beta1.Resource(authv1beta1.TenantResource))
	// Output: tenants.authentication.liqo.io
}

func ExampleIdentity() {
	ns := "liqo-tenant-cl-consumer"
	id := authv1beta1.Identity{
		Spec: authv1beta1.IdentitySpec{
			ClusterID:  "cl-provider",
			Type:       authv1beta1.ControlPlaneIdentityType,
			AuthParams: authv1beta1.AuthParams{CA: []byte("ca"), SignedCRT: []byte("crt"), APIServer: "https://provider.example:6443"},
			Namespace:  &ns,
		},
	}
	b, err := yaml.Marshal(id.Spec)
	if err != nil {
		panic(err)
	}
	fmt.Print(string(b))
	// Output:
	// authParams:
	//   apiServer: https://provider.example:6443
	//   ca: Y2E=
	//   signedCRT: Y3J0
	// clusterID: cl-provider
	// namespace: liqo-tenant-cl-consumer
	// type: ControlPlane
}

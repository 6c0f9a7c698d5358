package v1beta1_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/internal/wiretest"
)

// The fuzz targets below run their seeds as ordinary tests under go test.

// fuzzMeta is object metadata with every field a peer may send set.
func fuzzMeta(name string) metav1.ObjectMeta {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	return metav1.ObjectMeta{
		Name:              name,
		Namespace:         "liqo-tenant-" + name,
		UID:               "3f1e1a4e-6f0c-4a55-9c39-0b3f8d7d6c21",
		ResourceVersion:   "42",
		Generation:        3,
		CreationTimestamp: created,
		DeletionTimestamp: &created,
		Labels:            map[string]string{"liqo.io/remote-cluster-id": name},
		Annotations:       map[string]string{"kubepact.io/transcript-expiry": "1767323045"},
		Finalizers:        []string{"tenant.liqo.io/finalizer"},
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Namespace", Name: "liqo-tenant-" + name, UID: "u", Controller: ptr.To(true),
		}},
		ManagedFields: []metav1.ManagedFieldsEntry{{
			Manager: "kubepact", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "authentication.liqo.io/v1beta1",
			Time: &created, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:clusterID":{}}}`)},
		}},
	}
}

func fuzzAuthParams() authv1beta1.AuthParams {
	return authv1beta1.AuthParams{
		CA: []byte("-----BEGIN CERTIFICATE-----\n"), SignedCRT: []byte{0, 1, 2, 0xff},
		APIServer: "https://provider.example:6443", ProxyURL: ptr.To("http://proxy.example:3128"),
		AwsConfig: &authv1beta1.AwsConfig{AwsUserArn: "arn", AwsAccessKeyID: "id", AwsSecretAccessKey: "secret", AwsRegion: "eu-west-1", AwsClusterName: "c"},
	}
}

// fuzzSeeds adds obj as YAML and JSON, damaged forms of both, and the YAML
// files under testdata.
func fuzzSeeds(f *testing.F, obj any) {
	f.Helper()
	y, err := yaml.Marshal(obj)
	if err != nil {
		f.Fatal(err)
	}
	j, err := json.Marshal(obj)
	if err != nil {
		f.Fatal(err)
	}
	for _, b := range [][]byte{y, j} {
		f.Add(b)
		f.Add(b[:len(b)/2])
		f.Add(append(bytes.Clone(b), '\n'))
	}
	f.Add(append([]byte("unknown: field\n"), y...))
	f.Add(append([]byte("kind: Duplicate\n"), y...))
	f.Add(bytes.Replace(y, []byte("2026-01-02T03:04:05Z"), []byte("2026-01-02T03:04:05.123+01:00"), 1))
	f.Add(bytes.Replace(y, []byte("2026-01-02T03:04:05Z"), []byte("0000-01-01T00:00:00+01:00"), 1))
	f.Add([]byte("metadata: {creationTimestamp: null}\nspec: {}\nstatus: {}\n"))
	f.Add([]byte("null"))
	f.Add([]byte{})
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// roundTrip decodes data strictly into a new *T and, when that succeeds,
// checks that marshalling and decoding again gives an equal object.
func roundTrip[T any](t *testing.T, data []byte, meta func(*T) *metav1.ObjectMeta) {
	t.Helper()
	first := new(T)
	if err := yaml.UnmarshalStrict(data, first); err != nil {
		return
	}
	if !wiretest.Times(meta(first)) {
		return
	}
	out, err := yaml.Marshal(first)
	if err != nil {
		t.Fatalf("Marshal of a decoded %T: %v", first, err)
	}
	second := new(T)
	if err := yaml.UnmarshalStrict(out, second); err != nil {
		t.Fatalf("decoding a marshalled %T: %v\n%s", first, err, out)
	}
	if !apiequality.Semantic.DeepEqual(first, second) {
		t.Fatalf("%T changed in a round trip (-first +second):\n%s", first, cmp.Diff(first, second))
	}
}

func FuzzTenantRoundTrip(f *testing.F) {
	status := fuzzAuthParams()
	fuzzSeeds(f, &authv1beta1.Tenant{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: fuzzMeta("cl-consumer"),
		Spec: authv1beta1.TenantSpec{
			ClusterID: "cl-consumer", AuthzPolicy: authv1beta1.KeysExchange,
			PublicKey: []byte("-----BEGIN PUBLIC KEY-----\n"), CSR: []byte("csr"), Signature: []byte{0xde, 0xad},
			ProxyURL: ptr.To("http://proxy.example:3128"), TenantCondition: authv1beta1.TenantConditionDrained,
		},
		Status: authv1beta1.TenantStatus{AuthParams: &status, TenantNamespace: "liqo-tenant-cl-consumer"},
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, func(o *authv1beta1.Tenant) *metav1.ObjectMeta { return &o.ObjectMeta })
	})
}

func FuzzIdentityRoundTrip(f *testing.F) {
	fuzzSeeds(f, &authv1beta1.Identity{
		TypeMeta:   metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.IdentityKind},
		ObjectMeta: fuzzMeta("controlplane-cl-provider"),
		Spec: authv1beta1.IdentitySpec{
			ClusterID: "cl-provider", Type: authv1beta1.ControlPlaneIdentityType,
			AuthParams: fuzzAuthParams(), Namespace: ptr.To("liqo-tenant-cl-consumer"),
		},
		Status: authv1beta1.IdentityStatus{KubeconfigSecretRef: &corev1.LocalObjectReference{Name: "kubeconfig-controlplane-cl-provider"}},
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		roundTrip(t, data, func(o *authv1beta1.Identity) *metav1.ObjectMeta { return &o.ObjectMeta })
	})
}

package v1beta1_test

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/keys"
)

func TestYAMLRoundTrip(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		obj  runtime.Object
		into func() runtime.Object
	}{
		{name: "Tenant", obj: fullTenant(), into: func() runtime.Object { return &authv1beta1.Tenant{} }},
		{name: "Identity", obj: fullIdentity(), into: func() runtime.Object { return &authv1beta1.Identity{} }},
		{name: "ResourceSlice", obj: fullResourceSlice(), into: func() runtime.Object { return &authv1beta1.ResourceSlice{} }},
		{name: "TenantList", obj: &authv1beta1.TenantList{Items: []authv1beta1.Tenant{*fullTenant(), *fullTenant()}}, into: func() runtime.Object { return &authv1beta1.TenantList{} }},
		{name: "IdentityList", obj: &authv1beta1.IdentityList{Items: []authv1beta1.Identity{*fullIdentity()}}, into: func() runtime.Object { return &authv1beta1.IdentityList{} }},
		{name: "ResourceSliceList", obj: &authv1beta1.ResourceSliceList{Items: []authv1beta1.ResourceSlice{*fullResourceSlice()}}, into: func() runtime.Object { return &authv1beta1.ResourceSliceList{} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := yaml.Marshal(tt.obj)
			require.NoError(t, err)
			got := tt.into()
			require.NoError(t, yaml.UnmarshalStrict(b, got))
			if diff := cmp.Diff(tt.obj, got); diff != "" {
				t.Fatalf("round trip mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Liqo's field names, with []byte fields in base64 as Kubernetes encodes them.
const (
	wantTenantYAML = `
apiVersion: authentication.liqo.io/v1beta1
kind: Tenant
metadata:
  creationTimestamp: "2026-01-02T03:04:05Z"
  finalizers: [tenant.liqo.io/finalizer]
  labels: {liqo.io/remote-cluster-id: cl-consumer}
  name: cl-consumer
  namespace: liqo-tenant-cl-consumer
spec:
  clusterID: cl-consumer
  authzPolicy: TolerateNoHandshake
  publicKey: cHVibGljIGtleQ==
  csr: Y3Ny
  signature: c2lnbmF0dXJl
  proxyURL: http://consumer-proxy.example:3128
  tenantCondition: Cordoned
status:
  tenantNamespace: liqo-tenant-cl-consumer
  authParams:
    ca: Y2EgYnVuZGxl
    signedCRT: Y2VydGlmaWNhdGU=
    apiServer: https://provider.example:6443
    proxyURL: http://proxy.example:3128
    awsConfig:
      awsUserArn: arn:aws:iam::123456789012:user/liqo
      awsAccessKeyID: AKIAEXAMPLE
      awsSecretAccessKey: secret-access-key
      awsRegion: eu-west-1
      awsClusterName: provider
`
	wantIdentityYAML = `
apiVersion: authentication.liqo.io/v1beta1
kind: Identity
metadata:
  creationTimestamp: "2026-01-02T03:04:05Z"
  labels: {liqo.io/remote-cluster-id: cl-provider}
  name: controlplane-cl-provider
  namespace: liqo-tenant-cl-provider
spec:
  clusterID: cl-provider
  type: ControlPlane
  namespace: liqo-tenant-cl-consumer
  authParams:
    ca: Y2EgYnVuZGxl
    signedCRT: Y2VydGlmaWNhdGU=
    apiServer: https://provider.example:6443
    proxyURL: http://proxy.example:3128
    awsConfig:
      awsUserArn: arn:aws:iam::123456789012:user/liqo
      awsAccessKeyID: AKIAEXAMPLE
      awsSecretAccessKey: secret-access-key
      awsRegion: eu-west-1
      awsClusterName: provider
status:
  kubeconfigSecretRef:
    name: kubeconfig-controlplane-cl-provider
`
	wantResourceSliceYAML = `
apiVersion: authentication.liqo.io/v1beta1
kind: ResourceSlice
metadata:
  creationTimestamp: "2026-01-02T03:04:05Z"
  name: slice-a
  namespace: liqo-tenant-cl-provider
spec:
  consumerClusterID: cl-consumer
  providerClusterID: cl-provider
  resources: {cpu: "2", memory: 4Gi}
  class: default
  csr: c2xpY2UgY3Ny
status:
  conditions:
  - type: Authentication
    status: Accepted
    lastTransitionTime: "2026-01-02T03:04:05Z"
    reason: Accepted
    message: identity issued
  - type: Resources
    status: Denied
    lastTransitionTime: "2026-01-02T03:04:05Z"
    reason: NoCapacity
    message: not enough memory
  authParams:
    ca: Y2EgYnVuZGxl
    signedCRT: Y2VydGlmaWNhdGU=
    apiServer: https://provider.example:6443
    proxyURL: http://proxy.example:3128
    awsConfig:
      awsUserArn: arn:aws:iam::123456789012:user/liqo
      awsAccessKeyID: AKIAEXAMPLE
      awsSecretAccessKey: secret-access-key
      awsRegion: eu-west-1
      awsClusterName: provider
  resources: {cpu: 1500m}
  storageClasses: [{storageClassName: standard, default: true}]
  ingressClasses: [{ingressClassName: nginx, default: true}]
  loadBalancerClasses: [{loadBalancerClassName: metallb}]
  nodeLabels: {liqo.io/provider: cl-provider}
  nodeSelector: {kubernetes.io/os: linux}
`
)

func TestYAMLFieldNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		obj  runtime.Object
		want string
	}{
		{name: "Tenant", obj: fullTenant(), want: wantTenantYAML},
		{name: "Identity", obj: fullIdentity(), want: wantIdentityYAML},
		{name: "ResourceSlice", obj: fullResourceSlice(), want: wantResourceSliceYAML},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := yaml.Marshal(tt.obj)
			require.NoError(t, err)
			var got, want map[string]any
			require.NoError(t, yaml.Unmarshal(b, &got))
			require.NoError(t, yaml.Unmarshal([]byte(tt.want), &want))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("YAML mismatch (-want +got):\n%s\ngot YAML:\n%s", diff, b)
			}
		})
	}
}

func TestYAMLOmitsUnsetOptionalFields(t *testing.T) {
	t.Parallel()
	b, err := yaml.Marshal(&authv1beta1.Tenant{Spec: authv1beta1.TenantSpec{ClusterID: "cl-consumer"}})
	require.NoError(t, err)
	var got map[string]any
	require.NoError(t, yaml.Unmarshal(b, &got))
	require.Equal(t, map[string]any{"clusterID": "cl-consumer"}, got["spec"])
	require.Equal(t, map[string]any{}, got["status"])
}

const (
	// rfc8032Test1Public is the public key of RFC 8032, section 7.1, TEST 1.
	rfc8032Test1Public = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
	// signedNonce is the nonce text the testdata Tenants signed.
	signedNonce = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+Pw=="
)

func readTenant(t *testing.T, name string) *authv1beta1.Tenant {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	require.NoError(t, err)
	var tenant authv1beta1.Tenant
	require.NoError(t, yaml.UnmarshalStrict(b, &tenant), "every field has a Go counterpart")
	return &tenant
}

func TestLiqoTenantTestdata(t *testing.T) {
	t.Parallel()
	want, err := hex.DecodeString(rfc8032Test1Public)
	require.NoError(t, err)
	wantPub := ed25519.PublicKey(want)

	tests := []struct {
		file          string
		wantPublicKey []byte
		wantPolicy    authv1beta1.AuthzPolicy
		wantCondition authv1beta1.TenantCondition
		wantProxy     *string
		wantStatus    authv1beta1.TenantStatus
	}{
		{
			file:          "tenant-raw-ed25519.yaml",
			wantPublicKey: want,
		},
		{
			file:          "tenant-pem.yaml",
			wantPublicKey: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: mustPKIX(t, wantPub)}),
			wantPolicy:    authv1beta1.KeysExchange,
			wantCondition: authv1beta1.TenantConditionActive,
			wantProxy:     ptr.To("http://proxy.example:3128"),
			wantStatus: authv1beta1.TenantStatus{
				TenantNamespace: "liqo-tenant-cl-consumer",
				AuthParams: &authv1beta1.AuthParams{
					CA: []byte("ca bundle"), SignedCRT: []byte("certificate"), APIServer: "https://provider.example:6443",
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			tenant := readTenant(t, tt.file)
			require.Equal(t, "cl-consumer", tenant.Name)
			require.Equal(t, "liqo-tenant-cl-consumer", tenant.Namespace)
			require.Equal(t, map[string]string{"liqo.io/remote-cluster-id": "cl-consumer"}, tenant.Labels)
			require.Equal(t, "cl-consumer", tenant.Spec.ClusterID)
			require.Equal(t, tt.wantPublicKey, tenant.Spec.PublicKey)
			require.Equal(t, tt.wantPolicy, tenant.Spec.AuthzPolicy)
			require.Equal(t, tt.wantCondition, tenant.Spec.TenantCondition)
			require.Equal(t, tt.wantProxy, tenant.Spec.ProxyURL)
			if diff := cmp.Diff(tt.wantStatus, tenant.Status); diff != "" {
				t.Fatalf("status mismatch (-want +got):\n%s", diff)
			}

			// Both key forms name the same key, which signed the nonce text.
			pub, err := keys.ParsePublicKey(tenant.Spec.PublicKey)
			require.NoError(t, err)
			require.True(t, keys.Equal(wantPub, pub))
			require.NoError(t, keys.VerifyMessage(pub, []byte(signedNonce), tenant.Spec.Signature))

			block, rest := pem.Decode(tenant.Spec.CSR)
			require.NotNil(t, block)
			require.Empty(t, rest)
			req, err := x509.ParseCertificateRequest(block.Bytes)
			require.NoError(t, err)
			require.NoError(t, req.CheckSignature())
			require.Equal(t, "cl-consumer", req.Subject.CommonName)
			require.Equal(t, []string{"liqo.io"}, req.Subject.Organization)
			require.True(t, keys.Equal(wantPub, req.PublicKey))
		})
	}
}

func mustPKIX(t *testing.T, pub any) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(pub)
	require.NoError(t, err)
	return der
}

func TestDecodeTestdataWithScheme(t *testing.T) {
	t.Parallel()
	s := runtime.NewScheme()
	require.NoError(t, authv1beta1.AddToScheme(s))
	decoder := serializer.NewCodecFactory(s).UniversalDeserializer()
	for _, file := range []string{"tenant-raw-ed25519.yaml", "tenant-pem.yaml"} {
		t.Run(file, func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(filepath.Join("testdata", file))
			require.NoError(t, err)
			obj, gvk, err := decoder.Decode(b, nil, nil)
			require.NoError(t, err)
			require.Equal(t, authv1beta1.SchemeGroupVersion.WithKind("Tenant"), *gvk)
			tenant, ok := obj.(*authv1beta1.Tenant)
			require.True(t, ok, "decoded a %T", obj)
			if diff := cmp.Diff(readTenant(t, file).Spec, tenant.Spec); diff != "" {
				t.Fatalf("spec mismatch (-yaml +scheme):\n%s", diff)
			}
		})
	}
}

func TestDeepCopyIsIndependent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		make   func() runtime.Object
		mutate func(runtime.Object)
	}{
		{
			name: "Tenant",
			make: func() runtime.Object { return fullTenant() },
			mutate: func(o runtime.Object) {
				tn := o.(*authv1beta1.Tenant)
				tn.Labels["liqo.io/remote-cluster-id"] = "mutated"
				tn.Finalizers[0] = "mutated"
				tn.Spec.PublicKey[0] = 'X'
				tn.Spec.CSR[0] = 'X'
				tn.Spec.Signature[0] = 'X'
				*tn.Spec.ProxyURL = "mutated"
				tn.Status.AuthParams.CA[0] = 'X'
				tn.Status.AuthParams.SignedCRT[0] = 'X'
				*tn.Status.AuthParams.ProxyURL = "mutated"
				tn.Status.AuthParams.AwsConfig.AwsSecretAccessKey = "mutated"
			},
		},
		{
			name: "Identity",
			make: func() runtime.Object { return fullIdentity() },
			mutate: func(o runtime.Object) {
				id := o.(*authv1beta1.Identity)
				id.Labels["liqo.io/remote-cluster-id"] = "mutated"
				id.Spec.AuthParams.CA[0] = 'X'
				id.Spec.AuthParams.SignedCRT[0] = 'X'
				*id.Spec.AuthParams.ProxyURL = "mutated"
				id.Spec.AuthParams.AwsConfig.AwsRegion = "mutated"
				*id.Spec.Namespace = "mutated"
				id.Status.KubeconfigSecretRef.Name = "mutated"
			},
		},
		{
			name: "ResourceSlice",
			make: func() runtime.Object { return fullResourceSlice() },
			mutate: func(o runtime.Object) {
				rs := o.(*authv1beta1.ResourceSlice)
				*rs.Spec.ConsumerClusterID = "mutated"
				*rs.Spec.ProviderClusterID = "mutated"
				rs.Spec.Resources["cpu"] = rs.Spec.Resources["memory"]
				rs.Spec.CSR[0] = 'X'
				rs.Status.Conditions[0].Reason = "mutated"
				rs.Status.Conditions[1].LastTransitionTime.Time = rs.Status.Conditions[1].LastTransitionTime.AddDate(1, 0, 0)
				rs.Status.AuthParams.CA[0] = 'X'
				rs.Status.Resources["cpu"] = rs.Spec.Resources["memory"]
			},
		},
		{
			name: "TenantList",
			make: func() runtime.Object { return &authv1beta1.TenantList{Items: []authv1beta1.Tenant{*fullTenant()}} },
			mutate: func(o runtime.Object) {
				l := o.(*authv1beta1.TenantList)
				l.Items[0].Spec.PublicKey[0] = 'X'
				l.Items[0].Name = "mutated"
			},
		},
		{
			name: "IdentityList",
			make: func() runtime.Object {
				return &authv1beta1.IdentityList{Items: []authv1beta1.Identity{*fullIdentity()}}
			},
			mutate: func(o runtime.Object) {
				l := o.(*authv1beta1.IdentityList)
				*l.Items[0].Spec.Namespace = "mutated"
			},
		},
		{
			name: "ResourceSliceList",
			make: func() runtime.Object {
				return &authv1beta1.ResourceSliceList{Items: []authv1beta1.ResourceSlice{*fullResourceSlice()}}
			},
			mutate: func(o runtime.Object) {
				l := o.(*authv1beta1.ResourceSliceList)
				l.Items[0].Status.Conditions[0].Message = "mutated"
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			orig, want := tt.make(), tt.make()
			cp := orig.DeepCopyObject()
			require.IsType(t, orig, cp)
			require.Empty(t, cmp.Diff(orig, cp), "a copy starts equal")

			tt.mutate(cp)
			require.NotEmpty(t, cmp.Diff(want, cp), "the mutation changed the copy")
			if diff := cmp.Diff(want, orig); diff != "" {
				t.Fatalf("mutating the copy changed the original (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeepCopyNil(t *testing.T) {
	t.Parallel()
	require.Nil(t, (*authv1beta1.Tenant)(nil).DeepCopy())
	require.Nil(t, (*authv1beta1.Identity)(nil).DeepCopy())
	require.Nil(t, (*authv1beta1.ResourceSlice)(nil).DeepCopy())
	require.Nil(t, (*authv1beta1.AuthParams)(nil).DeepCopy())
}

package v1beta1_test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
)

// created is a timestamp that survives a round trip through YAML (whole
// seconds, UTC).
var created = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func fullAuthParams() *authv1beta1.AuthParams {
	return &authv1beta1.AuthParams{
		CA:        []byte("ca bundle"),
		SignedCRT: []byte("certificate"),
		APIServer: "https://provider.example:6443",
		ProxyURL:  ptr.To("http://proxy.example:3128"),
		AwsConfig: &authv1beta1.AwsConfig{
			AwsUserArn:         "arn:aws:iam::123456789012:user/liqo",
			AwsAccessKeyID:     "AKIAEXAMPLE",
			AwsSecretAccessKey: "secret-access-key",
			AwsRegion:          "eu-west-1",
			AwsClusterName:     "provider",
		},
	}
}

// fullTenant returns a Tenant with every field set.
func fullTenant() *authv1beta1.Tenant {
	return &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.liqo.io/v1beta1", Kind: "Tenant"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              "cl-consumer",
			Namespace:         "liqo-tenant-cl-consumer",
			Labels:            map[string]string{"liqo.io/remote-cluster-id": "cl-consumer"},
			Finalizers:        []string{"tenant.liqo.io/finalizer"},
			CreationTimestamp: created,
		},
		Spec: authv1beta1.TenantSpec{
			ClusterID:       "cl-consumer",
			AuthzPolicy:     authv1beta1.TolerateNoHandshake,
			PublicKey:       []byte("public key"),
			CSR:             []byte("csr"),
			Signature:       []byte("signature"),
			ProxyURL:        ptr.To("http://consumer-proxy.example:3128"),
			TenantCondition: authv1beta1.TenantConditionCordoned,
		},
		Status: authv1beta1.TenantStatus{
			AuthParams:      fullAuthParams(),
			TenantNamespace: "liqo-tenant-cl-consumer",
		},
	}
}

// fullIdentity returns an Identity with every field set.
func fullIdentity() *authv1beta1.Identity {
	return &authv1beta1.Identity{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.liqo.io/v1beta1", Kind: "Identity"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              "controlplane-cl-provider",
			Namespace:         "liqo-tenant-cl-provider",
			Labels:            map[string]string{"liqo.io/remote-cluster-id": "cl-provider"},
			CreationTimestamp: created,
		},
		Spec: authv1beta1.IdentitySpec{
			ClusterID:  "cl-provider",
			Type:       authv1beta1.ControlPlaneIdentityType,
			AuthParams: *fullAuthParams(),
			Namespace:  ptr.To("liqo-tenant-cl-consumer"),
		},
		Status: authv1beta1.IdentityStatus{
			KubeconfigSecretRef: &corev1.LocalObjectReference{Name: "kubeconfig-controlplane-cl-provider"},
		},
	}
}

// fullResourceSlice returns a ResourceSlice with every field set.
func fullResourceSlice() *authv1beta1.ResourceSlice {
	return &authv1beta1.ResourceSlice{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.liqo.io/v1beta1", Kind: "ResourceSlice"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              "slice-a",
			Namespace:         "liqo-tenant-cl-provider",
			CreationTimestamp: created,
		},
		Spec: authv1beta1.ResourceSliceSpec{
			ConsumerClusterID: ptr.To("cl-consumer"),
			ProviderClusterID: ptr.To("cl-provider"),
			Resources: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("2"),
				corev1.ResourceMemory: resource.MustParse("4Gi"),
			},
			Class: authv1beta1.DefaultResourceSliceClass,
			CSR:   []byte("slice csr"),
		},
		Status: authv1beta1.ResourceSliceStatus{
			Conditions: []authv1beta1.ResourceSliceCondition{
				{
					Type:               authv1beta1.ResourceSliceConditionTypeAuthentication,
					Status:             authv1beta1.ResourceSliceConditionAccepted,
					LastTransitionTime: created,
					Reason:             "Accepted",
					Message:            "identity issued",
				},
				{
					Type:               authv1beta1.ResourceSliceConditionTypeResources,
					Status:             authv1beta1.ResourceSliceConditionDenied,
					LastTransitionTime: created,
					Reason:             "NoCapacity",
					Message:            "not enough memory",
				},
			},
			AuthParams: fullAuthParams(),
			Resources: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1500m"),
			},
			StorageClasses:      []authv1beta1.StorageType{{StorageClassName: "standard", Default: true}},
			IngressClasses:      []authv1beta1.IngressType{{IngressClassName: "nginx", Default: true}},
			LoadBalancerClasses: []authv1beta1.LoadBalancerType{{LoadBalancerClassName: "metallb"}},
			NodeLabels:          map[string]string{"liqo.io/provider": "cl-provider"},
			NodeSelector:        map[string]string{"kubernetes.io/os": "linux"},
		},
	}
}

// fullRenew returns a Renew with every field set.
func fullRenew() *authv1beta1.Renew {
	return &authv1beta1.Renew{
		TypeMeta: metav1.TypeMeta{APIVersion: "authentication.liqo.io/v1beta1", Kind: "Renew"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              "renew-a",
			Namespace:         "liqo-tenant-cl-consumer",
			CreationTimestamp: created,
		},
		Spec: authv1beta1.RenewSpec{
			ConsumerClusterID: "cl-consumer",
			PublicKey:         []byte("public key"),
			CSR:               []byte("renew csr"),
			IdentityType:      authv1beta1.ResourceSliceIdentityType,
			ResourceSliceRef:  &corev1.LocalObjectReference{Name: "slice-a"},
		},
		Status: authv1beta1.RenewStatus{AuthParams: fullAuthParams()},
	}
}

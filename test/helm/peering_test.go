package helm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestPeeringWritersValues: peeringWriters.serviceAccounts is the list the
// admission policy kubepact-peering-writers reads, in the ConfigMap its
// binding names, in the release's namespace; the policies admit the
// controller of that namespace and guard the list there. An empty list
// admits no ServiceAccount (the ConfigMap stays, so the policy still
// admits peering admins); peeringWriters.enabled=false removes all of it.
func TestPeeringWritersValues(t *testing.T) {
	ch := loadChart(t, chartDir)
	const ns = "platform-auth"
	for _, tt := range []struct {
		name string
		list []any
		want string
	}{
		{"shipped", nil, "argocd/argocd-application-controller,flux-system/kustomize-controller"},
		{"one of ours", []any{"ci/deployer"}, "ci/deployer"},
		{"none", []any{}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var vals map[string]any
			if tt.list != nil {
				vals = values("peeringWriters.serviceAccounts", tt.list)
			}
			rel, err := renderIn(ch, ns, vals)
			require.NoError(t, err)
			objects := manifestObjects(t, rel.Manifest)
			cm := find(objects, "ConfigMap", "kubepact-peering-writers")
			require.NotNil(t, cm)
			assert.Equal(t, ns, cm.GetNamespace())
			got, found, err := unstructured.NestedString(cm.Object, "data", "serviceAccounts")
			require.NoError(t, err)
			require.True(t, found, "data.serviceAccounts")
			assert.Equal(t, tt.want, got)

			binding := find(objects, "ValidatingAdmissionPolicyBinding", "kubepact-peering-writers")
			require.NotNil(t, binding)
			ref, _, err := unstructured.NestedStringMap(binding.Object, "spec", "paramRef")
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"name": cm.GetName(), "namespace": ns, "parameterNotFoundAction": "Deny"}, ref)

			user := "'system:serviceaccount:' + '" + ns + "' + ':' + 'kubepact-controller'"
			vap := find(objects, "ValidatingAdmissionPolicy", "kubepact-peering-writers")
			require.NotNil(t, vap)
			assert.Equal(t, "request.userInfo.username != "+user, matchCondition(t, vap, "controller-service-account"))
			list := find(objects, "ValidatingAdmissionPolicy", "kubepact-peering-writers-list")
			require.NotNil(t, list)
			assert.True(t, strings.HasPrefix(matchCondition(t, list, "writers-list"), "request.namespace == '"+ns+"' &&"))
			records := find(objects, "ValidatingAdmissionPolicy", "kubepact-enrolment-records")
			require.NotNil(t, records)
			assert.True(t, strings.HasPrefix(matchCondition(t, records, "enrolment-record"), "request.namespace == '"+ns+"' &&"))
			assert.Equal(t, "request.userInfo.username != "+user, matchCondition(t, records, "controller-service-account"))
		})
	}

	for _, u := range render(t, ch, values("peeringWriters.enabled", false)) {
		assert.False(t, strings.HasPrefix(u.GetName(), "kubepact-peering-"), "%s with peeringWriters.enabled=false", objectKey(u))
	}
}

// TestEnrolmentValues: off by default; on, the endpoint runs the
// controller's image (a digest and pull policy included) with the
// replicas, --rate, --burst and resources of the values, with the
// controller's pull Secrets, in the release's namespace, as its own
// ServiceAccount bound there.
func TestEnrolmentValues(t *testing.T) {
	ch := loadChart(t, chartDir)
	for _, u := range render(t, ch, nil) {
		assert.NotEqual(t, "kubepact-enrolment", u.GetName(), "%s by default", objectKey(u))
	}

	const (
		ns     = "platform-auth"
		digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	)
	rel, err := renderIn(ch, ns, values(
		"enrolment.enabled", true, "enrolment.replicas", 3, "enrolment.rate", 0.5, "enrolment.burst", 4,
		"enrolment.resources", map[string]any{"requests": map[string]any{"cpu": "20m", "memory": "48Mi"}, "limits": map[string]any{"memory": "96Mi"}},
		"image.repository", "registry.example/kubepact-controller", "image.digest", digest, "image.pullPolicy", "IfNotPresent",
		"imagePullSecrets", []any{map[string]any{"name": "registry-creds"}},
	))
	require.NoError(t, err)
	objects := manifestObjects(t, rel.Manifest)
	u := find(objects, "Deployment", "kubepact-enrolment")
	require.NotNil(t, u)
	var d appsv1.Deployment
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d))
	assert.Equal(t, ns, d.Namespace)
	assert.Equal(t, int32(3), *d.Spec.Replicas)
	pod := d.Spec.Template.Spec
	assert.Equal(t, "kubepact-enrolment", pod.ServiceAccountName)
	assert.Equal(t, []corev1.LocalObjectReference{{Name: "registry-creds"}}, pod.ImagePullSecrets)
	c := pod.Containers[0]
	assert.Equal(t, "registry.example/kubepact-controller@"+digest, c.Image)
	assert.Equal(t, corev1.PullIfNotPresent, c.ImagePullPolicy)
	assert.Contains(t, c.Args, "--rate=0.5")
	assert.Contains(t, c.Args, "--burst=4")
	assert.Equal(t, "20m", c.Resources.Requests.Cpu().String())
	assert.Equal(t, "96Mi", c.Resources.Limits.Memory().String())

	binding := find(objects, "ClusterRoleBinding", "kubepact-enrolment")
	require.NotNil(t, binding)
	subjects, _, err := unstructured.NestedSlice(binding.Object, "subjects")
	require.NoError(t, err)
	assert.Equal(t, []any{map[string]any{"kind": "ServiceAccount", "name": "kubepact-enrolment", "namespace": ns}}, subjects)
	for _, kind := range []string{"ServiceAccount", "Service", "PodDisruptionBudget"} {
		o := find(objects, kind, "kubepact-enrolment")
		require.NotNil(t, o, kind)
		assert.Equal(t, ns, o.GetNamespace(), kind)
	}
}

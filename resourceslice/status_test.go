package resourceslice_test

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/resourceslice"
)

func list(pairs ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(pairs); i += 2 {
		out[corev1.ResourceName(pairs[i])] = resource.MustParse(pairs[i+1])
	}
	return out
}

// equalLists compares quantities by value, not by their cached strings.
func equalLists(t *testing.T, want, got corev1.ResourceList) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for name, q := range want {
		g, ok := got[name]
		if !ok || g.Cmp(q) != 0 {
			t.Fatalf("%s: got %v, want %v (all: %v)", name, got[name], q, got)
		}
	}
}

func TestResources(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		spec, defaults corev1.ResourceList
		want           corev1.ResourceList
	}{
		{"nothing", nil, nil, corev1.ResourceList{}},
		{"defaults only", nil, resourceslice.DefaultResources(),
			list("cpu", "4", "memory", "8Gi", "pods", "110", "ephemeral-storage", "20Gi")},
		{"spec wins", list("cpu", "2", "memory", "1Gi"), resourceslice.DefaultResources(),
			list("cpu", "2", "memory", "1Gi", "pods", "110", "ephemeral-storage", "20Gi")},
		{"spec beyond the defaults", list("nvidia.com/gpu", "1"), list("cpu", "1"),
			list("cpu", "1", "nvidia.com/gpu", "1")},
		{"spec without defaults", list("cpu", "500m"), nil, list("cpu", "500m")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			specBefore, defaultsBefore := tc.spec.DeepCopy(), tc.defaults.DeepCopy()
			got := resourceslice.Resources(tc.spec, tc.defaults)
			equalLists(t, tc.want, got)
			equalLists(t, specBefore, tc.spec)
			equalLists(t, defaultsBefore, tc.defaults)
		})
	}
}

func TestCap(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		granted, limits corev1.ResourceList
		want            corev1.ResourceList
	}{
		{"no limits", list("cpu", "4", "pods", "110"), nil, list("cpu", "4", "pods", "110")},
		{"lowered", list("cpu", "4", "memory", "8Gi"), list("cpu", "2", "memory", "16Gi"), list("cpu", "2", "memory", "8Gi")},
		{"limits add nothing", list("cpu", "4"), list("memory", "1Gi"), list("cpu", "4")},
		{"equal", list("cpu", "4"), list("cpu", "4000m"), list("cpu", "4")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			equalLists(t, tc.want, resourceslice.Cap(tc.granted, tc.limits))
		})
	}
}

func class(name string, annotatedDefault bool) storagev1.StorageClass {
	c := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if annotatedDefault {
		c.Annotations = map[string]string{resourceslice.DefaultStorageClassAnnotation: "true"}
	}
	return c
}

func TestStorageClasses(t *testing.T) {
	t.Parallel()
	classes := []storagev1.StorageClass{class("standard", true), class("fast", false), class("archive", false)}
	for _, tc := range []struct {
		name    string
		classes []storagev1.StorageClass
		local   string
		want    []authv1beta1.StorageType
	}{
		{"none", nil, "", []authv1beta1.StorageType{}},
		{"annotated default, sorted", classes, "",
			[]authv1beta1.StorageType{{StorageClassName: "archive"}, {StorageClassName: "fast"}, {StorageClassName: "standard", Default: true}}},
		{"local class wins over the annotation", classes, "fast",
			[]authv1beta1.StorageType{{StorageClassName: "archive"}, {StorageClassName: "fast", Default: true}, {StorageClassName: "standard"}}},
		{"local class missing: no default", classes, "gone",
			[]authv1beta1.StorageType{{StorageClassName: "archive"}, {StorageClassName: "fast"}, {StorageClassName: "standard"}}},
		{"annotation not true", []storagev1.StorageClass{{ObjectMeta: metav1.ObjectMeta{Name: "x",
			Annotations: map[string]string{resourceslice.DefaultStorageClassAnnotation: "false"}}}}, "",
			[]authv1beta1.StorageType{{StorageClassName: "x"}}},
		{"two annotated: both default, as Liqo", []storagev1.StorageClass{class("b", true), class("a", true)}, "",
			[]authv1beta1.StorageType{{StorageClassName: "a", Default: true}, {StorageClassName: "b", Default: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, resourceslice.StorageClasses(tc.classes, tc.local)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestGrantAndWithdraw(t *testing.T) {
	t.Parallel()
	offer := &resourceslice.Offer{
		IngressClasses:      []authv1beta1.IngressType{{IngressClassName: "nginx", Default: true}},
		LoadBalancerClasses: []authv1beta1.LoadBalancerType{{LoadBalancerClassName: "metallb"}},
		NodeLabels:          map[string]string{"topology.kubernetes.io/zone": "eu-1"},
	}
	status := &authv1beta1.ResourceSliceStatus{NodeSelector: map[string]string{"stale": "x"}}
	storage := []authv1beta1.StorageType{{StorageClassName: "standard", Default: true}}
	resourceslice.Grant(status, list("cpu", "2"), storage, offer)
	want := &authv1beta1.ResourceSliceStatus{
		Resources:           list("cpu", "2"),
		StorageClasses:      storage,
		IngressClasses:      offer.IngressClasses,
		LoadBalancerClasses: offer.LoadBalancerClasses,
		NodeLabels:          offer.NodeLabels,
	}
	if diff := cmp.Diff(want, status); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	status.NodeLabels["mutated"] = "yes"
	status.IngressClasses[0].Default = false
	if _, ok := offer.NodeLabels["mutated"]; ok || !offer.IngressClasses[0].Default {
		t.Fatal("Grant shares memory with the offer")
	}

	resourceslice.Grant(status, nil, nil, nil)
	if diff := cmp.Diff(&authv1beta1.ResourceSliceStatus{}, status); diff != "" {
		t.Fatalf("an empty grant: (-want +got):\n%s", diff)
	}
	resourceslice.Grant(status, list("cpu", "2"), storage, offer)
	resourceslice.Withdraw(status)
	if diff := cmp.Diff(&authv1beta1.ResourceSliceStatus{}, status); diff != "" {
		t.Fatalf("withdrawn: (-want +got):\n%s", diff)
	}
}

func ExampleResources() {
	spec := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	granted := resourceslice.Resources(spec, resourceslice.DefaultResources())
	granted = resourceslice.Cap(granted, corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")})
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
		q := granted[name]
		fmt.Printf("%s=%s\n", name, q.String())
	}
	// Output:
	// cpu=2
	// memory=4Gi
	// pods=110
	// ephemeral-storage=20Gi
}

func ExampleStorageClasses() {
	standard := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard",
		Annotations: map[string]string{resourceslice.DefaultStorageClassAnnotation: "true"}}}
	fast := storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}}
	for _, c := range resourceslice.StorageClasses([]storagev1.StorageClass{standard, fast}, "") {
		fmt.Println(c.StorageClassName, c.Default)
	}
	// Output:
	// fast false
	// standard true
}

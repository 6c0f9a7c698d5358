package kube

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
)

// FieldManager is the field manager of every server-side apply kubepact
// makes. The API server records, per field, which managers set it: kubepact
// owns the labels, annotations, finalizers, owner references and data it
// applies, and a later apply that no longer names one of them removes it
// unless another manager set it too. What others set on a shared object
// (Liqo's labels on its ClusterRole, a user's annotation on a Tenant, Helm's
// finalizer) is never touched.
const FieldManager = "kubepact"

// applyOptions returns the options of an apply; force takes over the fields
// another manager set to other values instead of failing with a conflict.
func applyOptions(force bool) metav1.ApplyOptions {
	return metav1.ApplyOptions{FieldManager: FieldManager, Force: force}
}

// pruneServerFields removes from u what the API server sets, so that an
// apply of u claims only what kubepact means to own.
func pruneServerFields(u *unstructured.Unstructured) {
	for _, f := range []string{"creationTimestamp", "resourceVersion", "uid", "generation", "managedFields", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
}

// ownerReferences returns refs as apply configurations.
func ownerReferences(refs []metav1.OwnerReference) []*metav1ac.OwnerReferenceApplyConfiguration {
	out := make([]*metav1ac.OwnerReferenceApplyConfiguration, len(refs))
	for i, o := range refs {
		out[i] = metav1ac.OwnerReference().WithAPIVersion(o.APIVersion).WithKind(o.Kind).WithName(o.Name).WithUID(o.UID)
		if o.Controller != nil {
			out[i].WithController(*o.Controller)
		}
		if o.BlockOwnerDeletion != nil {
			out[i].WithBlockOwnerDeletion(*o.BlockOwnerDeletion)
		}
	}
	return out
}

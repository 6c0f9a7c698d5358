// Package v1alpha1 holds kubepact's own peering.kubepact.io/v1alpha1 API:
// the objects with which two clusters peer from Git, each side committing
// only public material.
//
//   - AuthorizedConsumer, on a provider: this consumer ID, with this
//     cluster key (or these two, while a rotation overlaps), may peer, and
//     this is the enrolment request it made.
//   - TrustedProvider, on a consumer: peer with this provider, reached at
//     this enrolment endpoint, whose API server's CA and enrolment key are
//     these.
//
// Neither holds a secret: each is plain YAML that kubectl apply, Argo CD or
// Flux can apply, in any order. Their status follows kstatus (Ready,
// Reconciling, Stalled, observedGeneration).
//
// The group is kubepact's, never authentication.liqo.io: a Liqo cluster
// neither reads nor writes these objects.
//
// +kubebuilder:object:generate=true
// +groupName=peering.kubepact.io
package v1alpha1

// Package controller holds the manifests that install kubepact-controller
// (kubectl apply -k config/controller): its namespace, ServiceAccount, RBAC,
// admission policies, Deployment and PodDisruptionBudget; config/network-policy
// and config/components/priority-class are opt-in.
//
// The Deployment runs ghcr.io/kubepact/kubepact-controller at the tag in the
// repository's VERSION file, which the Dockerfile and hack/image.sh build and
// label, and every object carries app.kubernetes.io/version with it. A test
// fails when any of them disagree, or when a manifest names a :latest image.
package controller

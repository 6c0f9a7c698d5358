// Package v1beta1 holds the authentication.liqo.io/v1beta1 API types that
// kubepact reads and writes: Tenant (provider side), Identity (consumer side)
// and ResourceSlice. Field names, enums and defaults match Liqo's, so objects
// written by either project read back in the other.
//
// The types are registered in a caller-owned scheme with AddToScheme; nothing
// here touches client-go's global scheme. CRD manifests generated from these
// types live in config/crd at the repository root.
//
// +kubebuilder:object:generate=true
// +groupName=authentication.liqo.io
package v1beta1

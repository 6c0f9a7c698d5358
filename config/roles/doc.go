// Package roles holds the manifests of the ClusterRoles consumers are bound
// to (rbac.PeerRoles): liqo-remote-controlplane, liqo-virtual-kubelet-remote
// and liqo-virtual-kubelet-remote-clusterwide, with the names, rules and
// labels of Liqo v1.2's chart. They are generated from package rbac, and a
// test fails when the two differ; regenerate them with
//
//	go test ./config/roles -update
//
// The default install (config/) includes them. Next to Liqo they are
// Liqo's: apply config/controller alone, which neither ships nor writes
// them.
package roles

// Package memory composes kubepact in one process: NewCluster returns one
// cluster's worth of package fake's in-memory ports, sharing a local CA,
// ready to be a provider (Cluster.ProviderPorts) or a consumer
// (Cluster.ConsumerPorts). It is the in-memory counterpart of package
// wire's Connect, for tests and examples.
//
// Its limits are those of package fake (fake's doc lists them). A Cluster
// as a consumer confirms Identities online once it reaches a provider
// (Cluster.Reach), through its fake.Reviewer.
//
// # Concurrency
//
// A Cluster is safe for concurrent use, as every fake is.
package memory

// Package wire composes kubepact over a real cluster: it builds the ports
// of a provider.Provider and a consumer.Consumer from package kube's
// adapters and hands back the Provider and the Consumer themselves.
//
// Connect is the way in: from a cluster's *rest.Config it builds every
// port of a provider and of a consumer, the Endpoint consumers reach the
// cluster at, and the clients under them, and checks once that the cluster
// serves the authentication.liqo.io CRDs. NewProviderPorts and
// NewConsumerPorts build the ports of one role without that check.
// EndpointFromConfig and EndpointFromClusterInfo read how consumers reach
// an API server.
//
// The in-memory counterpart of Connect is package wire/memory, and
// package wire/intercept injects failures into the ports of either.
//
// # Layers
//
// wire sits above the provider and consumer (the root package) and below
// the controllers: package kube and package fake are leaves that import no
// package composing them, and only wire and its subpackages join them to
// the root package. TestLayers (internal/layers) checks that order.
//
// # Behaviour
//
//   - Connect makes one clientset, one controller-runtime client, one HTTP
//     client and one rate limiter (DefaultQPS and DefaultBurst unless the
//     config or ConnectOptions set others; Connect's doc has the
//     arithmetic) shared by every port of the Cluster. It asks discovery,
//     in one request, for authentication.liqo.io/v1beta1 and returns a
//     *CRDNotServedError (errors.Is ErrCRDNotServed) naming each CRD not
//     served, before anything is signed or bound.
//   - The Endpoint comes from ConnectOptions.Endpoint or the config
//     (EndpointFromConfig); a config without one still makes a consumer,
//     and Cluster.Provider returns why (kube.ErrNoServer, ErrNotHTTPS,
//     ErrNoCA).
//   - Cluster.Provider and Cluster.Consumer take the cluster ID the
//     cluster records (kube.RecordedClusterID); an ID given that differs is
//     a *ClusterIDMismatchError, and none at all, without
//     ConnectOptions.Install, ErrNoClusterID.
//
// # Security
//
// No error quotes a rest.Config's credentials. Connect's check needs only
// discovery, which system:discovery grants every authenticated user; what
// the ports need is in package kube's doc. ConnectOptions.Install needs a
// cluster administrator's rights.
//
// # Concurrency
//
// A Cluster is safe for concurrent use, and one Cluster may be both a
// provider and a consumer.
package wire

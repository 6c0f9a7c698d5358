package main

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	buildversion "github.com/kubepact/kubepact/internal/version"
)

// version is the controller's version when set at link time, which wins
// over every other source:
//
//	go build -ldflags "-X main.version=$(cat VERSION)" ./cmd/kubepact-controller
//
// hack/image.sh and the Dockerfile do: they build the release's image.
// Without it, the controller reports the module version go install
// recorded when it is a release, else VERSION with -dev and the revision
// built, as the kubepact CLI does (package internal/version gives the
// order).
var version string

// Version returns the controller's version: what --version prints and
// kubepact_build_info's version label.
func Version() string { return buildversion.Get(version) }

// versionedLeases gives the leader election's Lease the version of the
// controller that writes it: every Lease it creates or updates carries
// buildversion.LeaseAnnotation (the version) and LeaseHolderAnnotation (the
// lock's identity), set in the same write as spec.holderIdentity. The
// leader election writes the Lease only to acquire, renew or release it, so
// the annotations are always the holder's own, written by the leader that
// runs (not by a replica that waits, nor from the Deployment's labels), with
// no write of their own. Reads pass through.
type versionedLeases struct {
	coordinationv1client.LeasesGetter
	identity, version string
}

func (v versionedLeases) Leases(namespace string) coordinationv1client.LeaseInterface {
	return versionedLeaseClient{LeaseInterface: v.LeasesGetter.Leases(namespace), v: v}
}

type versionedLeaseClient struct {
	coordinationv1client.LeaseInterface
	v versionedLeases
}

func (c versionedLeaseClient) Create(ctx context.Context, l *coordinationv1.Lease, opts metav1.CreateOptions) (*coordinationv1.Lease, error) {
	return c.LeaseInterface.Create(ctx, c.v.annotate(l), opts)
}

func (c versionedLeaseClient) Update(ctx context.Context, l *coordinationv1.Lease, opts metav1.UpdateOptions) (*coordinationv1.Lease, error) {
	return c.LeaseInterface.Update(ctx, c.v.annotate(l), opts)
}

// annotate returns a copy of l with the version annotations set.
func (v versionedLeases) annotate(l *coordinationv1.Lease) *coordinationv1.Lease {
	l = l.DeepCopy()
	if l.Annotations == nil {
		l.Annotations = map[string]string{}
	}
	l.Annotations[buildversion.LeaseAnnotation] = v.version
	l.Annotations[buildversion.LeaseHolderAnnotation] = v.identity
	return l
}

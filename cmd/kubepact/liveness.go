package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// livenessInterval is how often a wait reads the Leases of the
// controllers it waits on: a Lease that runs out ends the wait within this
// interval (and the second the Date header is truncated to).
const livenessInterval = 2 * time.Second

// errControllerGone reports a controller that stopped while the CLI waited
// for it.
var errControllerGone = errors.New("the controller stopped")

// ControllerGoneError says which controller stopped during a wait, and how
// the CLI knows: its Lease ran out by the API server's clock (Age since its
// last renewal, longer than its Duration), was released or deleted, or its
// Deployment has no ready replica. It wraps errControllerGone.
type ControllerGoneError struct {
	Role  string // "provider"
	Where string // "Lease kube-system/kubepact-controller.kubepact.io"
	// Holder is the identity that held the Lease last.
	Holder string
	// Age is how long before the API server's time the Lease was last
	// renewed, and Duration how long a renewal lasts; both zero when it
	// was released, deleted, or the controller was judged by its
	// Deployment.
	Age, Duration time.Duration
	// How says what happened: "ran out", "was released", "was deleted",
	// "has no ready replica".
	How string
}

func (e *ControllerGoneError) Error() string {
	holder := ""
	if e.Holder != "" {
		holder = " (holder " + e.Holder + ")"
	}
	if e.Age > 0 {
		return fmt.Sprintf("%s cluster: %v during the wait: %s%s was last renewed %s ago by the API server's clock, and a renewal lasts %s",
			e.Role, errControllerGone, e.Where, holder, e.Age.Round(time.Second), e.Duration)
	}
	return fmt.Sprintf("%s cluster: %v during the wait: %s%s %s", e.Role, errControllerGone, e.Where, holder, e.How)
}

func (e *ControllerGoneError) Unwrap() error { return errControllerGone }

// leaseDuration is how long a renewal of l lasts; 15 seconds, client-go's
// default, when it does not say.
func leaseDuration(l *coordinationv1.Lease) time.Duration {
	if d := l.Spec.LeaseDurationSeconds; d != nil && *d > 0 {
		return time.Duration(*d) * time.Second
	}
	return 15 * time.Second
}

// held reports whether a Lease has a holder that renewed it within its
// duration, at now: the API server's time (readLease), since the renewal
// time is the one the holder's cluster keeps, not the CLI's.
func held(l *coordinationv1.Lease, now time.Time) bool {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil {
		return false
	}
	return now.Sub(s.RenewTime.Time) <= leaseDuration(l)
}

// readLease reads the Lease namespace/name and the API server's time of
// the answer (its Date header), so that the Lease is judged by the
// server's clock, not by the CLI's. A client that does not speak HTTP (a
// fake) is judged by the local clock. Its errors are the API server's
// (apierrors.IsNotFound, IsForbidden) or the transport's.
func readLease(ctx context.Context, client kubernetes.Interface, namespace, name string) (*coordinationv1.Lease, time.Time, error) {
	rc, ok := client.CoordinationV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		l, err := client.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
		return l, time.Now(), err
	}
	u := rc.Get().Namespace(namespace).Resource("leases").Name(name).URL()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, time.Time{}, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := rc.Client.Do(req)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading Lease %s/%s: %w", namespace, name, err)
	}
	defer resp.Body.Close()
	now, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("reading Lease %s/%s: the API server's answer has no Date: %w", namespace, name, err)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, now, fmt.Errorf("reading Lease %s/%s: %w", namespace, name, err)
	}
	if resp.StatusCode != http.StatusOK {
		var status metav1.Status
		if json.Unmarshal(body, &status) == nil && status.Kind == "Status" {
			return nil, now, apierrors.FromObject(&status)
		}
		return nil, now, fmt.Errorf("reading Lease %s/%s: %s", namespace, name, resp.Status)
	}
	var l coordinationv1.Lease
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, now, fmt.Errorf("reading Lease %s/%s: %w", namespace, name, err)
	}
	return &l, now, nil
}

// watched is a controller a wait depends on, on its cluster.
type watched struct {
	cl  *cluster
	ctl *controllerInfo
}

// watchControllers returns a context that ends, with a
// *ControllerGoneError as its cause, when one of the controllers stops
// while the CLI waits on it: every livenessInterval it reads each
// controller's Lease (controllerInfo.lease) and judges it by the API
// server's time. A Lease ran out, or was released, only when, besides,
// it was not written since the previous reading: a holder whose clock
// runs behind the API server's still renews it, and another replica takes
// over a released Lease within a second. A controller found by its Deployment alone is
// judged by its ready replicas, given a Lease's default duration to come
// back. A Lease or Deployment it cannot read is judged again at the next
// tick.
func watchControllers(ctx context.Context, ctls ...watched) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	for _, w := range ctls {
		if w.ctl == nil || (w.ctl.lease == nil && w.ctl.deployment == nil) {
			continue
		}
		go func() {
			t := time.NewTicker(livenessInterval)
			defer t.Stop()
			var s livenessState
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				if gone := w.check(ctx, &s); gone != nil {
					cancel(gone)
					return
				}
			}
		}()
	}
	return ctx, func() { cancel(nil) }
}

// livenessState is what a controller's watch remembers between two
// readings.
type livenessState struct {
	// leaseVersion is the resourceVersion of the Lease last read.
	leaseVersion string
	// unready is since when, by the local monotonic clock, the
	// Deployment has had no ready replica; zero while it has one.
	unready time.Time
}

// check returns the *ControllerGoneError of a stopped controller, nil
// while it runs or when it cannot tell.
func (w watched) check(ctx context.Context, s *livenessState) *ControllerGoneError {
	gone := &ControllerGoneError{Role: w.cl.role, Where: w.ctl.where}
	if ref := w.ctl.lease; ref != nil {
		gone.Where = "Lease " + ref.Namespace + "/" + ref.Name
		l, now, err := readLease(ctx, w.cl.client, ref.Namespace, ref.Name)
		switch {
		case apierrors.IsNotFound(err):
			gone.How = "was deleted"
			return gone
		case err != nil:
			return nil
		}
		written := l.ResourceVersion != s.leaseVersion
		s.leaseVersion = l.ResourceVersion
		if held(l, now) {
			return nil
		}
		if l.Spec.HolderIdentity != nil {
			gone.Holder = *l.Spec.HolderIdentity
		}
		if written {
			// Not written since the previous reading, if it ran out: a
			// replica may take over a released Lease within a second.
			return nil
		}
		if gone.Holder == "" || l.Spec.RenewTime == nil {
			gone.How = "was released"
			return gone
		}
		gone.Age, gone.Duration, gone.How = now.Sub(l.Spec.RenewTime.Time), leaseDuration(l), "ran out"
		return gone
	}
	ref := w.ctl.deployment
	d, err := w.cl.client.AppsV1().Deployments(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		gone.How = "was deleted"
		return gone
	case err != nil:
		return nil
	case d.Status.ReadyReplicas > 0:
		s.unready = time.Time{}
		return nil
	case s.unready.IsZero():
		s.unready = time.Now()
		return nil
	case time.Since(s.unready) < 15*time.Second:
		return nil
	}
	gone.How = "has had no ready replica for 15s"
	return gone
}

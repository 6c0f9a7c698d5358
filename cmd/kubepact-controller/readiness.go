package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/kubepact/kubepact/controllers"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
)

// providerCheck names the readiness check of the provider role: /readyz
// fails while it does, and /readyz/provider answers why.
const providerCheck = "provider"

// Timing of the provider's readiness check.
const (
	// readinessInterval is how often the peer ClusterRoles are looked up,
	// in a watch of each (watchedRoles), so that roles installed or
	// deleted show within it; a look-up makes no request.
	readinessInterval = 5 * time.Second
	// eventReminder is how often a Warning Event of a problem that lasts
	// is recorded again: more often than an events.k8s.io series ends (6
	// minutes without an occurrence), so that the Event stays listed with
	// its count beyond the API server's Event TTL (an hour by default).
	eventReminder = 5 * time.Minute
)

// Reasons of the Events the readiness check records on the controller's
// Pod, besides contract.ReasonAPIServerURLUnknown and
// contract.ReasonPeerRoleMissing.
const (
	// reasonProviderReady: the problems recorded before are gone, and the
	// provider role accepts Tenants again (Normal).
	reasonProviderReady = "ProviderReady"
	// reasonPeerRoleUnknown: a peer ClusterRole could not be read before
	// any read of it succeeded (its error says why: the controller's RBAC,
	// the API server).
	reasonPeerRoleUnknown = "PeerRoleUnknown"
)

// eventAction is the action of the readiness check's Events.
const eventAction = "CheckReadiness"

var (
	// errProviderNotReady reports a provider role that cannot accept
	// Tenants and ResourceSlices; the readiness check's error wraps it
	// and each problem's.
	errProviderNotReady = errors.New("the provider role cannot accept Tenants or ResourceSlices")
	// errNotChecked reports a readiness check that has not run yet.
	errNotChecked = errors.New("the peer ClusterRoles are not read yet")
)

// problem is one reason the provider role cannot do its job, with the
// reason of the Event it is recorded with.
type problem struct {
	reason string
	err    error
}

// key tells problems apart: the same reason about another role, or with
// another error, is another problem.
func (p problem) key() string { return p.reason + "\x00" + p.err.Error() }

// providerReadiness is the readiness of the provider role: it is ready
// when it knows the URL consumers reach this cluster's API server at and
// the peer ClusterRoles it binds are installed, as a Tenant and a
// ResourceSlice need. Without them the reconcilers run and refuse each
// Tenant with an Event, which no one sees before a peer tries; a pod that
// is not ready is seen at install time, by kubectl rollout status, kubectl
// get pods and unready-pod alerts. Readiness gates nothing inside: the
// replicas keep their lease, issue nonces and serve the consumer role.
//
// It runs on every replica, leader or not (NeedLeaderElection is false),
// so a standby reports what the leader does, and nothing changes when the
// lease moves. Each new problem is logged once and recorded as a Warning
// Event on the controller's Pod, and again every eventReminder while it
// lasts; the end of the last one is logged and recorded as a Normal Event.
// A read of a role that fails keeps the verdict of the last read that
// succeeded: one unanswered request does not flip readiness.
type providerReadiness struct {
	// noEndpoint, when not nil, is why the provider has no API server URL.
	// It is read at start and lasts until a restart.
	noEndpoint error
	// roles are the peer ClusterRoles the provider binds; rbac reads them.
	roles []string
	rbac  rbac.RoleReader
	// events records on pod; pod nil records nothing (outside a pod).
	events events.EventRecorder
	pod    *corev1.ObjectReference
	log    logr.Logger
	clock  clock.WithTicker

	// verdicts is each role's problem after its last read that
	// succeeded (nil: installed), or the error of its first read while
	// none has; recorded is when each current problem was last recorded
	// as an Event. Only check uses them.
	verdicts map[string]*problem
	recorded map[string]time.Time
	reported bool // a problem was logged: its end is logged too

	mu  sync.Mutex
	err error // what Check answers
}

// newProviderReadiness returns the readiness of a provider configured with
// pc. a reads the peer ClusterRoles roles; rec records Events on pod (nil:
// none); namespace is where the controller's Deployment is ("" when
// unknown), named in the fix.
func newProviderReadiness(pc controllers.ProviderConfig, a rbac.RoleReader, roles []string, rec events.EventRecorder,
	pod *corev1.ObjectReference, namespace string, log logr.Logger, clk clock.WithTicker) *providerReadiness {
	r := &providerReadiness{roles: roles, rbac: a, events: rec, pod: pod, log: log, clock: clk,
		verdicts: map[string]*problem{}, recorded: map[string]time.Time{}, err: errNotChecked}
	if pc.Endpoint.Server == "" {
		r.noEndpoint = noEndpointError(namespace)
	}
	return r
}

// noEndpointError says how to give the controller the API server URL.
func noEndpointError(namespace string) error {
	edit := "kubectl edit deployment kubepact-controller"
	if namespace != "" {
		edit = "kubectl -n " + namespace + " edit deployment kubepact-controller"
	}
	return fmt.Errorf("%w: --api-server-url is not set and kube-public/cluster-info is missing: "+
		"add --api-server-url=https://HOST:PORT, the address peers reach this API server at, to the controller's args (%s), "+
		"or publish kube-public/cluster-info and restart the controller; a cluster that only consumes runs --roles=consumer",
		provider.ErrNoEndpoint, edit)
}

// Check is the healthz.Checker of the provider role: nil when it can
// accept Tenants, else an error wrapping errProviderNotReady and each
// problem's error (provider.ErrNoEndpoint, a *rbac.MissingRoleError, the
// API's error for a role never read), or errNotChecked before the first
// check.
func (r *providerReadiness) Check(*http.Request) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// NeedLeaderElection is false: every replica checks, the standby too.
func (r *providerReadiness) NeedLeaderElection() bool { return false }

// Start checks at once, then every readinessInterval, until ctx ends.
func (r *providerReadiness) Start(ctx context.Context) error {
	t := r.clock.NewTicker(readinessInterval)
	defer t.Stop()
	for {
		r.check(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// check reads the peer roles, sets what Check answers, and logs and
// records what changed.
func (r *providerReadiness) check(ctx context.Context) {
	var problems []problem
	if r.noEndpoint != nil {
		problems = append(problems, problem{reason: contract.ReasonAPIServerURLUnknown, err: r.noEndpoint})
	}
	// A read that hangs is a read that failed: it keeps the last verdict.
	read, cancel := context.WithTimeout(ctx, readinessInterval)
	defer cancel()
	unread := false
	for _, name := range r.roles {
		err := rbac.RequireRoles(read, r.rbac, name)
		var missing *rbac.MissingRoleError
		switch {
		case err == nil:
			r.verdicts[name] = nil
		case errors.As(err, &missing):
			r.verdicts[name] = &problem{reason: contract.ReasonPeerRoleMissing, err: err}
		case errors.Is(err, errRolesNotSynced):
			// The watch has not listed the role yet: no verdict, and
			// nothing to report about it.
			if _, known := r.verdicts[name]; !known {
				unread = true
			}
		case ctx.Err() != nil:
			return // stopping: nothing learnt
		default:
			if _, known := r.verdicts[name]; !known {
				r.verdicts[name] = &problem{reason: reasonPeerRoleUnknown, err: err}
			}
			r.log.V(1).Info("reading a peer ClusterRole failed; the last verdict stands", "clusterRole", name, "error", err.Error())
		}
		if p := r.verdicts[name]; p != nil {
			problems = append(problems, *p)
		}
	}

	if unread && len(problems) == 0 {
		return // not checked yet: Check keeps answering errNotChecked
	}
	var err error
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = p.err
		}
		err = fmt.Errorf("%w: %w", errProviderNotReady, errors.Join(errs...))
	}
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()

	now := r.clock.Now()
	current := make(map[string]bool, len(problems))
	for _, p := range problems {
		k := p.key()
		current[k] = true
		last, seen := r.recorded[k]
		if !seen {
			r.log.Info("not ready: "+errProviderNotReady.Error(), "reason", p.reason, "error", p.err.Error())
			r.reported = true
		}
		if !seen || now.Sub(last) >= eventReminder {
			r.event(corev1.EventTypeWarning, p.reason, p.err.Error())
			r.recorded[k] = now
		}
	}
	for k := range r.recorded {
		if !current[k] {
			delete(r.recorded, k)
		}
	}
	if len(problems) == 0 && r.reported {
		r.reported = false
		const msg = "ready: the provider role accepts Tenants and ResourceSlices again"
		r.log.Info(msg, "reason", reasonProviderReady)
		r.event(corev1.EventTypeNormal, reasonProviderReady, msg)
	}
}

// event records an Event on the controller's Pod, if it is known.
func (r *providerReadiness) event(eventtype, reason, note string) {
	if r.pod == nil || r.events == nil {
		return
	}
	r.events.Eventf(r.pod, nil, eventtype, reason, eventAction, "%s", note)
}

// podReference is the controller's own Pod, which the Deployment passes
// through the downward API (POD_NAME, POD_NAMESPACE, POD_UID: kubectl
// describe pod lists the Events of its UID); nil outside a pod.
func podReference() *corev1.ObjectReference {
	name, ns := os.Getenv("POD_NAME"), podNamespace()
	if name == "" || ns == "" {
		return nil
	}
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: types.UID(os.Getenv("POD_UID"))}
}

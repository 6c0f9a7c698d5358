package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/controllers/contract"
	"github.com/kubepact/kubepact/internal/objwatch"
	"github.com/kubepact/kubepact/kube"
	"github.com/kubepact/kubepact/rbac"
)

// Reasons of the Warning Events with which Liqo v1.2's authentication
// controllers (pkg/liqo-controller-manager/authentication) refuse an object
// and do not retry it. Liqo's NonceNotFound is kubepact's
// contract.ReasonNonceNotFound.
const (
	// liqoInvalidCSR: the Tenant's CSR is not the ControlPlane CSR of the
	// key that signed the nonce.
	liqoInvalidCSR = "InvalidCSR"
	// liqoSignatureVerificationFailed: the Tenant's signature does not
	// verify over the nonce with the key it carries.
	liqoSignatureVerificationFailed = "SignatureVerificationFailed"
	// liqoMissingLabels, liqoMissingClusterID: the nonce Secret lacks the
	// labels naming its consumer.
	liqoMissingLabels    = "MissingLabels"
	liqoMissingClusterID = "MissingClusterID"
	// liqoMissingRemoteClusterID: the signed-nonce Secret lacks the label
	// naming its provider.
	liqoMissingRemoteClusterID = "MissingRemoteClusterID"
	// liqoWrongNamespace: a nonce or signed-nonce Secret outside the
	// tenant namespace of its peer.
	liqoWrongNamespace = "WrongNamespace"
)

// liqoRefusals are the reasons of the Warning Events with which Liqo's
// controllers refuse an object for good: waiting for it is pointless until
// it changes. kubepact's own are contract.Final.
var liqoRefusals = map[string]bool{
	liqoInvalidCSR: true, liqoSignatureVerificationFailed: true, liqoMissingLabels: true,
	liqoMissingClusterID: true, liqoMissingRemoteClusterID: true, liqoWrongNamespace: true,
}

// isRefusal reports whether reason is the reason of a Warning Event with
// which kubepact's controllers (contract.Final) or Liqo's refuse an object
// for good.
func isRefusal(reason string) bool { return contract.Final(reason) || liqoRefusals[reason] }

// errRefused reports an object a controller refused for good.
var errRefused = errors.New("refused by the controller")

// RefusedError says which controller refused which object, and why: the
// reason and note of its Warning Event (which carry no secret), whole. It
// wraps errRefused.
type RefusedError struct {
	Role, Kind, Namespace, Name, Reason, Note string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("%s %s/%s %v of the %s cluster: %s: %s", e.Kind, e.Namespace, e.Name, errRefused, e.Role, e.Reason, e.Note)
}

func (e *RefusedError) Unwrap() error { return errRefused }

// errBlocked reports a wait that only an administrator can end.
var errBlocked = errors.New("blocked until an administrator acts")

// BlockedError says which controller cannot do its step for which object,
// and why: the reason and the whole note of its Warning Event (which carry
// no secret, and name the fix). It wraps errBlocked.
type BlockedError struct {
	Role, Kind, Namespace, Name, Reason, Note string
}

func (e *BlockedError) Error() string {
	return fmt.Sprintf("the %s cluster's controller cannot go on with %s %s/%s, %v: %s: %s",
		e.Role, e.Kind, e.Namespace, e.Name, errBlocked, e.Reason, e.Note)
}

func (e *BlockedError) Unwrap() error { return errBlocked }

// TimeoutError reports a wait that --timeout ended: what the CLI waited
// for, the controller it waited on, and the newest Event about the object,
// which tells what that controller last did. It wraps
// context.DeadlineExceeded.
type TimeoutError struct {
	Role, What, Namespace, Name string
	// Controller is where the controller was found ("Lease
	// kube-system/kubepact-controller.kubepact.io"); empty when unknown.
	Controller string
	// Last is the newest Event about the object since the CLI wrote it
	// (or before, while it still tells about the object as it is), nil
	// when there is none.
	Last *eventsv1.Event
	// LastWarning is the newest Warning among those Events, nil when there
	// is none: a Warning of a reason that is neither final nor blocking (a
	// retried failure) ends no wait, but says what went wrong, and a later
	// Normal Event does not hide it.
	LastWarning *eventsv1.Event
	// CSRPending tells that the controller waits for a
	// CertificateSigningRequest to be signed: its last Event is
	// CertificatePending, or a CSR of the consumer is neither signed nor
	// refused.
	CSRPending bool
}

func (e *TimeoutError) Error() string {
	last := "none"
	if e.Last != nil {
		last = eventLine(e.Last)
	}
	msg := fmt.Sprintf("%s cluster: waiting for %s (%s/%s): %v; last Event: %s", e.Role, e.What, e.Namespace, e.Name, context.DeadlineExceeded, last)
	if e.LastWarning != nil && e.LastWarning != e.Last {
		msg += "; last Warning: " + eventLine(e.LastWarning)
	}
	return msg
}

func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

var (
	secretsResource    = corev1.SchemeGroupVersion.WithResource("secrets")
	tenantsResource    = authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.TenantResource)
	identitiesResource = authv1beta1.SchemeGroupVersion.WithResource(authv1beta1.IdentityResource)
)

func kindOf(r schema.GroupVersionResource) string {
	switch r {
	case tenantsResource:
		return authv1beta1.TenantKind
	case identitiesResource:
		return authv1beta1.IdentityKind
	}
	return "Secret"
}

// objectState is what tells whether an object changed: its incarnation,
// its generation (0 for kinds without one, such as Secrets) and its
// resourceVersion.
type objectState struct {
	exists          bool
	uid             types.UID
	generation      int64
	resourceVersion string
}

func stateOf(m metav1.Object) objectState {
	return objectState{exists: true, uid: m.GetUID(), generation: m.GetGeneration(), resourceVersion: m.GetResourceVersion()}
}

// unchanged reports whether the object after is the one before, as a
// controller judges it: the same incarnation and the same generation, or,
// for a kind without one, the same resourceVersion.
func unchanged(before, after objectState) bool {
	if !before.exists || !after.exists || before.uid != after.uid {
		return false
	}
	if before.generation != 0 || after.generation != 0 {
		return before.generation == after.generation
	}
	return before.resourceVersion == after.resourceVersion
}

// waitEventTime is when an Event was last seen: its series' last
// observation, else its event time, else its deprecated timestamps, else
// its creation.
func waitEventTime(ev *eventsv1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	case !ev.DeprecatedLastTimestamp.IsZero():
		return ev.DeprecatedLastTimestamp.Time
	}
	return ev.CreationTimestamp.Time
}

// newestCurrent returns the newest of the Events listed before the CLI
// wrote the object (earlier) that still tell about the object as it is
// (after), nil when none does: only when the object is unchanged since
// they were listed (before), and only those about its incarnation. An
// object the CLI (or anyone) changed since is judged anew by its
// controller, whose Events come then.
func newestCurrent(earlier []eventsv1.Event, before, after objectState) *eventsv1.Event {
	if !unchanged(before, after) {
		return nil
	}
	var newest *eventsv1.Event
	for i := range earlier {
		ev := &earlier[i]
		if ev.Regarding.UID != "" && ev.Regarding.UID != after.uid {
			continue
		}
		if newest == nil || !waitEventTime(ev).Before(waitEventTime(newest)) {
			newest = ev
		}
	}
	return newest
}

// observedAgain reports whether cur, an update of the Event prev listed
// before the wait, is a new observation about the object as it is (after,
// nil while unknown; before as listed). Its last observation must have
// moved on: a recorder also rewrites an Event to close or refresh its
// series. A legacy Event (core/v1, as Liqo records them) is aggregated
// whatever the object's version, so a new observation is about the
// object as it is; an events.k8s.io series regards the one version its
// Event names, so it tells about the object only while unchanged.
func observedAgain(prev, cur *eventsv1.Event, before objectState, after *objectState) bool {
	moved := waitEventTime(cur).After(waitEventTime(prev)) || cur.DeprecatedCount > prev.DeprecatedCount
	switch {
	case !moved:
		return false
	case cur.Series == nil:
		return true
	}
	return after != nil && unchanged(before, *after)
}

// stopError returns the error that ends a wait for an Event about the
// object, nil when the Event does not end it: a Warning of a refusal
// (*RefusedError) or of a blocker (*BlockedError).
func stopError(role string, ev *eventsv1.Event) error {
	if ev == nil || ev.Type != corev1.EventTypeWarning {
		return nil
	}
	r := ev.Regarding
	switch {
	case isRefusal(ev.Reason):
		return &RefusedError{Role: role, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Reason: ev.Reason, Note: ev.Note}
	case contract.Blocking(ev.Reason):
		return &BlockedError{Role: role, Kind: r.Kind, Namespace: r.Namespace, Name: r.Name, Reason: ev.Reason, Note: ev.Note}
	}
	return nil
}

// waiter is one wait of the declarative flow: for a controller to answer
// about one object. It is started before the CLI writes the object
// (startWait), so that no Event of the controller comes before it (a
// controller may refuse within milliseconds), and it ends at the first
// answer that needs a person: a refusal or a blocker, recorded since it
// started, or before it while it still tells about the object as it is
// (newestCurrent). A controller whose Lease runs out (watchControllers)
// or a signal ends it too, through ctx's cause.
type waiter struct {
	cl                    *cluster
	resource              schema.GroupVersionResource
	kind, namespace, name string
	what                  string
	controller            string
	before                objectState
	earlier               []eventsv1.Event
	earlierByName         map[string]*eventsv1.Event
	ctx                   context.Context
	cancel                context.CancelCauseFunc
	mu                    sync.Mutex
	last                  *eventsv1.Event // the newest Event seen, for a timeout's message
	lastWarning           *eventsv1.Event // the newest Warning seen, for a timeout's message
	after                 *objectState    // the object as first read after the write, nil before
}

// startWait reads the object and its Events, then watches for new Events
// about it. what says what the CLI waits for ("the provider's controller
// to accept the Tenant"). Events it may not read only make it wait for the
// object alone.
func (c *clusters) startWait(ctx context.Context, cl *cluster, resource schema.GroupVersionResource, namespace, name, what string) *waiter {
	w := &waiter{cl: cl, resource: resource, kind: kindOf(resource), namespace: namespace, name: name, what: what}
	if ctl := c.controllerOf(cl); ctl != nil {
		w.controller = ctl.where
	}
	w.ctx, w.cancel = context.WithCancelCause(ctx)
	if u, err := cl.dynamic.Resource(resource).Namespace(namespace).Get(ctx, name, metav1.GetOptions{}); err == nil {
		w.before = stateOf(u)
	}
	events := cl.client.EventsV1().Events(namespace)
	opts := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("regarding.name", name).String()}
	list, err := events.List(ctx, opts)
	if apierrors.IsBadRequest(err) {
		// An API server that cannot select Events by the object they
		// regard: every Event of the namespace, filtered here.
		opts.FieldSelector = ""
		list, err = events.List(ctx, opts)
	}
	if err != nil {
		return w
	}
	for _, ev := range list.Items {
		if w.about(&ev) {
			w.earlier = append(w.earlier, ev)
		}
	}
	w.earlierByName = map[string]*eventsv1.Event{}
	for i := range w.earlier {
		w.earlierByName[w.earlier[i].Name] = &w.earlier[i]
	}
	opts.ResourceVersion = list.ResourceVersion
	go w.watchEvents(opts)
	return w
}

// about reports whether ev regards the object waited for.
func (w *waiter) about(ev *eventsv1.Event) bool {
	return ev.Regarding.Kind == w.kind && ev.Regarding.Name == w.name && ev.Regarding.Namespace == w.namespace
}

// watchEvents ends the wait with the error of the first new Event about
// the object that needs a person, and remembers the newest. An Event about
// another incarnation of the object is no answer, nor an update of an
// Event listed before the wait that is no new observation (observedAgain).
func (w *waiter) watchEvents(opts metav1.ListOptions) {
	ww, err := w.cl.client.EventsV1().Events(w.namespace).Watch(w.ctx, opts)
	if err != nil {
		return
	}
	defer ww.Stop()
	for ev := range ww.ResultChan() {
		e, ok := ev.Object.(*eventsv1.Event)
		if !ok || ev.Type == watch.Deleted || !w.about(e) {
			continue
		}
		w.mu.Lock()
		answer := true
		if w.after != nil && e.Regarding.UID != "" && e.Regarding.UID != w.after.uid {
			answer = false
		}
		if prev := w.earlierByName[e.Name]; prev != nil && ev.Type == watch.Modified && !observedAgain(prev, e, w.before, w.after) {
			answer = false
		}
		if answer {
			w.last = e
			if e.Type == corev1.EventTypeWarning {
				w.lastWarning = e
			}
		}
		w.mu.Unlock()
		if !answer {
			continue
		}
		if err := stopError(w.cl.role, e); err != nil {
			w.cancel(err)
			return
		}
	}
}

// stop releases the wait's watches.
func (w *waiter) stop() { w.cancel(nil) }

// until waits, saying so (c.progress), until cond holds for the object.
// It returns the *RefusedError or *BlockedError of an Event that needs a
// person, the cause with which ctx ended (a *ControllerGoneError, an
// interruption), or, when ctx's deadline passed, a *TimeoutError.
func (w *waiter) until(c *clusters, cond func(*unstructured.Unstructured) (bool, error)) error {
	done := c.progress.wait(w.what)
	defer done()
	first := true
	err := objwatch.Until(w.ctx, w.cl.dynamic.Resource(w.resource).Namespace(w.namespace), w.name, func(u *unstructured.Unstructured) (bool, error) {
		if first {
			first = false
			ev := newestCurrent(w.earlier, w.before, stateOf(u))
			w.mu.Lock()
			after := stateOf(u)
			w.after = &after
			if w.last == nil {
				w.last = ev
			}
			if w.lastWarning == nil && ev != nil && ev.Type == corev1.EventTypeWarning {
				w.lastWarning = ev
			}
			w.mu.Unlock()
			if err := stopError(w.cl.role, ev); err != nil && w.stillBlocked(err) {
				return false, err
			}
		}
		return cond(u)
	})
	if err == nil {
		return nil
	}
	if stop := waitStop(err, w.ctx); stop != nil {
		return stop
	}
	if errors.Is(context.Cause(w.ctx), errInterrupted) {
		return &InterruptedError{Waiting: w.what}
	}
	if w.ctx.Err() != nil || errors.Is(err, watchtools.ErrWatchClosed) {
		w.mu.Lock()
		last, lastWarning := w.last, w.lastWarning
		w.mu.Unlock()
		t := &TimeoutError{Role: w.cl.role, What: w.what, Namespace: w.namespace, Name: w.name, Controller: w.controller, Last: last, LastWarning: lastWarning}
		t.CSRPending = last != nil && last.Reason == contract.ReasonCertificatePending
		if !t.CSRPending && w.resource == tenantsResource {
			t.CSRPending = c.csrPending(w.name)
		}
		return t
	}
	return fmt.Errorf("%s cluster: waiting for %s (%s/%s): %w", w.cl.role, w.what, w.namespace, w.name, err)
}

// stillBlocked reports whether the error of an Event recorded before the
// wait still holds. A refusal does, the object being unchanged; so does
// a blocker that only a controller's restart lifts (APIServerURLUnknown:
// the restarted controller judges every Tenant again). A missing peer
// ClusterRole may have been installed since, and the controller retries
// on its own schedule: PeerRoleMissing holds only while a peer role is
// still missing, or the CLI cannot tell.
func (w *waiter) stillBlocked(err error) bool {
	var blocked *BlockedError
	if !errors.As(err, &blocked) || blocked.Reason != contract.ReasonPeerRoleMissing {
		return true
	}
	return rbac.RequireRoles(w.ctx, kube.NewRBAC(w.cl.client), rbac.PeerRoleNames()...) != nil
}

// waitStop returns the error that ended a wait by itself: the
// *RefusedError or *BlockedError of an Event, from err or as ctx's cause,
// or a *ControllerGoneError; nil for any other end.
func waitStop(err error, ctx context.Context) error {
	for _, e := range []error{err, context.Cause(ctx)} {
		var refused *RefusedError
		var blocked *BlockedError
		var gone *ControllerGoneError
		switch {
		case errors.As(e, &refused):
			return refused
		case errors.As(e, &blocked):
			return blocked
		case errors.As(e, &gone):
			return gone
		}
	}
	return nil
}

// csrPending reports whether the provider holds a CertificateSigningRequest
// of consumerID that is neither signed nor refused. It reads with a
// context of its own, the wait's having ended; a CLI that may not list
// CSRs reports none.
func (c *clusters) csrPending(consumerID string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list, err := c.provider.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{
		LabelSelector: clusterid.Label + "=" + consumerID,
	})
	if err != nil {
		return false
	}
	return slices.ContainsFunc(list.Items, func(r certificatesv1.CertificateSigningRequest) bool {
		if len(r.Status.Certificate) > 0 {
			return false
		}
		for _, cond := range r.Status.Conditions {
			if cond.Type == certificatesv1.CertificateDenied || cond.Type == certificatesv1.CertificateFailed {
				return false
			}
		}
		return true
	})
}

// waitGone waits, saying so, for the object namespace/name of resource to
// be deleted, watching from the version it read, so that no deletion is
// missed. A controller whose Lease runs out or a signal ends it, as until.
func (c *clusters) waitGone(ctx context.Context, cl *cluster, resource schema.GroupVersionResource, namespace, name, what string) error {
	done := c.progress.wait(what)
	defer done()
	ri := cl.dynamic.Resource(resource).Namespace(namespace)
	fail := func(err error) error {
		if stop := waitStop(err, ctx); stop != nil {
			return stop
		}
		if errors.Is(context.Cause(ctx), errInterrupted) {
			return &InterruptedError{Waiting: what}
		}
		if ctx.Err() != nil {
			t := &TimeoutError{Role: cl.role, What: what, Namespace: namespace, Name: name}
			if ctl := c.controllerOf(cl); ctl != nil {
				t.Controller = ctl.where
			}
			return t
		}
		return fmt.Errorf("%s cluster: waiting for %s: %w", cl.role, what, err)
	}
	for {
		u, err := ri.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fail(err)
		}
		w, err := ri.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: u.GetResourceVersion(),
		})
		if err != nil {
			return fail(err)
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Deleted {
				w.Stop()
				return nil
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
	}
}

// eventLine is an Event as the CLI quotes it: "Warning Reason: note", the
// note whole, on one line.
func eventLine(ev *eventsv1.Event) string {
	return ev.Type + " " + ev.Reason + ": " + strings.ReplaceAll(ev.Note, "\n", " ")
}

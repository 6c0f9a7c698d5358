package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	peeringv1alpha1 "github.com/kubepact/kubepact/apis/peering/v1alpha1"
	"github.com/kubepact/kubepact/csr"
)

// The schema of what status -o json|yaml prints. Within this apiVersion,
// fields are only ever added; removing or renaming one makes a new
// apiVersion.
const (
	statusAPIVersion = "cli.kubepact.io/v1"
	statusKind       = "Status"
)

// statusReport is what status -o json|yaml prints: the cluster's peers.
type statusReport struct {
	APIVersion string `json:"apiVersion"` // cli.kubepact.io/v1
	Kind       string `json:"kind"`       // Status
	// Peers are the other clusters, never null: the consumers of this
	// cluster (a Tenant here, or an AuthorizedConsumer committed in Git)
	// first, then its providers (a ControlPlane Identity here, or a
	// TrustedProvider committed in Git), each in the order of their
	// cluster IDs.
	Peers []peerStatus `json:"peers"`
	// Unreadable are the kinds of peering.kubepact.io the user may not
	// list, absent when none: the peers committed in Git they would show
	// are missing, and no peer's gitops can say whether one is committed.
	Unreadable []unreadableKind `json:"unreadable,omitempty"`
}

// peerStatus is one peer of the cluster.
type peerStatus struct {
	// ClusterID is the peer's cluster ID.
	ClusterID string `json:"clusterID"`
	// Role is the peer's role: "consumer" (it consumes this cluster, which
	// holds its Tenant or an AuthorizedConsumer for it) or "provider" (this
	// cluster consumes it, and holds an Identity or a TrustedProvider for
	// it).
	Role string `json:"role"`
	// Object is this cluster's record of the peering: the Tenant or the
	// Identity; for a peer only committed in Git so far, with neither,
	// its AuthorizedConsumer or TrustedProvider (cluster-scoped: no
	// namespace).
	Object objectRef `json:"object"`
	// Condition is, for a consumer, Pending until its Tenant is accepted,
	// then the Tenant's condition (Active, Cordoned or Drained); for a
	// provider, Pending until the Identity's kubeconfig Secret is written,
	// then Ready. A peer with no Tenant or Identity yet is Pending.
	Condition string `json:"condition"`
	// CertificateExpires is the NotAfter of the certificate the peering
	// holds, absent when it holds none.
	CertificateExpires *metav1.Time `json:"certificateExpires,omitempty"`
	// CertificateInvalid is true when the certificate held cannot be
	// parsed.
	CertificateInvalid bool `json:"certificateInvalid,omitempty"`
	// Warning is the newest Warning Event about the object that no later
	// Normal Event about it superseded, absent when there is none.
	Warning *eventSummary `json:"warning,omitempty"`
	// GitOps is the object committed in Git for the peer, absent when
	// none is: for a consumer its AuthorizedConsumer, for a provider its
	// TrustedProvider, of the same cluster ID.
	GitOps *gitopsStatus `json:"gitops,omitempty"`
}

// gitopsStatus is a peering object of peering.kubepact.io and what the
// controller made of it, from its kstatus conditions.
type gitopsStatus struct {
	// Kind is AuthorizedConsumer or TrustedProvider; Name is the object's
	// name (cluster-scoped), the peer's cluster ID.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// State is the condition that holds: Stalled, Reconciling or Ready,
	// looked at in that order, the first that is True; else NotReady when
	// Ready is False (a revoked consumer), and Unknown when the controller
	// has set no condition (not running, or not yet there).
	State string `json:"state"`
	// Reason and Message are those of the condition State names (of Ready
	// for NotReady), absent when it has none.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// UpToDate is true when the controller has observed the object's
	// current spec (status.observedGeneration is metadata.generation);
	// while false, State, Reason and Message are about an earlier one, or
	// about none.
	UpToDate bool `json:"upToDate"`
}

// unreadableKind is a kind the user may not list.
type unreadableKind struct {
	// Kind is AuthorizedConsumer or TrustedProvider.
	Kind string `json:"kind"`
	// Reason is the API server's reason for refusing: Forbidden.
	Reason string `json:"reason"`
	// Message is the API server's message, whole.
	Message string `json:"message"`
}

// objectRef names an object of the cluster.
type objectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// eventSummary is an Event, whole.
type eventSummary struct {
	Reason string `json:"reason"`
	// Message is the Event's note, whole.
	Message string `json:"message"`
	// Time is when the Event was last seen.
	Time metav1.Time `json:"time"`
}

// statusMessageWidth is where the table cuts a warning's message; -o
// json|yaml prints it whole.
const statusMessageWidth = 80

func statusCommand(f *flags) runFunc {
	cf := localFlags(f, "local")
	timeout := timeoutFlag(f)
	out := newOutput("")
	f.Var(out, "output", "output format: json, yaml, jsonpath=TEMPLATE, go-template=TEMPLATE (default a table); the schema is apiVersion "+
		statusAPIVersion+", kind "+statusKind)
	f.alias("o", "output")
	return func(ctx context.Context, e *env, args []string) error {
		if err := noArgs(args); err != nil {
			return err
		}
		if strings.HasPrefix(out.format, "name") {
			return usagef("-o %s: status prints no object names; use json, yaml, jsonpath=TEMPLATE or go-template=TEMPLATE", out.format)
		}
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		cl, err := cf.connect("local")
		if err != nil {
			return err
		}
		report, err := readStatus(ctx, cl)
		if err != nil {
			return err
		}
		// What could not be read goes to standard error, whatever the
		// output: -o json says it too, in unreadable.
		for _, u := range report.Unreadable {
			fmt.Fprintf(e.stderr, " WARN  the %ss committed in Git are not shown: %s\n", u.Kind, u.Message)
		}
		if out.format != "" {
			return printStatus(e.stdout, out, report)
		}
		if len(report.Peers) == 0 {
			fmt.Fprintln(e.stderr, "No peers.")
			return nil
		}
		rows := make([][]any, 0, len(report.Peers))
		for _, p := range report.Peers {
			rows = append(rows, statusRow(p))
		}
		return printTable(e.stdout, []string{"PEER", "ROLE", "CONDITION", "GITOPS", "CERTIFICATE EXPIRES", "LAST ERROR"}, rows)
	}
}

// statusRow is a peer's row of the status table. The GITOPS column is "-"
// for a peer not committed in Git, else the committed object's state, with
// its reason unless Ready, marked "(stale)" while the controller has not
// observed its current spec.
func statusRow(p peerStatus) []any {
	expires := "-"
	switch {
	case p.CertificateInvalid:
		expires = "invalid"
	case p.CertificateExpires != nil:
		expires = p.CertificateExpires.UTC().Format(time.RFC3339)
	}
	gitops := "-"
	if g := p.GitOps; g != nil {
		gitops = g.State
		if g.State != peeringv1alpha1.ConditionReady && g.Reason != "" {
			gitops += ": " + g.Reason
		}
		if !g.UpToDate {
			gitops += " (stale)"
		}
	}
	warning := "-"
	if w := p.Warning; w != nil {
		note := strings.ReplaceAll(w.Message, "\n", " ")
		if len(note) > statusMessageWidth {
			note = note[:statusMessageWidth] + "…"
		}
		warning = w.Reason + ": " + note
	}
	return []any{p.ClusterID, p.Role, p.Condition, gitops, expires, warning}
}

// readStatus reads the cluster's peers: its Tenants and ControlPlane
// Identities, the Events about them, and the AuthorizedConsumers and
// TrustedProviders committed in Git. A cluster that does not serve the
// kinds has no peers of that kind; a user who may not list the
// peering.kubepact.io kinds gets the rest, with report.Unreadable saying
// what is missing.
func readStatus(ctx context.Context, cl *cluster) (*statusReport, error) {
	report := &statusReport{APIVersion: statusAPIVersion, Kind: statusKind, Peers: []peerStatus{}}
	events := eventCache{cl: cl, byNamespace: map[string][]eventsv1.Event{}}

	var tenants authv1beta1.TenantList
	if err := cl.typed.List(ctx, &tenants); err != nil && !isMissingKind(err) {
		return nil, fmt.Errorf("listing Tenants: %w", err)
	}
	var consumers []peerStatus
	for _, t := range tenants.Items {
		obj := objectRef{Kind: authv1beta1.TenantKind, Namespace: t.Namespace, Name: t.Name}
		p := peerStatus{ClusterID: t.Spec.ClusterID, Role: consumerRole, Condition: tenantCondition(&t), Object: obj}
		if t.Status.AuthParams != nil {
			p.CertificateExpires, p.CertificateInvalid = notAfter(t.Status.AuthParams.SignedCRT)
		}
		var err error
		if p.Warning, err = events.currentWarning(ctx, obj, t.UID); err != nil {
			return nil, err
		}
		consumers = append(consumers, p)
	}

	var ids authv1beta1.IdentityList
	if err := cl.typed.List(ctx, &ids); err != nil && !isMissingKind(err) {
		return nil, fmt.Errorf("listing Identities: %w", err)
	}
	var providers []peerStatus
	for _, id := range ids.Items {
		if id.Spec.Type != authv1beta1.ControlPlaneIdentityType {
			continue
		}
		obj := objectRef{Kind: authv1beta1.IdentityKind, Namespace: id.Namespace, Name: id.Name}
		p := peerStatus{ClusterID: id.Spec.ClusterID, Role: providerRole, Condition: "Pending", Object: obj}
		if id.Status.KubeconfigSecretRef != nil {
			p.Condition = "Ready"
		}
		p.CertificateExpires, p.CertificateInvalid = notAfter(id.Spec.AuthParams.SignedCRT)
		var err error
		if p.Warning, err = events.currentWarning(ctx, obj, id.UID); err != nil {
			return nil, err
		}
		providers = append(providers, p)
	}

	committedConsumers, committedProviders, err := readCommitted(ctx, cl.typed, report)
	if err != nil {
		return nil, err
	}
	consumers = withGitOps(consumers, consumerRole, committedConsumers)
	providers = withGitOps(providers, providerRole, committedProviders)
	byID := func(a, b peerStatus) int { return cmp.Compare(a.ClusterID, b.ClusterID) }
	slices.SortStableFunc(consumers, byID)
	slices.SortStableFunc(providers, byID)
	report.Peers = append(append(report.Peers, consumers...), providers...)
	return report, nil
}

// readCommitted reads the peerings committed in Git: the cluster's
// AuthorizedConsumers (its consumers) and TrustedProviders (its providers),
// each by the cluster ID it names. A kind the cluster does not serve has
// none; a kind the user may not list is added to report.Unreadable.
func readCommitted(ctx context.Context, c client.Client, report *statusReport) (consumers, providers map[string]*gitopsStatus, err error) {
	var acs peeringv1alpha1.AuthorizedConsumerList
	if err := listPeering(ctx, c, &acs, peeringv1alpha1.AuthorizedConsumerKind, report); err != nil {
		return nil, nil, err
	}
	consumers = map[string]*gitopsStatus{}
	for _, ac := range acs.Items {
		consumers[ac.Spec.ClusterID] = newGitOpsStatus(peeringv1alpha1.AuthorizedConsumerKind, ac.Name,
			ac.Generation, ac.Status.ObservedGeneration, ac.Status.Conditions)
	}
	var tps peeringv1alpha1.TrustedProviderList
	if err := listPeering(ctx, c, &tps, peeringv1alpha1.TrustedProviderKind, report); err != nil {
		return nil, nil, err
	}
	providers = map[string]*gitopsStatus{}
	for _, tp := range tps.Items {
		providers[tp.Spec.ClusterID] = newGitOpsStatus(peeringv1alpha1.TrustedProviderKind, tp.Name,
			tp.Generation, tp.Status.ObservedGeneration, tp.Status.Conditions)
	}
	return consumers, providers, nil
}

// listPeering lists a kind of peering.kubepact.io into list: nothing, and
// no error, when the cluster does not serve it (the CRDs are optional);
// when the user may not list it, nothing either, and the refusal added to
// report.Unreadable, so that the rest of the status is still shown.
func listPeering(ctx context.Context, c client.Client, list client.ObjectList, kind string, report *statusReport) error {
	err := c.List(ctx, list)
	switch {
	case err == nil, isMissingKind(err):
		return nil
	case apierrors.IsForbidden(err):
		report.Unreadable = append(report.Unreadable, unreadableKind{Kind: kind, Reason: string(apierrors.ReasonForError(err)), Message: err.Error()})
		return nil
	}
	return fmt.Errorf("listing %ss: %w", kind, err)
}

// newGitOpsStatus sums up a peering object of kind from its generation,
// observed generation and kstatus conditions.
func newGitOpsStatus(kind, name string, generation, observed int64, conditions []metav1.Condition) *gitopsStatus {
	g := &gitopsStatus{Kind: kind, Name: name, State: "Unknown", UpToDate: observed == generation}
	var holds *metav1.Condition
	for _, t := range []string{peeringv1alpha1.ConditionStalled, peeringv1alpha1.ConditionReconciling, peeringv1alpha1.ConditionReady} {
		if c := meta.FindStatusCondition(conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			g.State, holds = t, c
			break
		}
	}
	if ready := meta.FindStatusCondition(conditions, peeringv1alpha1.ConditionReady); holds == nil && ready != nil && ready.Status == metav1.ConditionFalse {
		g.State, holds = "NotReady", ready
	}
	if holds != nil {
		g.Reason, g.Message = holds.Reason, holds.Message
	}
	return g
}

// withGitOps returns peers, all of role, with the committed object of
// each cluster ID in committed set as the GitOps of the peers of that ID,
// and, in the order of their IDs, a Pending peer of role whose Object is
// the committed object, for each ID no peer has: a peering committed in
// Git that has no Tenant or Identity yet.
func withGitOps(peers []peerStatus, role string, committed map[string]*gitopsStatus) []peerStatus {
	for _, id := range slices.Sorted(maps.Keys(committed)) {
		g, matched := committed[id], false
		for i := range peers {
			if peers[i].ClusterID == id {
				peers[i].GitOps, matched = g, true
			}
		}
		if !matched {
			peers = append(peers, peerStatus{ClusterID: id, Role: role, Condition: "Pending",
				Object: objectRef{Kind: g.Kind, Name: g.Name}, GitOps: g})
		}
	}
	return peers
}

// printStatus prints report with the printer of out.
func printStatus(w io.Writer, out *output, report *statusReport) error {
	return printDocument(w, out, report)
}

// printDocument prints doc, a document with apiVersion and kind, with the
// printer of out, through its JSON form, so that jsonpath and go-template
// see the fields by their JSON names.
func printDocument(w io.Writer, out *output, doc any) error {
	p, err := out.printer()
	if err != nil {
		return err
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	return p.PrintObj(u, w)
}

// notAfter returns the NotAfter of a PEM certificate, nil when there is
// none, and whether it is unreadable.
func notAfter(pem []byte) (*metav1.Time, bool) {
	if len(pem) == 0 {
		return nil, false
	}
	cert, err := csr.ParseCertificate(pem)
	if err != nil {
		return nil, true
	}
	t := metav1.NewTime(cert.NotAfter)
	return &t, false
}

// eventCache lists the Events of each namespace once.
type eventCache struct {
	cl          *cluster
	byNamespace map[string][]eventsv1.Event
}

// currentWarning returns the newest Warning Event about the object (of
// this UID, when both the Event and the object name one) that no Normal
// Event about the same object seen later supersedes, nil when there is
// none: a controller records a Normal Event once it gets past what it
// warned about (a Tenant accepted, an Identity applied, a nonce signed),
// so an older Warning is history, not the peering's state.
func (c *eventCache) currentWarning(ctx context.Context, obj objectRef, uid types.UID) (*eventSummary, error) {
	list, ok := c.byNamespace[obj.Namespace]
	if !ok {
		l, err := c.cl.client.EventsV1().Events(obj.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing Events in %s: %w", obj.Namespace, err)
		}
		list = l.Items
		c.byNamespace[obj.Namespace] = list
	}
	return currentWarning(list, obj, uid), nil
}

// currentWarning is eventCache.currentWarning over the Events of the
// object's namespace.
func currentWarning(events []eventsv1.Event, obj objectRef, uid types.UID) *eventSummary {
	var warning *eventsv1.Event
	var lastNormal time.Time
	for i := range events {
		ev := &events[i]
		r := ev.Regarding
		if r.Kind != obj.Kind || r.Name != obj.Name || (r.Namespace != "" && r.Namespace != obj.Namespace) ||
			(r.UID != "" && uid != "" && r.UID != uid) {
			continue
		}
		switch ev.Type {
		case corev1.EventTypeWarning:
			if warning == nil || lastSeen(ev).After(lastSeen(warning)) {
				warning = ev
			}
		case corev1.EventTypeNormal:
			if t := lastSeen(ev); t.After(lastNormal) {
				lastNormal = t
			}
		}
	}
	if warning == nil || lastNormal.After(lastSeen(warning)) {
		return nil
	}
	return &eventSummary{Reason: warning.Reason, Message: warning.Note, Time: metav1.NewTime(lastSeen(warning))}
}

// lastSeen is when an Event was last seen: the latest of its event time,
// its series' last observation and the last time of an Event written
// through the core/v1 API (Liqo's recorders), else its creation.
func lastSeen(ev *eventsv1.Event) time.Time {
	t := ev.EventTime.Time
	if last := ev.DeprecatedLastTimestamp.Time; last.After(t) {
		t = last
	}
	if ev.Series != nil && ev.Series.LastObservedTime.After(t) {
		t = ev.Series.LastObservedTime.Time
	}
	if t.IsZero() {
		t = ev.CreationTimestamp.Time
	}
	return t
}

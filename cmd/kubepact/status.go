package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
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
	// cluster (a Tenant here) first, then its providers (a ControlPlane
	// Identity here), each in the order of their cluster IDs.
	Peers []peerStatus `json:"peers"`
}

// peerStatus is one peer of the cluster.
type peerStatus struct {
	// ClusterID is the peer's cluster ID.
	ClusterID string `json:"clusterID"`
	// Role is the peer's role: "consumer" (it consumes this cluster, which
	// holds its Tenant) or "provider" (this cluster consumes it, and holds
	// an Identity for it).
	Role string `json:"role"`
	// Object is this cluster's record of the peering: the Tenant or the
	// Identity.
	Object objectRef `json:"object"`
	// Condition is, for a consumer, Pending until its Tenant is accepted,
	// then the Tenant's condition (Active, Cordoned or Drained); for a
	// provider, Pending until the Identity's kubeconfig Secret is written,
	// then Ready.
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
		if out.format != "" {
			return printStatus(e.stdout, out, report)
		}
		if len(report.Peers) == 0 {
			fmt.Fprintln(e.stderr, "No peers.")
			return nil
		}
		rows := make([][]any, 0, len(report.Peers))
		for _, p := range report.Peers {
			expires := "-"
			switch {
			case p.CertificateInvalid:
				expires = "invalid"
			case p.CertificateExpires != nil:
				expires = p.CertificateExpires.UTC().Format(time.RFC3339)
			}
			warning := "-"
			if w := p.Warning; w != nil {
				note := strings.ReplaceAll(w.Message, "\n", " ")
				if len(note) > statusMessageWidth {
					note = note[:statusMessageWidth] + "…"
				}
				warning = w.Reason + ": " + note
			}
			rows = append(rows, []any{p.ClusterID, p.Role, p.Condition, expires, warning})
		}
		return printTable(e.stdout, []string{"PEER", "ROLE", "CONDITION", "CERTIFICATE EXPIRES", "LAST ERROR"}, rows)
	}
}

// readStatus reads the cluster's peers: its Tenants and ControlPlane
// Identities, and the Events about them. A cluster that does not serve the
// kinds has no peers of that kind.
func readStatus(ctx context.Context, cl *cluster) (*statusReport, error) {
	report := &statusReport{APIVersion: statusAPIVersion, Kind: statusKind, Peers: []peerStatus{}}
	events := eventCache{cl: cl, byNamespace: map[string][]eventsv1.Event{}}

	var tenants authv1beta1.TenantList
	if err := cl.typed.List(ctx, &tenants); err != nil && !isMissingKind(err) {
		return nil, fmt.Errorf("listing Tenants: %w", err)
	}
	var consumers []peerStatus
	for _, t := range tenants.Items {
		p := peerStatus{
			ClusterID: t.Spec.ClusterID, Role: consumerRole, Condition: tenantCondition(&t),
			Object: objectRef{Kind: authv1beta1.TenantKind, Namespace: t.Namespace, Name: t.Name},
		}
		if t.Status.AuthParams != nil {
			p.CertificateExpires, p.CertificateInvalid = notAfter(t.Status.AuthParams.SignedCRT)
		}
		var err error
		if p.Warning, err = events.currentWarning(ctx, p.Object, t.UID); err != nil {
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
		p := peerStatus{
			ClusterID: id.Spec.ClusterID, Role: providerRole, Condition: "Pending",
			Object: objectRef{Kind: authv1beta1.IdentityKind, Namespace: id.Namespace, Name: id.Name},
		}
		if id.Status.KubeconfigSecretRef != nil {
			p.Condition = "Ready"
		}
		p.CertificateExpires, p.CertificateInvalid = notAfter(id.Spec.AuthParams.SignedCRT)
		var err error
		if p.Warning, err = events.currentWarning(ctx, p.Object, id.UID); err != nil {
			return nil, err
		}
		providers = append(providers, p)
	}
	byID := func(a, b peerStatus) int { return cmp.Compare(a.ClusterID, b.ClusterID) }
	slices.SortStableFunc(consumers, byID)
	slices.SortStableFunc(providers, byID)
	report.Peers = append(append(report.Peers, consumers...), providers...)
	return report, nil
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

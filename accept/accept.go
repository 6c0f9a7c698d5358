// Package accept is the provider's decision on a Tenant, apart from the
// reads it needs and the writes it leads to. A provider gathers Facts
// about one Tenant (from the API server when it accepts it, from a cache
// when it asks whether the Tenant is unchanged), runs the same Chain of
// named checks over them, stage by stage, and, once every check passes,
// computes the Plan of what is left to do. Nothing here reads or writes:
// every function is pure over its Facts, and a table of Facts covers every
// check and every outcome.
//
// Order matters where a check guards an act that cannot be undone: the
// checks of StageRedeem run before the consumer's nonce is redeemed (a
// compare-and-swap that spends it), the checks of StageIssue before
// anything is signed, bound or written. Within a stage the checks run in
// the order of the Chain, and the first refusal ends the decision:
// the signature is verified before anything about the consumer's
// privileges is asked.
//
// Builtin is the provider's own chain. A caller adds checks of its own
// with provider.Options.Checks; they run after the built-in checks
// of their stage, in Accept and in Unchanged alike.
package accept

import (
	"bytes"
	"context"
	"crypto"
	"errors"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/tenant"
)

// Stage is when a check runs: before which act of the provider.
type Stage uint8

const (
	// StageRedeem checks run before the consumer's nonce is redeemed,
	// which spends it.
	StageRedeem Stage = iota + 1
	// StageIssue checks run once the Tenant's signature is verified over
	// the redeemed nonce, before anything is signed, bound or written.
	StageIssue
)

func (s Stage) String() string {
	switch s {
	case StageRedeem:
		return "redeem"
	case StageIssue:
		return "issue"
	}
	return "unknown"
}

// The names of the built-in checks, in the order they run.
const (
	// Admitted: the consumer is neither drained nor revoked
	// (lifecycle.Admit).
	Admitted = "admitted"
	// Committed: where an AuthorizedConsumer commits the consumer ID, the
	// Tenant's cluster key is one it lists (enrol.Commitment.Check).
	Committed = "committed"
	// Signature: the Tenant verifies against the nonce it redeemed
	// (tenant.Verify).
	Signature = "signature"
	// SingleHolder: no other key holds a live certificate for the
	// consumer ID (lifecycle.CheckHolder).
	SingleHolder = "single-holder"
	// Unprivileged: the consumer's user and groups hold no privilege
	// (rbac.CheckUnprivileged).
	Unprivileged = "unprivileged"
	// RolesInstalled: the peer ClusterRoles the consumer is bound to exist
	// (rbac.RequireRoles).
	RolesInstalled = "roles-installed"
)

// Facts are what a provider knows of one Tenant when it decides on it.
// The gathering fills them; the checks and Decide only read them.
// Privileges and Roles are answers that may still be on their way: a
// check waits for them only when it runs, so the questions overlap with
// the rest of the decision, and a refusal before them asks nothing more.
type Facts struct {
	// ConsumerID is the Tenant's cluster ID.
	ConsumerID string
	// Tenant is the Tenant as its consumer signed it (condition Active),
	// Key its cluster key.
	Tenant *authv1beta1.Tenant
	Key    crypto.PublicKey
	// Stored is the Tenant the provider stores for the consumer, nil when
	// there is none.
	Stored *authv1beta1.Tenant
	// Admission is lifecycle.Admit's answer for the consumer: nil, or why
	// it is refused.
	Admission error
	// Commitment is what the provider's AuthorizedConsumer commits for the
	// consumer ID, nil when none does; Commitments says why it could not
	// be read, or parsed.
	Commitment  *enrol.Commitment
	Commitments error
	// Verified is what tenant.Verify learnt from the Tenant over the
	// nonce it redeemed; when nil, Verification says why.
	Verified     *tenant.Verified
	Verification error
	// Certificate is the consumer's certificate record, nil when there is
	// none. HeldAfterUnpeering reports that its certificate is the one an
	// unpeering kept for the Tenant's key (nonce.Redemption.Unpeered): it
	// holds the consumer ID for this Tenant, not for another key.
	Certificate        *csr.CacheEntry
	HeldAfterUnpeering bool
	// Privileges waits for the privilege check's answer; Roles for the
	// check that the peer roles are installed. Nil means passed.
	Privileges func() error
	Roles      func() error
	// Bound and ClusterBound report that the ControlPlane RoleBinding and
	// the slice ClusterRoleBinding are stored as the provider applies
	// them. A provider that does not know says false, and applies them.
	Bound, ClusterBound bool
	// ClusterUnbound reports that no slice ClusterRoleBinding of the
	// consumer is stored, in any form. A provider that does not know says
	// false, and deletes it where it is not wanted (Want.UnbindCluster).
	ClusterUnbound bool
	// Now is the time the decision is taken at.
	Now time.Time
}

// A Check is one named condition a Tenant must meet. Run returns nil when
// it passes, otherwise the refusal, as an error the caller can tell apart
// (errors.Is, errors.As): Accept returns it, wrapped in its step.
type Check struct {
	Name  string
	Stage Stage
	// Why says what would go wrong without the check.
	Why string
	Run func(ctx context.Context, f *Facts) error
}

// Chain is the checks of a decision, in the order they run.
type Chain []Check

// Builtin returns the provider's own checks, in order.
func Builtin() Chain {
	return Chain{
		{Name: Admitted, Stage: StageRedeem, Run: admitted,
			Why: "a drained or revoked consumer must not spend its nonce, nor get anything signed or bound"},
		{Name: Committed, Stage: StageRedeem, Run: committed,
			Why: "once Git commits a consumer's keys, no flow may grant its ID to another key"},
		{Name: Signature, Stage: StageIssue, Run: signature,
			Why: "only the holder of the cluster key that signed the nonce may have a certificate for its CSR"},
		{Name: SingleHolder, Stage: StageIssue, Run: singleHolder,
			Why: "a second key would be the same user as the first, and Kubernetes cannot revoke a client certificate"},
		{Name: Unprivileged, Stage: StageIssue, Run: unprivileged,
			Why: "the cluster ID becomes a user name: one that holds permissions already would hand them to the peer"},
		{Name: RolesInstalled, Stage: StageIssue, Run: rolesInstalled,
			Why: "a certificate bound to a missing role would be an identity that can do nothing, issued for nothing"},
	}
}

// With returns c followed by more, in a new Chain.
func (c Chain) With(more ...Check) Chain {
	return append(c[:len(c):len(c)], more...)
}

// Without returns c without the checks named names, in a new Chain: for a
// flow that proves what those check another way (the token server's
// shared token stands for the signature).
func (c Chain) Without(names ...string) Chain {
	return slices.DeleteFunc(slices.Clone(c), func(ch Check) bool { return slices.Contains(names, ch.Name) })
}

// Run runs the checks of stage in c, in order, and returns the first
// refusal and the check that made it: nil and nil when all pass.
func (c Chain) Run(ctx context.Context, stage Stage, f *Facts) (*Check, error) {
	for i := range c {
		if c[i].Stage != stage {
			continue
		}
		if err := c[i].Run(ctx, f); err != nil {
			return &c[i], err
		}
	}
	return nil, nil
}

func admitted(_ context.Context, f *Facts) error { return f.Admission }

func committed(_ context.Context, f *Facts) error {
	if f.Commitments != nil {
		return f.Commitments
	}
	if f.Commitment == nil {
		return nil
	}
	return f.Commitment.Check(f.Key)
}

func signature(_ context.Context, f *Facts) error {
	if f.Verified == nil && f.Verification == nil {
		return errNotVerified
	}
	return f.Verification
}

// errNotVerified is a signature check over Facts that carry neither a
// verification nor its failure: a gathering that forgot it.
var errNotVerified = errors.New("the Tenant's signature was not verified")

func singleHolder(_ context.Context, f *Facts) error {
	cached := f.Certificate
	if f.HeldAfterUnpeering {
		cached = nil
	}
	claim := []crypto.PublicKey{f.Key}
	if f.Verified != nil {
		claim = append(claim, f.Verified.CSR.PublicKey())
		// The keys it took over, by a hand-over their cluster key signed.
		claim = append(claim, f.Verified.HandedOver...)
	}
	return lifecycle.CheckHolder(f.ConsumerID, f.Stored, cached, claim, f.Now)
}

func unprivileged(_ context.Context, f *Facts) error { return wait(f.Privileges) }

func rolesInstalled(_ context.Context, f *Facts) error { return wait(f.Roles) }

func wait(answer func() error) error {
	if answer == nil {
		return nil
	}
	return answer()
}

// Want is what the provider keeps for an accepted Tenant.
type Want struct {
	// Record is the Tenant it records, status aside (Record).
	Record *authv1beta1.Tenant
	// Server and CA are the endpoint the status hands out.
	Server string
	CA     []byte
	// BindCluster is set where the provider binds the consumer
	// cluster-wide (the slice ClusterRoleBinding). UnbindCluster is set
	// where the provider would, but the consumer's commitment withholds it
	// (enrol.Policy.SliceClusterWideRole): a binding stored is deleted.
	// At most one of them is set.
	BindCluster, UnbindCluster bool
	// Lifetime is the lifetime of the certificates it signs.
	Lifetime time.Duration
}

// ClusterBinding returns Want.BindCluster and Want.UnbindCluster for a
// consumer whose commitment is c (nil when none commits it), on a provider
// that binds consumers cluster-wide when binds is set: bound, unless c's
// policy withholds the role (enrol.Policy.SliceClusterWideRole), then
// unbound. A provider that does not bind cluster-wide does neither: the
// policy can take the role away, never grant it.
func ClusterBinding(binds bool, c *enrol.Commitment) (bind, unbind bool) {
	if !binds {
		return false, false
	}
	if c != nil && !c.Policy.SliceClusterWideRole(binds) {
		return false, true
	}
	return true, false
}

// Plan is what is left to do for a Tenant that passed every check.
type Plan struct {
	// Certificate is the certificate held for the Tenant's CSR, still
	// fresh, or nil: then Sign.
	Certificate []byte
	// Sign: a certificate must be signed for the CSR, then cached.
	Sign bool
	// Record: the Tenant must be recorded (status aside).
	Record bool
	// Bind and BindCluster: the ControlPlane RoleBinding, and the slice
	// ClusterRoleBinding, must be applied.
	Bind, BindCluster bool
	// UnbindCluster: the slice ClusterRoleBinding must be deleted.
	UnbindCluster bool
	// WriteStatus: the status must be written; it hands the certificate
	// out.
	WriteStatus bool
}

// Empty reports whether p leaves nothing to do.
func (p Plan) Empty() bool {
	return !p.Sign && !p.Record && !p.Bind && !p.BindCluster && !p.UnbindCluster && !p.WriteStatus
}

// Decide returns the Plan for the Tenant of f, which passed every check,
// towards w. f.Verified must be set. The status is judged with the
// certificate held: a Plan that signs writes the status once the new
// certificate is known.
func Decide(f *Facts, w Want) Plan {
	p := Plan{
		Record:      !Recorded(f.Stored, w.Record),
		Bind:        !f.Bound,
		BindCluster: w.BindCluster && !f.ClusterBound,
		// Withheld, the binding goes, whatever form it was left in.
		UnbindCluster: w.UnbindCluster && !w.BindCluster && !f.ClusterUnbound,
	}
	if f.Certificate != nil {
		p.Certificate = csr.Cached(*f.Certificate, Request(f, w), f.Now)
	}
	p.Sign = p.Certificate == nil
	p.WriteStatus = p.Sign || f.Stored == nil || !equality.Semantic.DeepEqual(f.Stored.Status, Status(f, w, p.Certificate))
	return p
}

// Request is the certificate request for the Tenant of f: its CSR, for
// w's lifetime.
func Request(f *Facts, w Want) csr.Request {
	return csr.Request{CSR: f.Verified.CSR, Lifetime: w.Lifetime}
}

// Status is the status that hands cert out for the Tenant of f: the
// tenant namespace, w's endpoint, and the proxy the Tenant asked for.
func Status(f *Facts, w Want, cert []byte) authv1beta1.TenantStatus {
	return authv1beta1.TenantStatus{
		TenantNamespace: clusterid.TenantNamespace(f.ConsumerID),
		AuthParams: &authv1beta1.AuthParams{
			CA:        bytes.Clone(w.CA),
			SignedCRT: cert,
			APIServer: w.Server,
			ProxyURL:  f.Verified.ProxyURL,
		},
	}
}

// Record returns the Tenant the provider stores for t: its spec but its
// condition, and only the metadata the protocol defines (name, namespace,
// the cluster ID label, kubepact's finalizer when finalize is set, and the
// transcript annotations). Owner references, finalizers, labels and
// annotations that came with t from the other cluster are not kept: an
// owner reference to a missing object would let the garbage collector
// delete the Tenant.
func Record(t *authv1beta1.Tenant, finalize bool) *authv1beta1.Tenant {
	consumerID := t.Spec.ClusterID
	stored := &authv1beta1.Tenant{
		TypeMeta: metav1.TypeMeta{APIVersion: authv1beta1.SchemeGroupVersion.String(), Kind: authv1beta1.TenantKind},
		ObjectMeta: metav1.ObjectMeta{
			Name:        consumerID,
			Namespace:   clusterid.TenantNamespace(consumerID),
			Labels:      map[string]string{clusterid.Label: consumerID},
			Annotations: tenant.TranscriptAnnotations(t),
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if finalize {
		stored.Finalizers = []string{tenant.Finalizer}
	}
	// The condition is the provider's: left out, it keeps what the
	// administrator set (or its default, Active), whatever t says.
	stored.Spec.TenantCondition = ""
	return stored
}

// Recorded reports whether the stored Tenant current already carries all
// of want, the Tenant the provider records, status aside: its spec (the
// condition, which is the provider's, aside), and its label, annotations
// and, when want has it, finalizer. Applying want again would change
// nothing.
func Recorded(current, want *authv1beta1.Tenant) bool {
	if current == nil || current.DeletionTimestamp != nil || current.UID == "" {
		return false
	}
	spec := current.Spec
	spec.TenantCondition = ""
	if !equality.Semantic.DeepEqual(spec, want.Spec) || len(want.Finalizers) > 0 && !slices.Contains(current.Finalizers, tenant.Finalizer) {
		return false
	}
	for _, m := range []struct{ have, want map[string]string }{
		{current.Labels, want.Labels}, {current.Annotations, want.Annotations},
	} {
		for k, v := range m.want {
			if got, ok := m.have[k]; !ok || got != v {
				return false
			}
		}
	}
	return true
}

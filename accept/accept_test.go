package accept_test

import (
	"context"
	"crypto"
	"crypto/rand"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubepact/kubepact/accept"
	authv1beta1 "github.com/kubepact/kubepact/apis/authentication/v1beta1"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/enrol"
	"github.com/kubepact/kubepact/internal/testkeys"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/lifecycle"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
)

const (
	consumerID = "cl-consumer"
	providerID = "cl-provider"
	lifetime   = 24 * time.Hour
)

// now is the real time: the local CA signs as of it.
var now = time.Now().UTC().Truncate(time.Second)

// fixture is one Tenant, verified, with a certificate signed for its CSR by
// a local CA, and what the provider keeps for it once accepted.
type fixture struct {
	tenant   *authv1beta1.Tenant
	verified *tenant.Verified
	key      *keys.PrivateKey
	entry    *csr.CacheEntry
	want     accept.Want
}

func newFixture(t *testing.T, ca *csr.LocalCA, caPEM []byte) fixture {
	t.Helper()
	key := testkeys.Generate(t, keys.Ed25519)
	n, err := nonce.Generate(rand.Reader)
	require.NoError(t, err)
	tn, err := tenant.Build(consumerID, key, n, nil)
	require.NoError(t, err)
	v, err := tenant.Verify(tn, n, &tenant.VerifyOptions{ProviderID: providerID, Now: now})
	require.NoError(t, err)
	cert, err := csr.SignChecked(context.Background(), ca, csr.Request{CSR: v.CSR, Lifetime: lifetime}, now)
	require.NoError(t, err)
	return fixture{
		tenant: tn, verified: v, key: key,
		entry: &csr.CacheEntry{CSR: v.CSR.PEM(), Certificate: cert},
		want: accept.Want{Record: accept.Record(tn, true), Server: "https://provider.example:6443", CA: caPEM,
			BindCluster: true, Lifetime: lifetime},
	}
}

// facts are the Facts of an accepted Tenant that nothing changed: stored
// as recorded, its status handing out the certificate cached, both
// bindings in place, every answer a pass.
func (fx fixture) facts() *accept.Facts {
	f := &accept.Facts{
		ConsumerID: consumerID, Tenant: fx.tenant, Key: fx.key.Public(),
		Verified: fx.verified, Certificate: fx.entry, Bound: true, ClusterBound: true, Now: now,
	}
	stored := fx.want.Record.DeepCopy()
	stored.UID = types.UID("uid-1")
	stored.Status = accept.Status(f, fx.want, fx.entry.Certificate)
	f.Stored = stored
	return f
}

func newCA(t *testing.T) (*csr.LocalCA, []byte) {
	t.Helper()
	caPEM, caKey, err := csr.GenerateCA(rand.Reader, "accept-test-ca", now.Add(-time.Hour), 10*lifetime)
	require.NoError(t, err)
	ca, err := csr.NewLocalCA(caPEM, caKey, nil)
	require.NoError(t, err)
	return ca, caPEM
}

// runAll runs both stages of c over f, as Unchanged does.
func runAll(c accept.Chain, f *accept.Facts) (*accept.Check, error) {
	for _, s := range []accept.Stage{accept.StageRedeem, accept.StageIssue} {
		if check, err := c.Run(context.Background(), s, f); err != nil {
			return check, err
		}
	}
	return nil, nil
}

var (
	errRevoked    = errors.New("revoked")
	errForged     = errors.New("forged")
	errPrivileged = rbac.ErrPrivilegedUser
	errNoRole     = errors.New("no role")
)

// TestChecks covers every built-in check: which one refuses, with the
// error it must return, and that a refusal asks nothing after it.
func TestChecks(t *testing.T) {
	ca, caPEM := newCA(t)
	fx := newFixture(t, ca, caPEM)
	other := newFixture(t, ca, caPEM)
	for _, tc := range []struct {
		name      string
		change    func(f *accept.Facts)
		wantCheck string
		wantErr   error
		wantAsked bool // the privilege check was asked
	}{
		{name: "all pass", wantAsked: true},
		{name: "not admitted", change: func(f *accept.Facts) { f.Admission = errRevoked },
			wantCheck: accept.Admitted, wantErr: errRevoked},
		{name: "committed", wantAsked: true, change: func(f *accept.Facts) {
			f.Commitment = &enrol.Commitment{ConsumerID: consumerID, Keys: []crypto.PublicKey{other.key.Public(), fx.key.Public()}}
		}},
		{name: "another key committed", change: func(f *accept.Facts) {
			f.Commitment = &enrol.Commitment{ConsumerID: consumerID, Keys: []crypto.PublicKey{other.key.Public()}}
		}, wantCheck: accept.Committed, wantErr: enrol.ErrNotCommitted},
		{name: "commitments unreadable", change: func(f *accept.Facts) { f.Commitments = enrol.ErrMalformed },
			wantCheck: accept.Committed, wantErr: enrol.ErrMalformed},
		{name: "bad signature", change: func(f *accept.Facts) { f.Verified, f.Verification = nil, errForged },
			wantCheck: accept.Signature, wantErr: errForged},
		{name: "signature never verified", change: func(f *accept.Facts) { f.Verified = nil },
			wantCheck: accept.Signature},
		{name: "another key holds the ID", change: func(f *accept.Facts) { f.Stored, f.Certificate = nil, other.entry },
			wantCheck: accept.SingleHolder, wantErr: lifecycle.ErrIdentityHeld},
		{name: "held after an unpeering by this key", wantAsked: true, change: func(f *accept.Facts) {
			f.Stored, f.Certificate, f.HeldAfterUnpeering = nil, other.entry, true
		}},
		{name: "privileged", change: func(f *accept.Facts) { f.Privileges = func() error { return errPrivileged } },
			wantCheck: accept.Unprivileged, wantErr: rbac.ErrPrivilegedUser},
		{name: "role missing", change: func(f *accept.Facts) { f.Roles = func() error { return errNoRole } },
			wantCheck: accept.RolesInstalled, wantErr: errNoRole, wantAsked: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fx.facts()
			asked := false
			f.Privileges = func() error { asked = true; return nil }
			if tc.change != nil {
				tc.change(f)
			}
			check, err := runAll(accept.Builtin(), f)
			if tc.wantCheck == "" {
				require.NoError(t, err)
				require.Nil(t, check)
			} else {
				require.Error(t, err)
				require.Equal(t, tc.wantCheck, check.Name)
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
				}
			}
			if tc.wantCheck != accept.Unprivileged {
				require.Equal(t, tc.wantAsked, asked, "whether the privilege check was asked")
			}
		})
	}
}

// TestStages: each check runs in its own stage only, the caller's after
// the built-in ones, and With leaves the chain it extends as it was.
func TestStages(t *testing.T) {
	ca, caPEM := newCA(t)
	f := newFixture(t, ca, caPEM).facts()
	var ran []string
	record := func(name string) accept.Check {
		return accept.Check{Name: name, Stage: accept.StageIssue, Run: func(context.Context, *accept.Facts) error {
			ran = append(ran, name)
			return nil
		}}
	}
	base := accept.Builtin()
	c := base.With(record("first"), record("second"))
	require.Len(t, base, 6, "With changed the chain it extends")

	_, err := c.Run(context.Background(), accept.StageRedeem, f)
	require.NoError(t, err)
	require.Empty(t, ran, "a StageIssue check ran before the redemption")

	f.Admission = errRevoked
	_, err = c.Run(context.Background(), accept.StageIssue, f)
	require.NoError(t, err, "the admission ran in the issue stage")
	require.Equal(t, []string{"first", "second"}, ran)

	refuse := errors.New("not on the list")
	c = base.With(accept.Check{Name: "allow-list", Stage: accept.StageRedeem,
		Run: func(context.Context, *accept.Facts) error { return refuse }})
	f.Admission = nil
	check, err := c.Run(context.Background(), accept.StageRedeem, f)
	require.ErrorIs(t, err, refuse)
	require.Equal(t, "allow-list", check.Name)
}

// TestDecide covers every outcome of the Plan.
func TestDecide(t *testing.T) {
	ca, caPEM := newCA(t)
	fx := newFixture(t, ca, caPEM)
	for _, tc := range []struct {
		name   string
		change func(f *accept.Facts, w *accept.Want)
		want   accept.Plan // Certificate aside
	}{
		{name: "unchanged"},
		{name: "nothing stored", change: func(f *accept.Facts, _ *accept.Want) { f.Stored = nil },
			want: accept.Plan{Record: true, WriteStatus: true}},
		{name: "no certificate", change: func(f *accept.Facts, _ *accept.Want) { f.Certificate = nil },
			want: accept.Plan{Sign: true, WriteStatus: true}},
		{name: "certificate due", change: func(f *accept.Facts, _ *accept.Want) { f.Now = now.Add(lifetime) },
			want: accept.Plan{Sign: true, WriteStatus: true}},
		{name: "spec changed", change: func(f *accept.Facts, _ *accept.Want) {
			f.Stored = f.Stored.DeepCopy()
			f.Stored.Spec.ClusterID = "cl-another"
		}, want: accept.Plan{Record: true}},
		{name: "finalizer missing", change: func(f *accept.Facts, _ *accept.Want) {
			f.Stored = f.Stored.DeepCopy()
			f.Stored.Finalizers = nil
		}, want: accept.Plan{Record: true}},
		{name: "unbound", change: func(f *accept.Facts, _ *accept.Want) { f.Bound = false },
			want: accept.Plan{Bind: true}},
		{name: "unbound cluster-wide", change: func(f *accept.Facts, _ *accept.Want) { f.ClusterBound = false },
			want: accept.Plan{BindCluster: true}},
		{name: "no cluster-wide binding wanted", change: func(f *accept.Facts, w *accept.Want) { f.ClusterBound, w.BindCluster = false, false }},
		{name: "cluster-wide binding withheld, one stored", change: func(_ *accept.Facts, w *accept.Want) {
			w.BindCluster, w.UnbindCluster = false, true
		}, want: accept.Plan{UnbindCluster: true}},
		{name: "cluster-wide binding withheld, not known to be gone", change: func(f *accept.Facts, w *accept.Want) {
			f.ClusterBound, w.BindCluster, w.UnbindCluster = false, false, true
		}, want: accept.Plan{UnbindCluster: true}},
		{name: "cluster-wide binding withheld and gone", change: func(f *accept.Facts, w *accept.Want) {
			f.ClusterBound, f.ClusterUnbound, w.BindCluster, w.UnbindCluster = false, true, false, true
		}},
		{name: "status of another endpoint", change: func(_ *accept.Facts, w *accept.Want) { w.Server = "https://elsewhere.example:6443" },
			want: accept.Plan{WriteStatus: true}},
		{name: "status without a certificate", change: func(f *accept.Facts, _ *accept.Want) {
			f.Stored = f.Stored.DeepCopy()
			f.Stored.Status = authv1beta1.TenantStatus{}
		}, want: accept.Plan{WriteStatus: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, w := fx.facts(), fx.want
			if tc.change != nil {
				tc.change(f, &w)
			}
			got := accept.Decide(f, w)
			if got.Sign {
				require.Nil(t, got.Certificate)
			} else {
				require.Equal(t, fx.entry.Certificate, got.Certificate, "the certificate held")
			}
			got.Certificate = nil
			require.Equal(t, tc.want, got)
			require.Equal(t, slices.Contains([]string{"unchanged", "no cluster-wide binding wanted", "cluster-wide binding withheld and gone"}, tc.name), got.Empty())
		})
	}
}

// TestClusterBinding: a commitment's policy can take the cluster-wide
// slice binding away, never add it where the provider binds none.
func TestClusterBinding(t *testing.T) {
	withheld := &enrol.Commitment{ConsumerID: consumerID, Policy: enrol.Policy{NoSliceClusterWideRole: true}}
	for _, tc := range []struct {
		name         string
		binds        bool
		commitment   *enrol.Commitment
		bind, unbind bool
	}{
		{"no commitment", true, nil, true, false},
		{"a commitment without a policy", true, &enrol.Commitment{ConsumerID: consumerID}, true, false},
		{"a commitment that withholds it", true, withheld, false, true},
		{"a provider that binds none", false, nil, false, false},
		{"a provider that binds none, withheld", false, withheld, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bind, unbind := accept.ClusterBinding(tc.binds, tc.commitment)
			require.Equal(t, tc.bind, bind, "bind")
			require.Equal(t, tc.unbind, unbind, "unbind")
		})
	}
}

// TestRecordKeepsOnlyTheProtocolsMetadata: what came with a Tenant from
// the other cluster, beyond the protocol's, is not recorded, and its
// condition is left to the provider.
func TestRecordKeepsOnlyTheProtocolsMetadata(t *testing.T) {
	ca, caPEM := newCA(t)
	tn := newFixture(t, ca, caPEM).tenant.DeepCopy()
	tn.Labels = map[string]string{"planted": "yes"}
	tn.Finalizers = []string{"example.com/hold"}
	tn.Spec.TenantCondition = authv1beta1.TenantConditionCordoned
	r := accept.Record(tn, false)
	require.Empty(t, r.Finalizers)
	require.NotContains(t, r.Labels, "planted")
	require.Empty(t, r.Spec.TenantCondition)
	require.Equal(t, []string{tenant.Finalizer}, accept.Record(tn, true).Finalizers)
}

package kubepact_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/clusterid"
	"github.com/kubepact/kubepact/csr"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/nonce"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/intercept"
)

// countingBinder counts the privilege questions and ClusterRole reads
// that reach the provider's RBAC port.
type countingBinder struct {
	rbac.Binder
	asked, roles atomic.Int64
}

func (c *countingBinder) Allowed(ctx context.Context, user string, groups []string, attrs authorizationv1.ResourceAttributes) (bool, error) {
	c.asked.Add(1)
	return c.Binder.Allowed(ctx, user, groups, attrs)
}

func (c *countingBinder) HasClusterRole(ctx context.Context, name string) (bool, error) {
	c.roles.Add(1)
	return c.Binder.HasClusterRole(ctx, name)
}

// recheckPair is a pair whose provider counts its RBAC calls and trusts
// checks for interval.
func recheckPair(t *testing.T, interval time.Duration) (*pair, *countingBinder) {
	t.Helper()
	p := newPair(t)
	ports := p.providerCluster.ProviderPorts()
	counting := &countingBinder{Binder: ports.RBAC}
	ports.RBAC = counting
	var err error
	p.provider, err = provider.New(providerID, p.providerCluster.Endpoint(), ports,
		&provider.Options{Clock: p.clock, RecheckInterval: interval})
	require.NoError(t, err)
	return p, counting
}

// A retried Accept within the recheck interval asks no privilege question
// and applies no ClusterRole again; once the interval has passed, both are
// repeated, and a consumer ID that became privileged meanwhile is refused.
func TestAcceptRechecksPrivilegesAfterTheInterval(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, counting := recheckPair(t, 0) // DefaultRecheckInterval
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)

	_, err = p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	probes := int64(len(rbac.PrivilegeProbes()))
	roles := int64(2) // the ControlPlane role and the cluster-wide slice role
	require.Equal(t, probes, counting.asked.Load())
	require.Equal(t, roles, counting.roles.Load())

	p.clock.Step(provider.DefaultRecheckInterval - time.Second)
	_, err = p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	require.Equal(t, probes, counting.asked.Load(), "no question within the interval")
	require.Equal(t, roles, counting.roles.Load(), "no ClusterRole read within the interval")

	// The consumer ID now names a privileged user.
	require.NoError(t, p.providerCluster.RBAC.ApplyClusterRole(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "everything"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}},
	}))
	require.NoError(t, p.providerCluster.RBAC.ApplyClusterRoleBinding(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "granted-later"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: consumerID}},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "everything"},
	}))
	p.clock.Step(time.Second)
	_, err = p.provider.Accept(ctx, tn)
	require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
	require.Equal(t, 2*probes, counting.asked.Load(), "asked again")

	// A refusal is not remembered as a pass.
	_, err = p.provider.Accept(ctx, tn)
	require.ErrorIs(t, err, rbac.ErrPrivilegedUser)
}

// A negative recheck interval asks every question and applies the
// ClusterRole on every Accept.
func TestAcceptWithoutRecheckIntervalChecksEveryTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, counting := recheckPair(t, -1)
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)
	for range 3 {
		_, err = p.provider.Accept(ctx, tn)
		require.NoError(t, err)
	}
	require.Equal(t, 3*int64(len(rbac.PrivilegeProbes())), counting.asked.Load())
	require.Equal(t, int64(3*2), counting.roles.Load(), "two roles each time")
}

// Forgetting a consumer forgets its passed check: a Tenant for the same ID
// accepted right after (once readmitted) is checked again.
func TestForgetDropsThePassedCheck(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, counting := recheckPair(t, time.Hour)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	require.NoError(t, p.provider.Forget(ctx, consumerID))
	_, err = kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err)
	require.Equal(t, 2*int64(len(rbac.PrivilegeProbes())), counting.asked.Load())
}

// tenantWrites counts the Tenant writes among calls: each Apply and
// ApplyStatus that ran.
func tenantWrites(calls []intercept.Call) (applies, statuses int) {
	for _, c := range calls {
		switch {
		case !c.After:
		case c.Op == "Tenants.Apply":
			applies++
		case c.Op == "Tenants.ApplyStatus":
			statuses++
		}
	}
	return applies, statuses
}

// A handshake whose certificate is pending on the first Accept writes the
// Tenant once and its status once on the second; an Accept of a Tenant
// already recorded with that status writes neither.
func TestAcceptWritesTheTenantOnlyWhenItChanges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p := newFaultyPair(t, false)
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)

	p.faults.Set(func(_ context.Context, c intercept.Call) error {
		if c.Op == "Signer.Sign" && !c.After {
			return fmt.Errorf("%w: not issued yet", csr.ErrPending)
		}
		return nil
	})
	_, err = p.provider.Accept(ctx, tn)
	require.ErrorIs(t, err, csr.ErrPending)
	applies, statuses := tenantWrites(p.faults.Calls())
	require.Zero(t, applies+statuses, "nothing recorded before the certificate")

	p.faults.Set(nil)
	before := len(p.faults.Calls())
	_, err = p.provider.Accept(ctx, tn)
	require.NoError(t, err)
	applies, statuses = tenantWrites(p.faults.Calls()[before:])
	require.Equal(t, 1, applies, "the Tenant, status aside")
	require.Equal(t, 1, statuses, "its status")

	// The reconciler's retry passes the stored Tenant itself.
	stored, err := p.providerCluster.Tenants.Get(ctx, clusterid.TenantNamespace(consumerID), consumerID)
	require.NoError(t, err)
	before = len(p.faults.Calls())
	_, err = p.provider.Accept(ctx, stored)
	require.NoError(t, err)
	applies, statuses = tenantWrites(p.faults.Calls()[before:])
	require.Zero(t, applies+statuses, "a recorded Tenant is not written again")

	// A Tenant stripped of kubepact's finalizer is recorded again.
	stripped := stored.DeepCopy()
	stripped.Finalizers = nil
	_, err = p.providerCluster.Tenants.Update(ctx, stripped)
	require.NoError(t, err)
	before = len(p.faults.Calls())
	_, err = p.provider.Accept(ctx, stored)
	require.NoError(t, err)
	applies, statuses = tenantWrites(p.faults.Calls()[before:])
	require.Equal(t, 1, applies, "the finalizer restored")
	require.Zero(t, statuses)
	again, err := p.providerCluster.Tenants.Get(ctx, stored.Namespace, stored.Name)
	require.NoError(t, err)
	require.Contains(t, again.Finalizers, tenant.Finalizer)
}

// The privilege questions start beside the nonce's redemption only for a
// Tenant whose signature verifies against the stored nonce: a Tenant that
// does not verify makes the provider ask nothing, whether its signature is
// bad or its nonce is another.
func TestAcceptAsksNothingForAnUnverifiedTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	p, counting := recheckPair(t, 0)
	n, err := p.provider.IssueNonce(ctx, consumerID)
	require.NoError(t, err)
	tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
	require.NoError(t, err)

	forged := tn.DeepCopy()
	forged.Spec.Signature = bytes.Repeat([]byte{1}, len(tn.Spec.Signature))
	_, err = p.provider.Accept(ctx, forged)
	require.ErrorIs(t, err, keys.ErrBadSignature)
	require.Zero(t, counting.asked.Load(), "no question for a bad signature")
}

// peekingNonces is a nonce.Peeker over a store whose Peek returns what the
// test sets, as a stale cache might, and which counts its Gets.
type peekingNonces struct {
	nonce.Store
	mu     sync.Mutex
	peeked *nonce.Entry
	gets   atomic.Int64
}

func (s *peekingNonces) Peek(context.Context, string) (nonce.Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.peeked == nil {
		return nonce.Entry{}, false
	}
	return *s.peeked, true
}

func (s *peekingNonces) Get(ctx context.Context, clusterID string) (nonce.Entry, error) {
	s.gets.Add(1)
	return s.Store.Get(ctx, clusterID)
}

func (s *peekingNonces) set(e *nonce.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.peeked = e
}

// With a nonce.Peeker, Accept reads no nonce before the redemption: a
// Tenant that verifies against the nonce at hand is checked beside it, one
// that does not (a stale peek) is still accepted against the nonce
// stored, and a forged one makes the provider ask nothing.
func TestAcceptWithAPeekedNonce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tt := range []struct {
		name string
		peek func(issued nonce.Entry) *nonce.Entry
	}{
		{"the nonce issued", func(issued nonce.Entry) *nonce.Entry { return &issued }},
		{"a stale nonce", func(nonce.Entry) *nonce.Entry {
			n, err := nonce.Generate(nil)
			require.NoError(t, err)
			return &nonce.Entry{Nonce: n, IssuedAt: time.Now()}
		}},
		{"none", func(nonce.Entry) *nonce.Entry { return nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := newPair(t)
			ports := p.providerCluster.ProviderPorts()
			counting := &countingBinder{Binder: ports.RBAC}
			peeking := &peekingNonces{Store: ports.Nonces}
			ports.RBAC, ports.Nonces, ports.Peek = counting, peeking, peeking
			var err error
			p.provider, err = provider.New(providerID, p.providerCluster.Endpoint(), ports, &provider.Options{Clock: p.clock})
			require.NoError(t, err)
			n, err := p.provider.IssueNonce(ctx, consumerID)
			require.NoError(t, err)
			issued, err := peeking.Store.Get(ctx, consumerID)
			require.NoError(t, err)
			require.Equal(t, n, issued.Nonce)
			peeking.set(tt.peek(issued))
			tn, err := p.consumer.Tenant(ctx, providerID, n, nil)
			require.NoError(t, err)

			forged := tn.DeepCopy()
			forged.Spec.Signature = bytes.Repeat([]byte{1}, len(tn.Spec.Signature))
			before := peeking.gets.Load()
			_, err = p.provider.Accept(ctx, forged)
			require.ErrorIs(t, err, keys.ErrBadSignature)
			require.Zero(t, counting.asked.Load(), "no question for a bad signature")

			_, err = p.provider.Accept(ctx, tn)
			require.NoError(t, err)
			require.Equal(t, int64(len(rbac.PrivilegeProbes())), counting.asked.Load())
			require.Equal(t, before, peeking.gets.Load(), "no nonce read by Accept")
		})
	}
}

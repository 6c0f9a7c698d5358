package kubepact_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubepact/kubepact"
	"github.com/kubepact/kubepact/consumer"
	"github.com/kubepact/kubepact/identity"
	"github.com/kubepact/kubepact/keys"
	"github.com/kubepact/kubepact/provider"
	"github.com/kubepact/kubepact/rbac"
	"github.com/kubepact/kubepact/step"
	"github.com/kubepact/kubepact/tenant"
	"github.com/kubepact/kubepact/wire/intercept"
	"github.com/kubepact/kubepact/wire/memory"
)

// faultyPair is a provider and a consumer whose ports fail on demand.
type faultyPair struct {
	*pair
	faults *intercept.Faults
}

func newFaultyPair(t *testing.T, strict bool) *faultyPair {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	pc, err := memory.NewCluster(providerID, &memory.ClusterOptions{Clock: clk})
	require.NoError(t, err)
	cc, err := memory.NewCluster(consumerID, &memory.ClusterOptions{Clock: clk})
	require.NoError(t, err)
	faults := &intercept.Faults{}
	p := &pair{clock: clk, providerCluster: pc, consumerCluster: cc}
	policy := tenant.Compatible
	if strict {
		policy = tenant.Strict
	}
	p.provider, err = provider.New(providerID, pc.Endpoint(), intercept.Provider(pc.ProviderPorts(), faults),
		&provider.Options{Clock: clk, Policy: policy, SliceNamespaces: offloaded})
	require.NoError(t, err)
	p.consumer, err = consumer.New(consumerID, intercept.Consumer(cc.ConsumerPorts(), faults),
		&consumer.Options{Clock: clk, Strict: strict})
	require.NoError(t, err)
	return &faultyPair{pair: p, faults: faults}
}

// injected are the failures injected at every call: what an API server or
// the network does to a request.
var injected = []struct {
	name string
	err  error
}{
	{"conflict", apierrors.NewConflict(schema.GroupResource{Resource: "secrets"}, "x", errors.New("the object has been modified"))},
	{"server error", apierrors.NewInternalError(errors.New("etcd is sad"))},
	{"timeout", context.DeadlineExceeded},
	{"cancelled", context.Canceled},
}

// TestFaultAtEveryCall fails each call of a handshake in turn, before it
// runs and after it took effect, with each kind of failure. The handshake
// must fail with that error; run again, it must complete, with exactly one
// of every object and the keys stored by the failed run.
func TestFaultAtEveryCall(t *testing.T) {
	t.Parallel()
	for _, strict := range []bool{false, true} {
		// The calls of one clean handshake, in order.
		probe := newFaultyPair(t, strict)
		_, err := kubepact.Authenticate(context.Background(), probe.consumer, probe.provider, nil)
		require.NoError(t, err)
		eachFault(t, strict, probe.faults.Calls(), runWithFault)
	}
}

// eachFault runs, in parallel subtests, run with every call of calls as
// the target (counting earlier calls alike to it) and every injected
// failure.
func eachFault(t *testing.T, strict bool, calls []intercept.Call,
	run func(t *testing.T, strict bool, target intercept.Call, occurrence int, fault error)) {
	t.Helper()
	require.NotEmpty(t, calls)
	for i, c := range calls {
		occurrence := 0
		for _, prev := range calls[:i] {
			if prev == c {
				occurrence++
			}
		}
		for _, fault := range injected {
			name := fmt.Sprintf("strict=%t/%02d-%s#%d/after=%t/%s", strict, i, c.Op, occurrence, c.After, fault.name)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				run(t, strict, c, occurrence, fault.err)
			})
		}
	}
}

// failOnce makes the occurrence-th call matching target fail with fault,
// and no other; the function it returns reports whether it has.
func failOnce(f *intercept.Faults, target intercept.Call, occurrence int, fault error) (fired func() bool) {
	var (
		mu   sync.Mutex
		seen int
		done bool
	)
	f.Set(func(_ context.Context, c intercept.Call) error {
		mu.Lock()
		defer mu.Unlock()
		if c != target || done {
			return nil
		}
		if seen == occurrence {
			done = true
			return fault
		}
		seen++
		return nil
	})
	return func() bool {
		mu.Lock()
		defer mu.Unlock()
		return done
	}
}

// runWithFault runs a handshake whose occurrence-th call matching target
// fails with fault, then runs it again without faults.
func runWithFault(t *testing.T, strict bool, target intercept.Call, occurrence int, fault error) {
	ctx := context.Background()
	p := newFaultyPair(t, strict)
	fired := failOnce(p.faults, target, occurrence, fault)
	_, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.True(t, fired(), "the fault must have been injected")
	require.ErrorIs(t, err, fault)
	var se *step.Error
	require.ErrorAs(t, err, &se, "every failure names its step")

	// Keys stored by the failed run must survive the retry.
	clusterKey, _ := p.consumerCluster.Keys.Get(ctx)
	idKey, _ := p.consumerCluster.IdentityKeys.Get(ctx, identity.ControlPlaneName(providerID))

	p.faults.Set(nil)
	done, err := kubepact.Authenticate(ctx, p.consumer, p.provider, nil)
	require.NoError(t, err, "the handshake completes when run again")

	require.Len(t, p.providerCluster.Tenants.Objects(""), 1)
	require.Len(t, p.providerCluster.RBAC.RoleBindings.Objects(""), 1)
	require.Len(t, p.providerCluster.RBAC.ClusterRoles.Objects(""), len(rbac.PeerRoles()), "the peer roles, and no other")
	require.Equal(t, 1, p.providerCluster.Certificates.Len())
	require.Len(t, p.consumerCluster.Identities.Objects(""), 1)
	require.Equal(t, []string{"kubeconfig-controlplane-cl-provider", "liqo-signed-nonce"}, secretNames(p.consumerCluster))

	cert, err := done.Kubeconfig.ClientCertificate()
	require.NoError(t, err)
	stored, err := p.consumerCluster.Keys.Get(ctx)
	require.NoError(t, err)
	if clusterKey != nil {
		require.True(t, keys.Equal(clusterKey.Public(), stored.Public()), "the cluster key is kept")
	}
	// Strict or not, the identity has a key of its own against a kubepact
	// provider, and a pending one is re-used.
	require.Equal(t, 1, p.consumerCluster.IdentityKeys.Len())
	require.False(t, keys.Equal(stored.Public(), cert.PublicKey), "the cluster key stays home")
	if idKey.Key != nil {
		require.True(t, keys.Equal(idKey.Key.Public(), cert.PublicKey), "the pending identity key is re-used")
	}
}

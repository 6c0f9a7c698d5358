package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubepact/kubepact/internal/testcluster"
)

// faultsUser is the user the controller runs as on the package's clusters.
const faultsUser = "system:serviceaccount:kubepact-system:kubepact-controller"

// TestLeaderKilledMidBurst runs two replicas of the kubepact-controller
// binary with the args of the Deployment config/ ships (leader election
// on, its lease timings), as its ServiceAccount, and starts the
// handshakes of -consumers consumers at once; when about half are
// accepted, the leader is killed with SIGKILL (no lease release), in two
// ways:
//
//   - container-restarted: restarted, as a kubelet restarts a container in
//     its Pod. The restarted process holds the Lease under the Pod's name,
//     so it leads again at once;
//   - pod-gone: never restarted, as when its node is lost. The standby
//     takes over once the Lease expires.
//
// Either way every handshake completes: none lost, each consumer with
// exactly the one CSR and the objects of a clean handshake (no Secret,
// binding, Tenant or CSR left half-made or made twice), no Tenant left
// without its certificate. The figures (time to take over and to finish,
// CSRs per Tenant) are logged; the times are held to generous bounds only.
func TestLeaderKilledMidBurst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin := buildShippedBinary(ctx, t)
	for _, tc := range []struct {
		name     string
		podGone  bool
		idSuffix string
	}{
		{name: "container-restarted", idSuffix: "r"},
		{name: "pod-gone", podGone: true, idSuffix: "g"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := peer{providerEnv, "cl-faults-leader-" + tc.idSuffix}
			forgetClusterID(t, p.side, []string{"--cluster-id=" + p.id})
			kubeconfig := serviceAccountKubeconfig(t, p.cluster)
			var replicas []*supervised
			for i := range 2 {
				args, _, _ := withPorts(t, append(shippedArgs(ctx, t), clusterArgs(t, p)...))
				replicas = append(replicas, supervise(t, fmt.Sprintf("replica-%d", i), bin, kubeconfig, args))
			}
			leader := leaderOf(t, replicas)
			standby := otherReplica(replicas, leader)

			b := newBurst(ctx, t, p.side)
			ref := p.id + "-ref"
			b.run(ctx, []string{ref}) // a clean handshake, the consumerShape of every other
			require.Equal(t, 1, b.acceptedCount(), "the reference handshake")
			b.reset()

			ids := faultConsumerIDs(p.id, *faultConsumers)
			var killedAt time.Time
			var acceptedAtKill int
			killed := make(chan error, 1)
			begin := time.Now()
			go b.whenHalfAccepted(ctx, len(ids), func() {
				killedAt, acceptedAtKill = time.Now(), b.acceptedCount()
				if tc.podGone {
					killed <- leader.killForGood()
				} else {
					killed <- leader.kill()
				}
			})
			b.run(ctx, ids)
			finished := b.lastAccepted()
			require.NoError(t, <-killed, "SIGKILL the leader mid-burst")

			var takeover time.Time
			var by string
			for _, r := range replicas {
				if a := r.acquiredAfter(killedAt); !a.IsZero() && (takeover.IsZero() || a.Before(takeover)) {
					takeover, by = a, r.name
				}
			}
			f := b.check(ctx, t, ref, ids)
			restarts := map[string]int{}
			for _, r := range replicas {
				restarts[r.name] = r.restartCount()
			}
			t.Logf("figures: consumers=%d accepted-at-kill=%d kill-after-s=%.1f takeover-by=%s takeover-s=%.1f finish-after-takeover-s=%.1f finish-after-kill-s=%.1f burst-s=%.1f csrs-per-consumer=%v misshapen=%d stuck=%d restarts=%v",
				len(ids), acceptedAtKill, killedAt.Sub(begin).Seconds(), by, takeover.Sub(killedAt).Seconds(), finished.Sub(takeover).Seconds(),
				finished.Sub(killedAt).Seconds(), finished.Sub(begin).Seconds(), f.csrs, len(f.misshapen), f.stuck, restarts)

			requireZeroGoals(t, f, 1)
			require.False(t, takeover.IsZero(), "a replica took over")
			wantRestarts := map[string]int{leader.name: 1, standby.name: 0}
			if tc.podGone {
				wantRestarts[leader.name] = 0
				assert.Equal(t, standby.name, by, "the standby took over")
			}
			assert.Equal(t, wantRestarts, restarts, "restarts: the killed leader's as its Pod's, the standby's none")
			// Goals: the lease taken over within LeaseDuration +
			// RetryPeriod, the handshakes finished within 5 s more.
			// Asserted with room for a busy machine; the figures above
			// are the measure.
			assert.Less(t, takeover.Sub(killedAt), 3*(shippedLeaseDuration+shippedRetryPeriod), "time to take over")
			assert.Less(t, finished.Sub(takeover), 2*time.Minute, "time from the take-over to the last handshake")
		})
	}
}

// TestAPIServerRestartMidBurst runs one replica of the kubepact-controller
// binary with the shipped args on a cluster of its own (config/ applied,
// and an audit log, which the package's clusters do not write), starts the
// handshakes of -consumers consumers at once, and when about half are
// accepted stops kube-apiserver and starts it again on the same etcd and
// port: at once (it is back within RenewDeadline: the leader rides it
// out), and after RenewDeadline + RetryPeriod (the leader cannot renew its
// lease and exits, as controller-runtime's manager does; it is restarted
// as a kubelet restarts a container, at once and then after 10 s, and the
// restarts are counted). Every handshake completes with the zero goals of
// TestLeaderKilledMidBurst, and after the restart each of the controller's
// informers lists its resource at most once in each process (audit log: a
// list, or a watch with sendInitialEvents, client-go's streaming list).
func TestAPIServerRestartMidBurst(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	bin := buildShippedBinary(ctx, t)
	c, err := testcluster.Start(ctx, testcluster.Options{Name: "apiserver-restart", AuditLog: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	s, err := newSide(ctx, c)
	require.NoError(t, err)
	const clusterID = "cl-faults-restart"
	b := newBurst(ctx, t, s)

	for _, tc := range []struct {
		name string
		down time.Duration // from the stop to the start
		exit bool          // whether the leader must lose its lease
	}{
		{"within-renew-deadline", 0, false},
		{"beyond-renew-deadline", shippedRenewDeadline + shippedRetryPeriod, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := peer{s, clusterID}
			args, _, _ := withPorts(t, append(shippedArgs(ctx, t), clusterArgs(t, p)...))
			replica := supervise(t, "replica", bin, serviceAccountKubeconfig(t, c), args)
			leaderOf(t, []*supervised{replica})

			b.reset()
			prefix := clusterID + "-" + strings.Split(tc.name, "-")[0]
			ref := prefix + "-ref"
			b.run(ctx, []string{ref})
			require.Equal(t, 1, b.acceptedCount(), "the reference handshake")
			b.reset()

			ids := faultConsumerIDs(prefix, *faultConsumers)
			var stoppedAt, backAt time.Time
			var auditFrom int64
			var acceptedAtStop int
			begin := time.Now()
			restarted := make(chan error, 1)
			go b.whenHalfAccepted(ctx, len(ids), func() {
				fi, err := os.Stat(c.AuditLogPath())
				if err != nil {
					restarted <- err
					return
				}
				auditFrom = fi.Size()
				stoppedAt, acceptedAtStop = time.Now(), b.acceptedCount()
				if err := c.StopAPIServer(); err != nil {
					restarted <- err
					return
				}
				time.Sleep(time.Until(stoppedAt.Add(tc.down)))
				err = c.StartAPIServer(ctx)
				backAt = time.Now()
				restarted <- err
			})
			b.run(ctx, ids)
			require.NoError(t, <-restarted, "the API server's restart")
			finished := b.lastAccepted()
			takeover := replica.acquiredAfter(stoppedAt)

			f := b.check(ctx, t, ref, ids)
			// The requests of the controller since the stop, from the
			// audit log, which records a watch when it ends: the replica
			// is stopped first. Each request is the process's that ran
			// when the API server received it (one clock: the same
			// machine). An informer's list is a watch with
			// sendInitialEvents=true (the streaming list client-go's
			// reflectors make with the WatchListClient feature, on by
			// default since 1.35) or a list with a resourceVersion (a
			// reflector's list, when it falls back to one). One the API
			// server refused (429 while its watch cache of a resource
			// initialises after the start) served nothing: the reflector
			// asks again, and that is its one list. Other lists are the
			// controller's own, made once as it starts (its cluster ID
			// record, the bindings of older versions it deletes).
			replica.stop()
			time.Sleep(2 * time.Second) // the API server logs the ended watches
			reqs := auditSince(t, c.AuditLogPath(), auditFrom, stoppedAt, faultsUser)
			byVerb, informerLists, refusedLists, otherLists := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int{}
			for _, r := range reqs {
				res := r.ObjectRef.Resource
				if r.ObjectRef.APIGroup != "" {
					res += "." + r.ObjectRef.APIGroup
				}
				byVerb[r.Verb+" "+res]++
				switch kind := listKind(r); {
				case kind == informerList && r.code() == http.StatusTooManyRequests:
					refusedLists[res]++
				case kind == informerList:
					informerLists[fmt.Sprintf("%s/process-%d", informerOf(r, res), replica.processAt(r.Received))]++
				case kind == directList:
					otherLists[res]++
				}
			}
			t.Logf("figures: consumers=%d accepted-at-stop=%d stop-after-s=%.1f down-s=%.1f lead-again-after-back-s=%.1f finish-after-back-s=%.1f burst-s=%.1f csrs-per-consumer=%v misshapen=%d stuck=%d restarts=%d exits=%q",
				len(ids), acceptedAtStop, stoppedAt.Sub(begin).Seconds(), backAt.Sub(stoppedAt).Seconds(), sinceOrZero(takeover, backAt),
				finished.Sub(backAt).Seconds(), finished.Sub(begin).Seconds(), f.csrs, len(f.misshapen), f.stuck, replica.restartCount(), replica.exitList())
			t.Logf("requests since the stop, by verb and resource: %v", faultCounts(byVerb))
			t.Logf("informer lists since the stop, by resource and process of the replica: %v", faultCounts(informerLists))
			t.Logf("informer lists refused (429) since the stop, by resource: %v", faultCounts(refusedLists))
			t.Logf("other lists since the stop, by resource: %v", faultCounts(otherLists))

			requireZeroGoals(t, f, 1)
			if tc.exit {
				require.False(t, takeover.IsZero(), "the replica leads again")
				require.GreaterOrEqual(t, replica.restartCount(), 1, "the leader exits when it cannot renew its lease")
				assert.Contains(t, replica.exitList()[0], "leader election lost", "the first exit is the lost lease")
			} else {
				assert.Zero(t, replica.restartCount(), "the leader rides out an API server back within RenewDeadline: exits %q", replica.exitList())
			}
			require.NotEmpty(t, informerLists, "the informers' lists are in the audit log")
			for res, n := range informerLists {
				assert.LessOrEqual(t, n, 1, "informer lists of %s after the restart", res)
				assert.NotContains(t, res, "process--1", "a list made when no process of the replica ran")
			}
			assert.Less(t, finished.Sub(backAt), 2*time.Minute, "time from the API server back to the last handshake")
		})
	}
}

// sinceOrZero returns the seconds from t0 to t, or 0 when t is zero.
func sinceOrZero(t, t0 time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return t.Sub(t0).Seconds()
}

// The kinds of list listKind tells apart.
const (
	notList = iota
	informerList
	directList
)

// informerOf names the informer that made the list r of resource res: the
// resource, its namespace when it lists one (the Secrets are watched one
// namespace at a time), and its field selector when it has one (the
// readiness check watches each peer ClusterRole by name, one informer
// each).
func informerOf(r auditRequest, res string) string {
	if ns := r.ObjectRef.Namespace; ns != "" {
		res = ns + "/" + res // one informer per namespace (Secrets: controllers.SecretScope)
	}
	u, err := url.Parse(r.RequestURI)
	if err != nil {
		return res
	}
	if sel := u.Query().Get("fieldSelector"); sel != "" {
		return res + "?fieldSelector=" + sel
	}
	return res
}

// listKind tells an informer's list (a watch with sendInitialEvents, or
// a list at a resourceVersion) from a client's own list, and both from
// any other request.
func listKind(r auditRequest) int {
	u, err := url.Parse(r.RequestURI)
	if err != nil {
		return notList
	}
	q := u.Query()
	switch {
	case r.Verb == "watch" && q.Get("sendInitialEvents") == "true":
		return informerList
	case r.Verb == "list" && q.Has("resourceVersion"):
		return informerList
	case r.Verb == "list":
		return directList
	}
	return notList
}

// faultCounts renders counts as "key=n" sorted by key.
func faultCounts(m map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return strings.Join(out, " ")
}

// otherReplica returns the replica of two that is not r.
func otherReplica(replicas []*supervised, r *supervised) *supervised {
	if replicas[0] == r {
		return replicas[1]
	}
	return replicas[0]
}

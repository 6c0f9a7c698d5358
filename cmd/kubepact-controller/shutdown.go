package main

import (
	"context"
	"errors"

	"github.com/go-logr/logr"
)

// stopLostLease is what controller-runtime's manager logs, as an error with
// a stack trace, when the leader election it releases on a requested stop
// (LeaderElectionReleaseOnCancel) reports the lease as lost: the lease was
// given up, not lost. No sentinel error exists for it, so the message is
// matched.
const (
	stopSequenceMsg = "error received after stop sequence was engaged"
	leaseLostErr    = "leader election lost"
)

// quietStop is the log sink of the manager and of client-go (klog): once
// ctx is done (SIGTERM), the lease released on the way out, and requests
// cut short by the stop (errors wrapping context.Canceled, such as a lease
// renewal in flight), are logged at info level, as the normal end of a
// stop; every other line, and the same errors while running, are logged as
// they come.
type quietStop struct {
	logr.LogSink
	ctx context.Context
}

func withQuietStop(ctx context.Context, l logr.Logger) logr.Logger {
	sink := l.GetSink()
	if cd, ok := sink.(logr.CallDepthLogSink); ok {
		sink = cd.WithCallDepth(1) // callers are one frame further out
	}
	return logr.New(quietStop{LogSink: sink, ctx: ctx})
}

func (q quietStop) Error(err error, msg string, kv ...any) {
	if q.ctx.Err() != nil && msg == stopSequenceMsg && err != nil && err.Error() == leaseLostErr {
		q.LogSink.Info(0, "leader election lease released on stop", kv...)
		return
	}
	if q.ctx.Err() != nil && errors.Is(err, context.Canceled) {
		q.LogSink.Info(0, msg, append(kv, "stopping", err.Error())...)
		return
	}
	q.LogSink.Error(err, msg, kv...)
}

func (q quietStop) WithValues(kv ...any) logr.LogSink {
	return quietStop{LogSink: q.LogSink.WithValues(kv...), ctx: q.ctx}
}

func (q quietStop) WithName(name string) logr.LogSink {
	return quietStop{LogSink: q.LogSink.WithName(name), ctx: q.ctx}
}

func (q quietStop) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := q.LogSink.(logr.CallDepthLogSink); ok {
		return quietStop{LogSink: cd.WithCallDepth(depth), ctx: q.ctx}
	}
	return q
}

package redisstore

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// WatchJob registers a waiter on job id before the caller queues it. When
// the shared subscription is already confirmed (every request after a
// process's first), nothing can finish the job unseen from here on, so Wait
// answers from the published record alone: a ?wait job costs no read of its
// record. Otherwise Wait falls back to WaitJob's read-then-wait.
func (s *Jobs) WatchJob(ctx context.Context, id string) (connector.JobWatch, error) {
	s.hub.start(s.bulk, s.prefix)
	w := &jobWatch{s: s, id: id, wake: s.hub.add(id)}
	w.confirmed = s.hub.subscribed() // after add: a message from here on reaches wake
	return w, nil
}

// jobWatch is WatchJob's connector.JobWatch.
type jobWatch struct {
	s         *Jobs
	id        string
	wake      chan *connector.Job
	confirmed bool // the subscription was confirmed when the waiter was added
}

func (w *jobWatch) Wait(ctx context.Context, last *connector.Job) (*connector.Job, error) {
	if !w.confirmed {
		return w.s.waitOn(ctx, w.id, w.wake, last)
	}
	select {
	case done := <-w.wake:
		if done != nil {
			return done, nil
		}
		// A record that did not decode, or a resubscription after a
		// reconnect (a finish may have been missed): read it.
		return w.s.waitOn(ctx, w.id, w.wake, last)
	case <-ctx.Done():
		return w.s.jobAfterWait(ctx, w.id, last)
	}
}

func (w *jobWatch) Stop() { w.s.hub.remove(w.id, w.wake) }

// finalReadTimeout bounds the fresh read WaitJob makes after ctx has ended.
const finalReadTimeout = 2 * time.Second

// WaitJob blocks until the job is finished or ctx ends.
//
// Waiters share the Store's one pattern subscription (waitHub). A waiter
// registers, makes sure the subscription is confirmed, and only then reads
// the job, so a finish that lands between the read and the wait cannot be
// missed; UpdateJob publishes on done:{id} in the transaction that finishes
// the job. No polling: the message carries the finished record (no second
// read), and the job is read again only when a message does not decode or
// the subscription was re-established after a reconnect.
//
// It returns (finished job, nil) when the job is or becomes finished. When ctx
// ends first it returns the job as it is then, read afresh, together with
// ctx.Err(), so a caller with a deadline can tell "not finished yet" from a
// result and still show the current state. An unknown id is ENOTFOUND.
func (s *Jobs) WaitJob(ctx context.Context, id string) (*connector.Job, error) {
	s.hub.start(s.bulk, s.prefix)
	wake := s.hub.add(id)
	defer s.hub.remove(id, wake)
	return s.waitOn(ctx, id, wake, nil)
}

// waitOn is WaitJob's loop over the registered waiter wake: read the job,
// then wait for its finish.
func (s *Jobs) waitOn(ctx context.Context, id string, wake chan *connector.Job, last *connector.Job) (*connector.Job, error) {
	for {
		subscribed := s.hub.subscribed()
		job, err := s.GetJob(ctx, id)
		if err != nil {
			if ctxEnded(ctx) != nil {
				return s.jobAfterWait(ctx, id, last)
			}
			return nil, err // Redis down or unknown job: no point waiting
		}
		if job.Status.Finished() {
			return job, nil
		}
		last = job
		woken := wake
		if !subscribed {
			// That read may predate the subscription: read again once it
			// is confirmed.
			woken = nil
		}
		select {
		case done := <-woken:
			if done != nil {
				return done, nil // the published record: no read needed
			}
		case <-s.hub.readyOrNil(subscribed):
		case <-ctx.Done():
			return s.jobAfterWait(ctx, id, last)
		}
	}
}

// jobAfterWait reads the job once more after ctx ended, on a short context of
// its own, and returns it with ctx's error. If that read fails the last job
// seen is returned instead.
func (s *Jobs) jobAfterWait(ctx context.Context, id string, last *connector.Job) (*connector.Job, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalReadTimeout)
	defer cancel()
	if job, err := s.GetJob(rctx, id); err == nil {
		return job, ctxEnded(ctx)
	}
	return last, ctxEnded(ctx)
}

// ctxEnded is ctx.Err(), or DeadlineExceeded once ctx's deadline has passed:
// the connection's read deadline, set from ctx, can fire a moment before
// ctx's own timer does.
func ctxEnded(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}

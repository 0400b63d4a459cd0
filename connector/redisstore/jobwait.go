package redisstore

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// The one wait on a finish, for jobs and batches alike: a waiter registers
// on the shared subscription (waitHub), makes sure it is confirmed, and only
// then reads the record, so a finish that lands between the read and the
// wait cannot be missed. A job's finish is published on done:{id} by the
// script that ends it, carrying the finished record (no second read); a
// batch's by the count of its last item's end (batchEndedScript), carrying
// nothing, so its waiter reads the batch once more. No polling: a record is
// read again only after a message, or after the subscription was
// re-established following a reconnect.

// finishRead is what waitFinish needs of one kind of record: a read of it
// (notYet true when it is not there yet, as a batch whose publication the
// sweeper still owes) and whether it is finished.
type finishRead[T any] struct {
	read     func(ctx context.Context) (rec T, notYet bool, err error)
	finished func(T) bool
	// published is the finished record a message carries, ok false when it
	// carries none (then the record is read again).
	published func(*connector.Job) (T, bool)
}

// waitFinish blocks until the record is finished or ctx ends, on the waiter
// wake registered on the hub for its id. It returns (finished, nil), or,
// when ctx ends first, the record as it is then, read afresh on a short
// context of its own (last when that read fails), with ctx's error: a
// caller with a deadline tells "not finished yet" from an answer and still
// shows the current state.
func waitFinish[T any](ctx context.Context, h *waitHub, wake chan *connector.Job, last T, r finishRead[T]) (T, error) {
	for {
		subscribed := h.subscribed()
		rec, notYet, err := r.read(ctx)
		if err != nil {
			if ctxEnded(ctx) != nil {
				return readAfterWait(ctx, r, last)
			}
			return rec, err // Redis down or unknown id: no point waiting
		}
		if !notYet {
			if r.finished(rec) {
				return rec, nil
			}
			last = rec
		}
		woken := wake
		if !subscribed {
			// That read may predate the subscription: read again once it
			// is confirmed.
			woken = nil
		}
		select {
		case done := <-woken:
			if rec, ok := r.published(done); ok {
				return rec, nil // the published record: no read needed
			}
		case <-h.readyOrNil(subscribed):
		case <-ctx.Done():
			return readAfterWait(ctx, r, last)
		}
	}
}

// finalReadTimeout bounds the fresh read a wait makes after ctx has ended.
const finalReadTimeout = 2 * time.Second

// readAfterWait reads the record once more after ctx ended and returns it
// with ctx's error; last when that read fails.
func readAfterWait[T any](ctx context.Context, r finishRead[T], last T) (T, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalReadTimeout)
	defer cancel()
	if rec, notYet, err := r.read(rctx); err == nil && !notYet {
		return rec, ctxEnded(ctx)
	}
	return last, ctxEnded(ctx)
}

// jobRead is waitFinish's view of job id.
func (s *Jobs) jobRead(id string) finishRead[*connector.Job] {
	return finishRead[*connector.Job]{
		read: func(ctx context.Context) (*connector.Job, bool, error) {
			job, err := s.Get(ctx, id)
			return job, false, err
		},
		finished:  func(j *connector.Job) bool { return j.Status.Finished() },
		published: func(j *connector.Job) (*connector.Job, bool) { return j, j != nil },
	}
}

// Watch registers a waiter on job id before the caller queues it. When
// the shared subscription is already confirmed (every request after a
// process's first), nothing can finish the job unseen from here on, so Wait
// answers from the published record alone: a ?wait job costs no read of its
// record. Otherwise its Wait falls back to Jobs.Wait's read-then-wait.
func (s *Jobs) Watch(ctx context.Context, id string) (connector.JobWatch, error) {
	s.hub.start()
	w := &jobWatch{s: s, id: id, wake: s.hub.add(id)}
	w.confirmed = s.hub.subscribed() // after add: a message from here on reaches wake
	return w, nil
}

// jobWatch is Watch's connector.JobWatch.
type jobWatch struct {
	s         *Jobs
	id        string
	wake      chan *connector.Job
	confirmed bool // the subscription was confirmed when the waiter was added
}

func (w *jobWatch) Wait(ctx context.Context, last *connector.Job) (*connector.Job, error) {
	r := w.s.jobRead(w.id)
	if !w.confirmed {
		return waitFinish(ctx, w.s.hub, w.wake, last, r)
	}
	select {
	case done := <-w.wake:
		if done != nil {
			return done, nil
		}
		// A record that did not decode, or a resubscription after a
		// reconnect (a finish may have been missed): read it.
		return waitFinish(ctx, w.s.hub, w.wake, last, r)
	case <-ctx.Done():
		return readAfterWait(ctx, r, last)
	}
}

func (w *jobWatch) Stop() { w.s.hub.remove(w.id, w.wake) }

// Wait blocks until the job is finished or ctx ends (waitFinish). An
// unknown id is ENOTFOUND.
func (s *Jobs) Wait(ctx context.Context, id string) (*connector.Job, error) {
	s.hub.start()
	wake := s.hub.add(id)
	defer s.hub.remove(id, wake)
	return waitFinish(ctx, s.hub, wake, nil, s.jobRead(id))
}

// Wait blocks until the batch is finished or ctx ends (waitFinish),
// starting from b as its request made it. A batch not found is not yet
// published: a made batch whose publication met a Redis hiccup is published
// by the sweeper or a retry, and its items are queued only after that, so
// its last item's end still publishes its finish.
func (s *Batches) Wait(ctx context.Context, b *connector.Batch) (*connector.Batch, error) {
	s.hub.start()
	wake := s.hub.add(b.ID)
	defer s.hub.remove(b.ID, wake)
	return waitFinish(ctx, s.hub, wake, b, finishRead[*connector.Batch]{
		read: func(ctx context.Context) (*connector.Batch, bool, error) {
			now, err := s.Get(ctx, b.ID)
			if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
				return nil, true, nil
			}
			return now, false, err
		},
		finished:  func(b *connector.Batch) bool { return b.Status == connector.BatchFinished },
		published: func(*connector.Job) (*connector.Batch, bool) { return nil, false },
	})
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

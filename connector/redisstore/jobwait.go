package redisstore

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// finalReadTimeout bounds the fresh read WaitJob makes after ctx has ended.
const finalReadTimeout = 2 * time.Second

// WaitJob blocks until the job is finished or ctx ends.
//
// It subscribes to done:{id} first and reads the job only once Redis has
// confirmed the subscription, so a finish that lands between the read and
// the wait cannot be missed; UpdateJob publishes on that channel in the
// transaction that finishes the job. No polling: it reads the job again only
// when a message arrives or the subscription is (re)confirmed.
//
// It returns (finished job, nil) when the job is or becomes finished. When ctx
// ends first it returns the job as it is then, read afresh, together with
// ctx.Err(), so a caller with a deadline can tell "not finished yet" from a
// result and still show the current state. An unknown id is ENOTFOUND; a
// subscription that breaks is EUNAVAILABLE.
func (s *Store) WaitJob(ctx context.Context, id string) (*connector.Job, error) {
	ps := s.rdb.Subscribe(ctx, s.doneChannel(id))
	defer ps.Close()
	// Receive only honours ctx deadlines; closing the subscription also
	// unblocks it when ctx is cancelled.
	stop := context.AfterFunc(ctx, func() { ps.Close() })
	defer stop()

	var last *connector.Job
	for {
		msg, err := ps.Receive(ctx)
		if err != nil {
			if ctxEnded(ctx) != nil {
				return s.jobAfterWait(ctx, id, last)
			}
			return nil, storageErr(err)
		}
		switch msg.(type) {
		case *redis.Subscription, *redis.Message:
			// Subscribed (first time, or again after a reconnect) or the job
			// finished: read it.
		default:
			continue
		}
		job, err := s.GetJob(ctx, id)
		if err != nil {
			if ctxEnded(ctx) != nil {
				return s.jobAfterWait(ctx, id, last)
			}
			return nil, err
		}
		if job.Status.Finished() {
			return job, nil
		}
		last = job
	}
}

// jobAfterWait reads the job once more after ctx ended, on a short context of
// its own, and returns it with ctx's error. If that read fails the last job
// seen is returned instead.
func (s *Store) jobAfterWait(ctx context.Context, id string, last *connector.Job) (*connector.Job, error) {
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

package server

import (
	"context"
	"errors"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Waiting for a finish, for ?wait on POST /v1/jobs and POST /v1/batches and
// for the MCP tools alike: the store's one wait (pub/sub on the finish,
// redisstore's waitFinish), bounded by the caller's wait.
//
// A request that waits for the job it makes watches it from before the
// job is queued (JobStore.Watch), so that waiting needs no read of the
// record: the finish is heard from the store's publication alone. The
// creation service's BeforeQueue starts the watch (jobWatch.beforeQueue),
// awaitJob waits on it, and the request stops it.

// jobWatch is a request's watch on the job it makes.
type jobWatch struct {
	jobs  JobStore
	ctx   context.Context
	id    string
	watch connector.JobWatch
}

// newJobWatch is a watch for a request that waits for its job; nil (no
// watch) when it does not wait.
func (s *Server) newJobWatch(ctx context.Context, wait time.Duration) *jobWatch {
	if wait <= 0 {
		return nil
	}
	return &jobWatch{jobs: s.cfg.Jobs, ctx: ctx}
}

// beforeQueue starts the watch on job id (app.JobRequest.BeforeQueue). A
// watch that cannot start only costs the read JobStore.Wait makes.
func (w *jobWatch) beforeQueue(id string) {
	w.stop() // an earlier job of this request (an adopted one) is not waited on
	w.id = id
	if watch, err := w.jobs.Watch(w.ctx, id); err == nil {
		w.watch = watch
	}
}

// on is the watch on job id, nil when there is none.
func (w *jobWatch) on(id string) connector.JobWatch {
	if w != nil && w.id == id {
		return w.watch
	}
	return nil
}

// stop ends the watch, if one started.
func (w *jobWatch) stop() {
	if w != nil && w.watch != nil {
		w.watch.Stop()
		w.watch = nil
	}
}

// awaitJob waits up to wait for an unfinished job, on the request's watch
// when it has one on this job, else on the store's wait, and returns the job
// as it is then. The error is ctx's when the caller went away, or the
// store's.
func (s *Server) awaitJob(ctx context.Context, job *connector.Job, w *jobWatch, wait time.Duration) (*connector.Job, error) {
	if job.Status.Finished() || wait <= 0 {
		return job, nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var waited *connector.Job
	var err error
	if watch := w.on(job.ID); watch != nil {
		waited, err = watch.Wait(wctx, job)
	} else {
		waited, err = s.cfg.Jobs.Wait(wctx, job.ID)
	}
	switch {
	case err == nil || errors.Is(err, context.DeadlineExceeded):
		if waited != nil {
			job = waited
		}
		return job, nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	return nil, err
}

// awaitBatch waits up to wait for the batch this request made to finish,
// and returns it as it is then (as it was made when it could not be read).
func (s *Server) awaitBatch(ctx context.Context, b *connector.Batch, wait time.Duration) (*connector.Batch, error) {
	if b.Status == connector.BatchFinished || wait <= 0 {
		return b, nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	now, err := s.cfg.Batches.Wait(wctx, b)
	switch {
	case err == nil || wctx.Err() != nil:
		if now != nil {
			b = now
		}
		return b, nil
	}
	return nil, err
}

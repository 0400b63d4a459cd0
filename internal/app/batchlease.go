package app

import (
	"context"
	"time"
)

// The making request's lease on its batch. Begun with the batch
// (BeginBatch), it is renewed while the request makes the batch and ends
// with the decision; only once it lapsed (the request died) may anyone
// else, a retry taking the key over or the worker's sweeper, decide the
// batch removed (RemoveLapsedBatch: a compare-and-set in the store). So a
// live request, however slow its items (a 1,000-item batch of big uploads
// to S3), never loses its batch to a timer.

// holdBatch renews the lease on batch id until the returned function is
// called (at the end of the making, which the renewing goroutine does not
// outlive), or until the lease is no longer held (decided, or lapsed).
func (s *JobService) holdBatch(ctx context.Context, id string) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(ended)
		t := time.NewTicker(s.batchRenewEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				held, err := s.cfg.Batches.RenewBatchLease(ctx, id)
				if err == nil && !held {
					return // decided; or lapsed, and the decision tells the request
				}
			}
		}
	}()
	return func() { close(done); <-ended }
}

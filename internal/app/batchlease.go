package app

import "context"

// The making request's lease on its batch. Begun with the batch
// (Begin), it is renewed while the request makes the batch and ends
// with the decision; only once it lapsed (the request died) may anyone
// else, a retry taking the key over or the worker's sweeper, decide the
// batch removed (RemoveLapsed: a compare-and-set in the store). So a
// live request, however slow its items (a 1,000-item batch of big uploads
// to S3), never loses its batch to a timer.

// holdBatch renews the lease on batch id until the returned function is
// called (at the end of the making, which the renewing goroutine does not
// outlive), or until the lease is no longer held (decided, or lapsed).
func (s *Maker) holdBatch(ctx context.Context, id string) (stop func()) {
	// Not held: decided; or lapsed, and the decision tells the request.
	return renewWhile(ctx, s.batchRenewEvery, func(ctx context.Context) (bool, error) {
		return s.cfg.Batches.RenewMakingLease(ctx, id)
	})
}

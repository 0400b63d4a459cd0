package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// A batch's items are ordinary compress jobs (connector/batch.go); the
// worker's share of a batch is counting them and, when the last one ends,
// queueing the one batch.finished event:
//
//	item starts (load)       → BatchItemStarted: counted processing
//	item ends (followUps)    → BatchItemEnded: counted completed or failed, once
//	last item ended     → fanOutBatch: the batch's callback and each hook
//	                      subscribed to batch.finished, as job events go
//	                      (same task type, schedule, signing; batchdeliver.go)
//
// Ends are counted by the first follow-up of a job's end (compress.go),
// which every end passes through and re-runs until it succeeds, so a
// worker killed between finishing a job and counting it counts it when
// the task runs again.

// batchItemStarted counts a batch item as processing. A failure only
// leaves it counted queued until it ends: it is logged, not retried.
func (w *Worker) batchItemStarted(ctx context.Context, log *slog.Logger, job *connector.Job) {
	if job.BatchID == "" || w.cfg.Batches == nil {
		return
	}
	if err := w.cfg.Batches.BatchItemStarted(ctx, job.BatchID, job.ID); err != nil && connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		log.Warn("could not count the batch item as started", "batch_id", job.BatchID, "err", err)
	}
}

// batchItemEnded counts a finished batch item and, when it was the last,
// queues the batch.finished deliveries. An error makes the caller retry,
// counting again being a no-op.
func (w *Worker) batchItemEnded(ctx context.Context, log *slog.Logger, job *connector.Job) error {
	if job.BatchID == "" || w.cfg.Batches == nil {
		return nil
	}
	var saved int64
	completed := job.Status == connector.StatusCompleted
	if completed && job.Result != nil {
		saved = job.Result.OriginalSize - job.Result.CompressedSize
	}
	finishedAt := time.Now()
	if job.FinishedAt != nil {
		finishedAt = *job.FinishedAt
	}
	due, err := w.cfg.Batches.BatchItemEnded(ctx, job.BatchID, job.ID, completed, saved, finishedAt)
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		log.Warn("the job's batch is gone; its end is not counted", "batch_id", job.BatchID)
		return nil
	case err != nil:
		log.Error("could not count the batch item's end", "batch_id", job.BatchID, "err", err)
		return err
	case !due:
		return nil
	}
	return w.fanOutBatch(ctx, log.With("batch_id", job.BatchID), job.BatchID)
}

// fanOutBatch queues a finished batch's batch.finished deliveries, then
// marks them queued; delivery ids make a second run a no-op.
func (w *Worker) fanOutBatch(ctx context.Context, log *slog.Logger, batchID string) error {
	b, err := w.cfg.Batches.GetBatch(ctx, batchID)
	if err != nil {
		return err
	}
	event := connector.EventBatchFinished
	if b.CallbackURL != "" {
		d := connector.Delivery{ID: connector.BatchCallbackDeliveryID(b.ID), BatchID: b.ID, Event: event}
		if err := w.queue.EnqueueDelivery(ctx, d); err != nil {
			log.Error("could not queue the batch callback delivery", "err", err)
			return err
		}
	}
	hooks, err := w.cfg.Hooks.ListHooks(ctx, b.Owner)
	if err != nil {
		return err
	}
	for _, h := range hooks {
		if !h.Matches(event) {
			continue
		}
		d := connector.Delivery{ID: connector.BatchHookDeliveryID(b.ID, h.ID), BatchID: b.ID, HookID: h.ID, Event: event}
		if err := w.queue.EnqueueDelivery(ctx, d); err != nil {
			log.Error("could not queue a batch hook delivery", "hook_id", h.ID, "err", err)
			return err
		}
	}
	log.Info("batch finished", "total", b.Counts.Total, "completed", b.Counts.Completed, "failed", b.Counts.Failed, "saved_bytes", b.SavedBytes)
	return w.cfg.Batches.BatchEventQueued(ctx, b.ID)
}

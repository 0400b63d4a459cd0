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
//	item starts (load)       → Batches.ItemStarted: counted processing
//	item ends (followUps)    → Batches.ItemEnded: counted completed or failed, once
//	last item ended          → fanOutBatch: batch.finished stored as a message
//	                           and delivered to the batch's callback and each
//	                           hook subscribed to it by the one delivery path
//	                           (deliver.go: endpoint policy, delivery log,
//	                           recovery, auto-disable, the hook cap)
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
	if err := w.cfg.Batches.ItemStarted(ctx, job.BatchID, job.ID); err != nil && connector.ErrorCodeOf(err) != connector.ENOTFOUND {
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
	due, err := w.cfg.Batches.ItemEnded(ctx, job.BatchID, job.ID, completed, saved, finishedAt)
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

// fanOutBatch stores a finished batch's batch.finished event as a message
// and queues its deliveries through the one delivery path (deliver.go), as
// a job's events go: the batch's callback, and each hook subscribed to it
// (at most MaxHooksPerKey; a disabled one is logged as not sent, for
// recovery). Then it marks the event queued. The message's id and the
// delivery ids are the batch's, so a second run makes the same ones.
func (w *Worker) fanOutBatch(ctx context.Context, log *slog.Logger, batchID string) error {
	msg, b, err := w.batchMessage(ctx, batchID)
	if err != nil {
		return err
	}
	_, err = w.fanOutEvent(ctx, log, eventFanOut{subject: subject{msg: msg}, event: msg.Type,
		callbackURL: b.CallbackURL, owner: b.Owner, delivery: func(hookID string) connector.Delivery {
			id := connector.BatchCallbackDeliveryID(b.ID)
			if hookID != "" {
				id = connector.BatchHookDeliveryID(b.ID, hookID)
			}
			return connector.Delivery{ID: id, MessageID: msg.ID, Owner: b.Owner, HookID: hookID, Event: msg.Type}
		}})
	if err != nil {
		return err
	}
	log.Info("batch finished", "total", b.Counts.Total, "completed", b.Counts.Completed, "failed", b.Counts.Failed, "saved_bytes", b.SavedBytes)
	return w.cfg.Batches.EventQueued(ctx, b.ID)
}

// batchMessage stores the batch.finished message of a finished batch: its
// body rendered once (every attempt sends the same), its callback URL
// beside it.
func (w *Worker) batchMessage(ctx context.Context, batchID string) (*connector.Message, *connector.Batch, error) {
	b, err := w.cfg.Batches.Get(ctx, batchID)
	if err != nil {
		return nil, nil, err
	}
	ev := w.view().BatchEvent(b)
	msg, err := connector.NewMessage(batchMessageID(b.ID), b.Owner, ev.Type, ev.Timestamp, ev.Data)
	if err != nil {
		return nil, nil, err
	}
	msg.BatchID, msg.CallbackURL = b.ID, b.CallbackURL
	if err := w.cfg.Hooks.PutMessage(ctx, msg); err != nil {
		return nil, nil, err
	}
	return msg, b, nil
}

// batchMessageID names a batch's batch.finished message.
func batchMessageID(batchID string) string { return "msg_" + batchID + "_batch" }

package worker

import (
	"context"
	"slices"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Batches that stopped counting. An item's end is counted by the run that
// ends it (batch.go); should that count meet a Redis outage and the run's
// task be lost with it, the batch would never finish and its
// batch.finished never fire. So the sweeper looks at each running batch
// once every runningAfter: every ended item whose end is not counted is
// counted now (counting is idempotent per job), which queues the event when
// it was the last. An item whose record is gone (lost in a Redis restart
// without persistence, or expired) never ends: once its batch's making
// ended (its items were all made visible before it was published) it is
// counted failed, once, like any other. A batch whose event is queued is
// forgotten.

// runningAfter is how often a running batch is looked at.
const runningAfter = time.Minute

// countMissedEnds looks at running batches last looked at before before.
func (w *Worker) countMissedEnds(ctx context.Context, before time.Time) {
	ids, err := w.cfg.Batches.Running(ctx, before, 100)
	if err != nil {
		return // Redis down: next time
	}
	for _, id := range ids {
		if err := w.countBatchEnds(ctx, id); err != nil {
			w.log.Warn("a running batch could not be looked at; next time", "batch_id", id, "err", err)
		}
	}
}

// countBatchEnds counts the ended items of batch id whose end was missed.
func (w *Worker) countBatchEnds(ctx context.Context, id string) error {
	b, err := w.cfg.Batches.Get(ctx, id)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return w.cfg.Batches.ForgetRunning(ctx, id)
	}
	if err != nil {
		return err
	}
	counted, queued, err := w.cfg.Batches.EndsCounted(ctx, id, b.JobIDs)
	if err != nil {
		return err
	}
	if queued {
		return w.cfg.Batches.ForgetRunning(ctx, id)
	}
	jobs, err := w.cfg.Batches.GetJobs(ctx, b.JobIDs)
	if err != nil {
		return err
	}
	var gone []int // items whose record is gone
	for i, job := range jobs {
		if job == nil {
			gone = append(gone, i)
		}
	}
	if len(gone) > 0 {
		ended, err := w.batchMakingEnded(ctx, id)
		if err != nil {
			return err
		}
		if !ended {
			gone = nil // not yet visible, maybe: looked at next time
		}
	}
	for _, i := range gone { // counted as a failed item that ended now
		jobs[i] = &connector.Job{ID: b.JobIDs[i], BatchID: id, Status: connector.StatusFailed}
	}
	var last *connector.Job // an ended item: counting it again asks whether the event is due
	for i, job := range jobs {
		if job == nil || !job.Status.Finished() {
			continue
		}
		last = job
		if counted[i] {
			continue
		}
		log := w.log.With("job_id", job.ID, "batch_id", id)
		if slices.Contains(gone, i) {
			log.Warn("counting a batch item whose record is gone as failed")
		} else {
			log.Warn("counting a batch item whose end was never counted")
		}
		if err := w.batchItemEnded(ctx, log, job); err != nil {
			return err
		}
	}
	if b.Status == connector.BatchFinished && last != nil {
		// Every end counted, the event not queued (its fan-out failed):
		// one more count of an ended item queues it.
		return w.batchItemEnded(ctx, w.log.With("batch_id", id), last)
	}
	return nil
}

// batchMakingEnded reports whether batch id's making ended: every item it
// has was made visible, so a record missing now is gone, not yet to come.
func (w *Worker) batchMakingEnded(ctx context.Context, id string) (bool, error) {
	rec, _, err := w.cfg.Batches.Making(ctx, id)
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		return true, nil // its decision forgotten, long after its end
	case err != nil:
		return false, err
	}
	return rec == nil, nil // done (or removed): its record dropped at the end
}

package worker

import (
	"context"
	"errors"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Content dedupe (connector/dedupe.go), the step of the job's life between
// "get input" and "record attempt": a job whose image its key had
// compressed already, with the same options, completes from that job's
// stored result, with no call and no charge.
//
//	look up or claim ─┬─ a source ──────────────► copy its file, complete (deduplicated_from)
//	                  ├─ claimed ───────────────► compress as always; the finish records it
//	                  └─ another job compresses ─► wait for it (DedupeWait), then take its result,
//	                                              or claim again if it failed
//
// Concurrent identical jobs: the first to claim the image calls the API,
// the others wait for its finish (pub/sub, no polling) and complete from
// it, so ten identical posts cost one credit. What still charges again,
// on purpose, and logged: a wait longer than DedupeWait (the claimant's
// call is slow or its worker died: the waiter compresses too, rather than
// hold a slot for longer), and a dedupe index that Redis cannot answer.
//
// The digest of a base64 or upload input was taken by the API as the body
// streamed in (job.Input.SHA256); of a URL input, by the fetcher as the
// body came, so URL jobs are deduplicated on the bytes, not on the URL.

// DedupeObserver is told of jobs completed from an earlier result; an
// Observer may implement it (metrics does).
type DedupeObserver interface {
	// JobDeduplicated: a job completed from an earlier job's result,
	// saving the credits a compression costs; waited tells whether it
	// waited for a concurrent identical job.
	JobDeduplicated(waited bool, creditsSaved int)
}

// dedupeRounds bounds the look-up, claim and wait rounds of one attempt:
// a claimant that fails frees the image for another, which may fail too.
const dedupeRounds = 4

// completeFromRepeat is the dedupe step. done is true when the job ended
// here (err is then compress's result); false means compress it.
func (w *Worker) completeFromRepeat(ctx context.Context, a *attempt, img *image) (done bool, err error) {
	if a.input.SHA256 == "" {
		a.input.SHA256 = img.sha256
	}
	idx := w.cfg.Dedupe
	k, ok := connector.DedupeKeyOf(&connector.Job{Owner: a.job.Owner, Input: *a.input, Transform: a.job.Transform})
	if idx == nil || !ok || !a.job.Deduplicates() {
		return false, nil
	}
	deadline := time.Now().Add(w.cfg.DedupeWait)
	waited := false
	for range dedupeRounds {
		source, holder, err := idx.EnterDedupe(ctx, k, a.jobID, w.cfg.DedupeLease)
		if err != nil {
			a.log.Warn("dedupe index unavailable; compressing without it", "err", err)
			return false, nil
		}
		if source == "" && holder == a.jobID {
			return false, nil // this job compresses the image; complete records it
		}
		from := source
		if source == "" {
			a.log.Debug("an identical job is being compressed; waiting for it", "holder", holder)
			waited = true
			if !w.waitForHolder(ctx, a, k, holder, deadline) {
				return false, nil
			}
			from = holder
		}
		if answer := w.repeatOf(ctx, a, k, from); answer != nil {
			return true, w.completeRepeat(ctx, a, answer, waited)
		}
	}
	a.log.Warn("no reusable result after several rounds of identical jobs; compressing")
	return false, nil
}

// waitForHolder waits until deadline for the job holding k's claim to
// finish. It reports whether to look again (the holder finished, or its
// claim was stale and is dropped); false means compress now.
func (w *Worker) waitForHolder(ctx context.Context, a *attempt, k connector.DedupeKey, holder string, deadline time.Time) bool {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	job, err := w.cfg.Jobs.WaitJob(wctx, holder)
	cancel()
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		// The claimant is gone (expired): its claim is stale.
		w.cfg.Dedupe.ReleaseDedupe(ctx, k, holder)
		return true
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		a.log.Warn("waited the longest allowed for an identical job being compressed; compressing this one too (charged)",
			"holder", holder, "waited", w.cfg.DedupeWait)
		return false
	case err != nil:
		a.log.Warn("could not wait for an identical job; compressing", "holder", holder, "err", err)
		return false
	case job.Status == connector.StatusFailed:
		// Its failure freed the image (or will: a claim a finished job
		// still holds is dropped here), so the next round claims it.
		w.cfg.Dedupe.ReleaseDedupe(ctx, k, holder)
	}
	return true
}

// repeatOf returns job from's result as this job's, its file copied to
// this job's own (so its link and life are this job's), or nil when from
// cannot serve: not the same key or image, not completed, or its file gone.
func (w *Worker) repeatOf(ctx context.Context, a *attempt, k connector.DedupeKey, from string) *connector.KeptAnswer {
	src, err := w.cfg.Jobs.GetJob(ctx, from)
	if err != nil || src.Owner != a.job.Owner || src.Input.SHA256 != k.SHA256 ||
		src.Status != connector.StatusCompleted || src.Result == nil {
		if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
			w.cfg.Dedupe.ForgetDedupe(ctx, k, from)
		}
		return nil
	}
	err = connector.CopyBlob(ctx, w.cfg.Blobs, connector.OutputBlobKey(from), connector.OutputBlobKey(a.jobID), w.cfg.ResultTTL)
	if err != nil {
		if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
			w.cfg.Dedupe.ForgetDedupe(ctx, k, from) // its file expired before its entry
		} else {
			a.log.Warn("could not copy an identical job's file; compressing", "source", from, "err", err)
		}
		return nil
	}
	result := *src.Result
	result.FileURL, result.CompressedData = "", ""
	result.Filename = filenameFor(a.input.Filename, result.MIMEType)
	origin := src.DeduplicatedFrom // the job that was charged, not a link of the chain
	if origin == "" {
		origin = src.ID
	}
	return &connector.KeptAnswer{Input: *a.input, Result: &result, DeduplicatedFrom: origin}
}

// completeRepeat completes the job from answer. A call recorded with the
// job's start (load) never happened: it is recorded as answered, so no
// re-run takes it for a charge.
func (w *Worker) completeRepeat(ctx context.Context, a *attempt, answer *connector.KeptAnswer, waited bool) error {
	if a.begun != nil {
		w.answered(ctx, a, a.begun.Calls)
		a.begun = nil
		a.calls = connector.Attempts{}
	}
	if err := w.complete(ctx, a, answer); err != nil {
		return err
	}
	if o, ok := w.obs.(DedupeObserver); ok {
		o.JobDeduplicated(waited, 1)
	}
	return nil
}

// finishRepeat records a finished job in the dedupe index: a completed
// job becomes the source of later identical jobs and frees its claim; a
// failed one frees its claim, so a waiting identical job compresses.
// Errors are logged: the claim expires on its own.
func (w *Worker) finishRepeat(ctx context.Context, a *attempt, job *connector.Job) {
	k, ok := connector.DedupeKeyOf(job)
	if w.cfg.Dedupe == nil || !ok || !job.Deduplicates() {
		return
	}
	var err error
	if job.Status == connector.StatusCompleted {
		err = w.cfg.Dedupe.FinishDedupe(ctx, k, job.ID, w.cfg.ResultTTL)
	} else {
		err = w.cfg.Dedupe.ReleaseDedupe(ctx, k, job.ID)
	}
	if err != nil {
		a.log.Warn("could not record the job in the dedupe index", "err", err)
	}
}

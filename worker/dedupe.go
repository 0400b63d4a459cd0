package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Content dedupe (connector/dedupe.go), the step of the job's life between
// "get input" and "begin call": a job whose image its key had compressed
// already, with the same options, completes from that job's stored
// result, with no call and no charge.
//
//	look up or claim ─┬─ a source ──────────────► copy its file, complete (deduplicated_from)
//	                  ├─ claimed ───────────────► compress as always; the end's follow-up records it
//	                  └─ another job compresses ─► wait for it (DedupeWait), then take its result,
//	                                              or claim again if it cannot serve (failed, expired)
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

// dedupeRounds bounds the look-up, claim and wait rounds of one run:
// a claimant that fails frees the image for another, which may fail too.
const dedupeRounds = 4

// repeatOf is the dedupe step: the answer of an identical job this one
// completes from (waited: after waiting for its call), or nil when this
// job is to be compressed.
func (w *Worker) repeatOf(ctx context.Context, r *run, img *image) (answer *connector.KeptAnswer, waited bool) {
	if r.input.SHA256 == "" {
		r.input.SHA256 = img.sha256
	}
	idx := w.cfg.Dedupe
	k, ok := connector.DedupeKeyOf(&connector.Job{Owner: r.job.Owner, Input: *r.input, Transform: r.job.Transform})
	if idx == nil || !ok || !r.job.Deduplicates() {
		return nil, false
	}
	deadline := time.Now().Add(w.cfg.DedupeWait)
	for range dedupeRounds {
		source, holder, err := idx.Enter(ctx, k, r.jobID, w.cfg.DedupeLease)
		if err != nil {
			r.log.Warn("dedupe index unavailable; compressing without it", "err", err)
			return nil, false
		}
		if source == "" && holder == r.jobID {
			return nil, false // this job compresses the image; its end's follow-up records it
		}
		from := source
		if source == "" {
			r.log.Debug("an identical job is being compressed; waiting for it", "holder", holder)
			waited = true
			if !w.waitForHolder(ctx, r, holder, deadline) {
				return nil, false
			}
			from = holder
		}
		if answer := w.sourceAnswer(ctx, r, k, from); answer != nil {
			return answer, waited
		}
	}
	r.log.Warn("no reusable result after several rounds of identical jobs; compressing")
	return nil, false
}

// waitForHolder waits until deadline for the job holding the claim to
// finish. It reports whether to look again (the holder finished, or is
// gone); false means compress now.
func (w *Worker) waitForHolder(ctx context.Context, r *run, holder string, deadline time.Time) bool {
	wctx, cancel := context.WithDeadline(ctx, deadline)
	_, err := w.cfg.Jobs.Wait(wctx, holder)
	cancel()
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		return true // the claimant's record expired (sourceAnswer forgets its claim)
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		r.log.Warn("waited the longest allowed for an identical job being compressed; compressing this one too (charged)",
			"holder", holder, "waited", w.cfg.DedupeWait)
		return false
	case err != nil:
		r.log.Warn("could not wait for an identical job; compressing", "holder", holder, "err", err)
		return false
	}
	return true
}

// sourceAnswer returns job from's result as this job's, its file copied to
// this job's own (so its link and life are this job's), or nil when from
// cannot serve. One that never will (not the same key or image, not
// completed, or its record or file gone) is forgotten: its entry and its
// claim (a failed job's, or a completed one's left to expire), so that the
// next round claims the image.
func (w *Worker) sourceAnswer(ctx context.Context, r *run, k connector.DedupeKey, from string) *connector.KeptAnswer {
	src, err := w.cfg.Jobs.Get(ctx, from)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND || err == nil && (src.Owner != r.job.Owner ||
		src.Input.SHA256 != k.SHA256 || src.Status != connector.StatusCompleted || src.Result == nil) {
		w.cfg.Dedupe.Forget(ctx, k, from)
		return nil
	}
	if err != nil {
		return nil
	}
	err = connector.CopyBlob(ctx, w.cfg.Blobs, connector.OutputBlobKey(from), connector.OutputBlobKey(r.jobID), w.cfg.ResultTTL)
	if err != nil {
		if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
			w.cfg.Dedupe.Forget(ctx, k, from) // its file expired before its entry
		} else {
			r.log.Warn("could not copy an identical job's file; compressing", "source", from, "err", err)
		}
		return nil
	}
	result := *src.Result
	result.FileURL, result.CompressedData = "", ""
	// The source's balance is the account's then; a repeat reports now's
	// (repeatbalance.go), or none when it cannot be read.
	result.CreditsRemaining = w.repeatBalance(ctx, r)
	result.Filename = filenameFor(r.input.Filename, result.MIMEType)
	origin := src.DeduplicatedFrom // the job that was charged, not a link of the chain
	if origin == "" {
		origin = src.ID
	}
	return &connector.KeptAnswer{Input: *r.input, Result: &result, DeduplicatedFrom: origin}
}

// recordDedupeSource, a follow-up of a job's end, records the job in the
// dedupe index: a completed job becomes the source of later identical
// jobs (its claim, which the source outranks, is left to expire unless it
// could outlive the source); a failed one frees its claim, so a waiting
// identical job compresses. Errors are logged: the claim expires on its
// own.
func (w *Worker) recordDedupeSource(ctx context.Context, log *slog.Logger, job *connector.Job) {
	k, ok := connector.DedupeKeyOf(job)
	if w.cfg.Dedupe == nil || !ok || !job.Deduplicates() {
		return
	}
	var err error
	if job.Status == connector.StatusCompleted {
		// As long as its file lives: a follow-up run again long after the
		// end (a duplicate task) must not outlast it.
		life := w.cfg.ResultTTL
		if job.FinishedAt != nil {
			life = time.Until(job.FinishedAt.Add(w.cfg.ResultTTL))
		}
		if life <= 0 {
			return
		}
		err = w.cfg.Dedupe.Finish(ctx, k, job.ID, life)
		if err == nil && life < w.cfg.DedupeLease {
			// The claim would name this job after its file is gone.
			err = w.cfg.Dedupe.Release(ctx, k, job.ID)
		}
	} else {
		err = w.cfg.Dedupe.Release(ctx, k, job.ID)
	}
	if err != nil {
		log.Warn("could not record the job in the dedupe index", "err", err)
	}
}

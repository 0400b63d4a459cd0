package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
)

// The compress handler is the billing path: the compression API charges a
// credit for every 200, so this file is written as the job's life, in
// order (design §2, steps 4–7), as River's executor is: the run returns an
// outcome, and one report writes it.
//
//	execute: load → start the run → get input → dedupe → begin call → call → keep answer
//	         ⇒ outcome: completed (with the answer), erred, nothing to do, or ended already
//	report:  the retry policy (erred: retry, or failed) → end the job: ONE write, under
//	         the run guard → follow-ups in order: batch count, dedupe source, fan-out
//
// The end is conditioned on the run that started it (connector.JobRuns.
// Finish, a compare-and-set on the run number Job.Runs): runs may
// overlap (a handler outlives asynq's cancellation; recover.go requeues a
// task whose lease lapsed), and a stale run never overwrites a live one's
// end. A stale run's charged answer is not dropped: it is kept in the call
// record, where the live run finds it (a failure yields to it, in the same
// write). The follow-ups are idempotent and run again whenever a run finds
// the job ended, so a worker killed after the end loses none.
//
// The job is charged once:
//
//   - every call of a job carries the same Idempotency-Key (the job id). An
//     upstream that honours it (fixtures/upstream/README.md) compresses and
//     charges the key once, and answers a repeat with the first answer, so
//     a call whose answer was lost (the worker killed mid-call, the task
//     run again after its lease ran out) costs nothing more when it is
//     made again;
//   - "begin call" writes, before each call, a durable call record
//     (connector.CallRecord); an answer is recorded right after it comes,
//     so a re-run knows what every earlier call got;
//   - "keep answer" records a 200 with its result and bytes before
//     anything else; a re-run that finds it stores it and never calls again;
//   - keeping and storing are retried where they stand (retryInPlace) until
//     the task's deadline, never by a new run.
//
// Against an upstream that ignores Idempotency-Key (its answers do not echo
// it), what can still charge twice is a call that began and has no recorded
// answer: the worker was killed between sending the image and keeping the
// answer, or the call timed out. Nothing can tell whether the API charged
// it, so the re-run goes ahead and the job says so: charge_uncertain, and
// the metric imgflow_upstream_charge_uncertain_total. With an upstream that
// echoes the key, the re-run's answer settles it, and the job is not
// flagged.

// errCrash is what a test's crash hook returns: the run stops right there,
// recording nothing, as a killed worker would.
var errCrash = errors.New("worker crashed (test)")

// run is one run of a compress task: what its steps learn on the way.
type run struct {
	jobID string
	log   *slog.Logger
	// number is the run's number, Job.Runs as the run's start wrote it
	// (or as load found it, when no run was started): the guard of the
	// job's end.
	number int
	// started: the run's start was written (number is this run's own);
	// otherwise number is the last run's, which may still be live.
	started bool
	job     *connector.Job
	// input is the job's input as its bytes told, once they came.
	input *connector.JobInput
	// calls is the job's call record as this run last saw it.
	calls connector.CallRecord
	// unanswered: an earlier call got no recorded answer, so it may have
	// been charged; the answer of this run's call settles it.
	unanswered bool
	// uncertain: an earlier call may have been charged without an answer,
	// and the upstream does not honour Idempotency-Key.
	uncertain bool
	// opened is the input blob, opened with the job's read; nil when there
	// is none or getInput took it.
	opened *connector.Blob
	// begun is the call record when the run's start also began the call
	// (a first run with its input open); beginCall then takes it.
	begun *connector.CallRecord
	// variantMade: the image is a set's variant the set step resized and
	// converted already (variantset.go).
	variantMade bool
	// keeping is the charged answer that the job's end keeps in the same
	// write (connector.KeepFinisher); nil once kept, or when keep wrote it.
	keeping *pendingKeep
}

// pendingKeep is a charged answer the job's end is to keep.
type pendingKeep struct {
	call   int
	answer *connector.KeptAnswer
	data   connector.Bytes
}

// close releases what the run still holds.
func (r *run) close() {
	if r.opened != nil {
		r.opened.Close()
	}
}

// outcome is what a run's life came to; report writes it.
type outcome struct {
	kind outcomeKind
	// answer is a completed job's answer; nil when its result is stored.
	answer *connector.KeptAnswer
	// repeat: the answer is an identical job's (dedupe); waited says the
	// run waited for that job's call.
	repeat, waited bool
	// cause is why the run erred (and, once the retry policy makes it final, why it failed).
	cause error
}

type outcomeKind int

const (
	completed    outcomeKind = iota // the answer is the job's result
	erred                           // a step failed: the retry policy says retry or fail
	failed                          // the job fails with cause, for good
	nothingToDo                     // the job is gone, or another run has it
	endedAlready                    // the job has ended: only its follow-ups are left
	crashed                         // a test's crash hook stopped the run
)

// completedWith is a completed outcome with answer (nil: the result is
// stored already).
func completedWith(answer *connector.KeptAnswer) outcome {
	return outcome{kind: completed, answer: answer}
}

// erredWith is the outcome of a step that failed with err (a test's crash
// stops the run instead).
func erredWith(err error) outcome {
	if errors.Is(err, errCrash) {
		return outcome{kind: crashed}
	}
	return outcome{kind: erred, cause: err}
}

// handleCompress runs one run of a compress job: its life, then the report
// of its outcome.
func (w *Worker) handleCompress(ctx context.Context, t *asynq.Task) error {
	growStack()
	var p compressPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.JobID == "" {
		w.log.Error("compress task with a bad payload, dropped", "job_id", "", "err", err)
		return fmt.Errorf("bad payload: %w", asynq.SkipRetry)
	}
	r := &run{jobID: p.JobID, log: w.log.With("job_id", p.JobID)}
	defer r.close()
	return w.report(ctx, r, w.execute(ctx, r))
}

// execute is the job's life, up to its outcome. It writes nothing that ends
// the job: report does.
func (w *Worker) execute(ctx context.Context, r *run) outcome {
	if out, working := w.load(ctx, r); !working {
		return out
	}
	if r.calls.Kept != nil {
		r.log.Info("an earlier run kept the charged answer: storing it without calling the upstream")
		return completedWith(r.calls.Kept)
	}
	// From here on a step that asynq's lease loss interrupted could waste a
	// charged answer: the rest runs until the task's deadline, whatever
	// asynq cancels.
	ctx, cancel := untilDeadline(ctx)
	defer cancel()
	img, input, err := w.getInput(ctx, r)
	if err != nil {
		w.callNotMade(ctx, r)
		return erredWith(err)
	}
	defer img.Close()
	r.input = &input
	if answer, waited := w.repeatOf(ctx, r, img); answer != nil { // dedupe.go
		w.callNotMade(ctx, r)
		return outcome{kind: completed, answer: answer, repeat: true, waited: waited}
	}
	if img, input, err = w.transform(ctx, r, img, input); err != nil { // transform.go
		return erredWith(err)
	}
	call, err := w.beginCall(ctx, r)
	if err != nil {
		return erredWith(err)
	}
	c, err := w.call(ctx, r, call, img, input)
	if err != nil {
		return erredWith(err)
	}
	restoreMetadata(r, img, input, c) // transform.go
	w.fitAnswer(ctx, r, img, c)       // fit.go
	if err := w.crashAt("answered", r.jobID); err != nil {
		return erredWith(err)
	}
	answer, err := w.keep(ctx, r, call, input, img.mimeType, c)
	if err != nil {
		return erredWith(err)
	}
	if err := w.crashAt("kept", r.jobID); err != nil {
		return erredWith(err)
	}
	return completedWith(answer)
}

// load reads the job and its call record and starts a run (the job
// processing, its run number raised) when work remains: working is true
// then. Otherwise out is the run's outcome already.
func (w *Worker) load(ctx context.Context, r *run) (out outcome, working bool) {
	job, input, fromRecord, err := w.openJob(ctx, r.jobID)
	r.opened = input
	if err == nil {
		r.job, r.number = job, job.Runs // the guard of an end written before the start
	}
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		r.log.Warn("compress task for an unknown or expired job, dropped")
		return outcome{kind: nothingToDo}, false
	case err != nil:
		return erredWith(err), false
	case job.Status.Finished():
		// A duplicate or a retry after the job ended: only make sure its
		// follow-ups ran (each is idempotent).
		r.log.Info("job already finished, ensuring its follow-ups", "status", job.Status)
		r.job = job
		return outcome{kind: endedAlready}, false
	case job.Runs >= w.cfg.MaxCompressRetries+3:
		// Runs that ended without a word (a worker killed each time, tasks
		// requeued by recover.go) do not count as asynq retries: stop a job
		// that keeps killing its workers here.
		r.job, r.number = job, job.Runs
		return erredWith(&connector.Error{Code: connector.EINTERNAL,
			Message: fmt.Sprintf("The job was interrupted %d times (worker restarts) and was given up", job.Runs)}), false
	}
	if job.Runs > 0 {
		// A re-run: what did the earlier calls get? (A first run has no
		// record; skipping the read saves a round trip per job.)
		if r.calls, err = w.cfg.Runs.Calls(ctx, r.jobID); err != nil {
			return erredWith(err), false
		}
	}
	// A first run whose input is open already has nothing left to fail
	// before the call, so its call is begun with the start; one started
	// from its dispatched record opens its input beside the start.
	beginCall := job.Runs == 0 && r.opened != nil
	var rec connector.CallRecord
	if fromRecord {
		beginCall = job.Runs == 0 && storedInput(job)
		job, rec, r.opened, err = w.startOpening(ctx, r.jobID, beginCall)
	} else {
		job, rec, err = w.cfg.Runs.Start(ctx, r.jobID, startRun, beginCall)
	}
	if errors.Is(err, connector.ErrJobFinished) || connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return outcome{kind: nothingToDo}, false // finished or expired meanwhile
	}
	if err != nil {
		return erredWith(err), false
	}
	if beginCall {
		r.begun = &rec
	}
	r.job, r.number, r.started = job, job.Runs, true
	w.obs.JobStarted(time.Since(job.CreatedAt))
	w.batchItemStarted(ctx, r.log, job) // a batch's item: counted processing (batch.go)
	return outcome{}, true
}

// openJob reads the job, and its input when the store opens it with the
// read (OpenJob); or, for a job whose dispatch read its record
// (dispatchedRecord), decodes that record with no read at all (fromRecord:
// the input is opened beside the start then, startOpening).
func (w *Worker) openJob(ctx context.Context, id string) (job *connector.Job, input *connector.Blob, fromRecord bool, err error) {
	if record := dispatchedRecord(ctx); record != nil {
		if opener, ok := w.cfg.Runs.(connector.RecordOpener); ok {
			job, err = opener.OpenRecord(id, record)
			return job, nil, err == nil, err
		}
	}
	job, input, err = w.cfg.Runs.OpenJob(ctx, id)
	return job, input, false, err
}

// startOpening starts the run of a job opened from its record and opens
// its input at the same time: on one client the two go in one write (the
// store's autopipeliner), a round trip for both.
func (w *Worker) startOpening(ctx context.Context, id string, beginCall bool) (*connector.Job, connector.CallRecord, *connector.Blob, error) {
	opener := w.cfg.Runs.(connector.RecordOpener)
	var input *connector.Blob
	opened := make(chan struct{})
	go func() {
		defer close(opened)
		input, _ = opener.OpenInput(ctx, id) // nil: getInput opens it, and says why it cannot
	}()
	job, rec, err := w.cfg.Runs.Start(ctx, id, startRun, beginCall)
	<-opened
	return job, rec, input, err
}

// storedInput says whether the job's input is a blob of its own (base64 or
// an upload), which its start opens; not a URL, nor a set's variant (the
// set step reads its source).
func storedInput(j *connector.Job) bool {
	return j.Input.Kind != connector.InputURL && j.Variant == ""
}

// startRun is the write that starts a run: the job processing, its run
// number raised.
func startRun(j *connector.Job) error {
	if j.Status.Finished() {
		return connector.ErrJobFinished
	}
	now := time.Now().UTC()
	j.Status = connector.StatusProcessing
	if j.StartedAt == nil {
		j.StartedAt = &now
	}
	j.Runs++
	return nil
}

// getInput returns the job's image and its input record, completed with
// what the bytes tell (size, type, a filename for the upstream). An upload
// streams from the blob store while the call sends it: the caller closes it.
func (w *Worker) getInput(ctx context.Context, r *run) (*image, connector.JobInput, error) {
	job := r.job
	if job.Variant != "" && job.BatchID != "" {
		return w.variantInput(ctx, r) // a set's variant: the set step (variantset.go)
	}
	in := job.Input
	var img *image
	if in.Kind == connector.InputURL {
		fetched, err := w.cfg.Fetcher.FetchImage(ctx, in.URL)
		if err != nil {
			return nil, in, err
		}
		if in.Filename == "" {
			in.Filename = fetched.Filename
		}
		img = fetchedImage(fetched)
	} else {
		var err error
		opened := r.opened
		r.opened = nil // the image owns it now
		if img, err = openStoredImage(ctx, w.cfg.Blobs, job.ID, opened); err != nil {
			return nil, in, err
		}
	}
	if img.mimeType == "" {
		img.mimeType = in.MIMEType
	}
	in.Size = img.size
	in.MIMEType = img.mimeType
	in.Filename = filenameFor(in.Filename, img.mimeType)
	return img, in, nil
}

// beginCall writes, before the call, that a call is about to be made, and
// returns its number. If an earlier call has no recorded answer, it may
// have been charged: this call goes ahead with the same Idempotency-Key,
// and its answer tells whether the upstream made that safe (call).
func (w *Worker) beginCall(ctx context.Context, r *run) (call int, err error) {
	var rec connector.CallRecord
	if r.begun != nil {
		rec, r.begun = *r.begun, nil // begun with the run's start (load)
	} else if rec, err = w.cfg.Runs.BeginCall(ctx, r.jobID, r.number); err != nil {
		return 0, err // nothing was sent: a retry is free
	}
	r.calls = rec
	if earlier := rec.Unanswered() - 1; earlier > 0 {
		r.unanswered = true
		r.log.Info("an earlier upstream call never got an answer; calling again with the same Idempotency-Key",
			"upstream_calls", rec.Calls, "unanswered_before", earlier)
	}
	return rec.Calls, nil
}

// callNotMade records the call begun with the run's start as answered when
// the run ends before making it (its input failed, or an identical job's
// result served), so that no re-run takes it for a charge.
func (w *Worker) callNotMade(ctx context.Context, r *run) {
	if r.begun == nil {
		return
	}
	w.answered(ctx, r, r.begun.Calls)
	r.begun = nil
	r.calls = connector.CallRecord{}
}

// call sends the image to the compression API. Any answer but a 200 (and a
// failure that sent nothing) is recorded as answered, since it cost
// nothing; a 200 is recorded by keep. A 200 whose body could not be read
// whole or parsed was charged with its answer lost: it stays unanswered,
// like a call cut off before its status, so the next run's call with the
// same Idempotency-Key replays it, or the job says its charge is uncertain.
func (w *Worker) call(ctx context.Context, r *run, call int, img *image, in connector.JobInput) (*connector.Compressed, error) {
	apiKey, err := w.cfg.Keyring.Open(r.job.SealedKey)
	if err != nil {
		r.log.Error("sealed API key does not open: is IMGFLOW_SECRET the server's?", "err", err)
		w.answered(ctx, r, call)
		return nil, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	// Debug: a job's one Info line is its outcome (completed, failed), so
	// a busy worker writes one log line per job; operators and the fault
	// suite follow calls with this one.
	r.log.Debug("compressing", "run", r.number, "call", call, "input", in.Kind, "size", in.Size)
	start := time.Now()
	// The input keeps its own name; the upstream is sent the image's, with
	// its type's extension (a HEIC input goes as a JPEG).
	c, err := w.cfg.Compressor.Compress(ctx, apiKey, r.jobID, img, filenameFor(in.Filename, img.mimeType))
	w.balances.charged(r.job.Owner, time.Now()) // repeatbalance.go
	status := 200
	if err != nil {
		status = connector.AsError(err).UpstreamStatus
	}
	w.obs.UpstreamCall(status, time.Since(start))
	if err == nil {
		w.settleUnanswered(r, c)
	}
	if err != nil && img.readErr != nil {
		// The blob store failed while the image streamed out: the API got
		// a cut-off body (no closing boundary), which it can neither
		// compress nor charge for, whatever it answered to it.
		r.log.Warn("the stored image could not be read while it was sent", "err", img.readErr)
		w.answered(ctx, r, call)
		return nil, storedImageError(img.readErr)
	}
	if err != nil {
		r.log.Warn("upstream call failed", "upstream_status", status, "code", connector.ErrorCodeOf(err), "err", err)
		if (status != 0 && status != 200) || nothingSent(err) {
			w.answered(ctx, r, call)
		}
		return nil, err
	}
	r.log.Debug("compressed", "upstream_job_id", c.UpstreamJobID, "original_size", c.OriginalSize, "compressed_size", c.CompressedSize, "took", time.Since(start))
	return c, nil
}

// settleUnanswered decides, from this call's 200 (c nil: the job fails
// without one), whether an earlier unanswered call may have been charged on
// top of it: not when the upstream echoed the call's Idempotency-Key, since
// it then charges the key once whichever call got through. Any other
// outcome leaves the doubt, and the job says charge_uncertain.
func (w *Worker) settleUnanswered(r *run, c *connector.Compressed) {
	if !r.unanswered || r.uncertain {
		return
	}
	if c != nil && c.IdempotencyHonoured {
		r.log.Info("the upstream honoured the Idempotency-Key: the earlier unanswered call cost nothing more", "replayed", c.Replayed)
		return
	}
	r.uncertain = true
	w.obs.ChargeUncertain()
	r.log.Warn("an earlier upstream call never got an answer and may have been charged; the upstream does not confirm Idempotency-Key")
}

// answered records that call got an answer that cost nothing, retried in
// place through a Redis outage. If it still fails, a later run counts the
// call as possibly charged: a false alarm, never a missed one.
func (w *Worker) answered(ctx context.Context, r *run, call int) {
	err := retryInPlace(ctx, func() error { return w.cfg.Runs.AnswerCall(ctx, r.jobID, call) })
	if err != nil {
		r.log.Warn("could not record the upstream's answer; a re-run will flag the charge as uncertain", "err", err)
		return
	}
	r.calls.Answered++
}

// nothingSent reports whether a failed call never reached the API (the
// connection was refused), so it cannot have been charged.
func nothingSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// keep makes the charged answer durable before anything else: the
// compressed bytes, then the answer in the call record. Redis hiccups are
// retried here until the task's deadline, never by calling again. On a
// store that keeps and finishes in one write (connector.KeepFinisher) the
// answer is left to the job's end instead, the next write (endKept).
func (w *Worker) keep(ctx context.Context, r *run, call int, in connector.JobInput, inputType string, c *connector.Compressed) (*connector.KeptAnswer, error) {
	mime := connector.SniffBytes(c.Data)
	if mime == "" {
		mime = inputType // the output has the input's format
	}
	answer := &connector.KeptAnswer{Input: in, Result: &connector.JobResult{
		OriginalSize:     c.OriginalSize,
		CompressedSize:   c.CompressedSize,
		CompressionRatio: c.CompressionRatio,
		CreditsRemaining: c.CreditsRemaining,
		MIMEType:         mime,
		Filename:         filenameFor(in.Filename, mime),
		UpstreamJobID:    c.UpstreamJobID,
	}}
	if c.Width > 0 { // a transformed image (transform.go)
		answer.Result.Type, answer.Result.Width, answer.Result.Height = mime, c.Width, c.Height
	}
	answer.Result.Quality, answer.Result.Colours, answer.Result.Score = c.Quality, c.Colours, c.Score
	if answer.Result.CompressedSize == 0 {
		answer.Result.CompressedSize = c.Data.Size()
	}
	if _, ok := w.cfg.Runs.(connector.KeepFinisher); ok && w.crashHook == nil {
		// Nothing runs between this keep and the job's end (report): the
		// end's write keeps the answer (end). A test's crash hook wants the
		// two steps apart, to stop between them.
		r.keeping = &pendingKeep{call: call, answer: answer, data: c.Data}
		return answer, nil
	}
	err := retryInPlace(ctx, func() error {
		return w.cfg.Runs.KeepAnswer(ctx, r.jobID, call, answer, c.Data, w.cfg.ResultTTL)
	})
	if err != nil {
		// The task's deadline passed with Redis still down: the answer is
		// lost, and a re-run will call (and be charged) again.
		r.log.Error("charged, but could not keep the answer before the task's deadline", "err", err)
		return nil, err
	}
	r.calls.Answered++
	return answer, nil
}

// report writes the run's outcome, as River's executor reports a job's:
// the retry policy first (an erred run is retried by asynq, or fails the
// job), then the job's one end, written under the run guard, then its
// follow-ups. The error returned tells asynq what to do with the task.
func (w *Worker) report(ctx context.Context, r *run, out outcome) error {
	switch out.kind {
	case nothingToDo:
		return nil
	case crashed:
		return errCrash
	case erred:
		if retry := w.retryOrFail(ctx, r, &out); retry {
			return out.cause
		}
	}
	ctx, cancel := untilDeadline(ctx)
	defer cancel()
	job, hooks := r.job, connector.HooksUnknown
	if out.kind != endedAlready {
		var err error
		if job, hooks, err = w.end(ctx, r, &out); err != nil {
			return w.endRefused(r, out, err)
		}
		if err := w.crashAt("stored", r.jobID); err != nil {
			return err
		}
	}
	if err := w.followUps(ctx, r, job, hooks); err != nil {
		return err
	}
	if out.kind == failed {
		if connector.ErrorCodeOf(out.cause).CallersMistake() {
			// Done: the job's record says why; asynq's archive (dead
			// letters, and their alert) keeps system faults only.
			return nil
		}
		return fmt.Errorf("job failed: %w: %w", out.cause, asynq.SkipRetry)
	}
	return nil
}

// retryOrFail applies the retry policy (judge, in schedule.go) to a run that
// erred: true when the queue retries the task; otherwise out becomes the job's
// failure.
func (w *Worker) retryOrFail(ctx context.Context, r *run, out *outcome) (retry bool) {
	retried, maxRetry, ok := retryCounts(ctx)
	if !ok {
		maxRetry = w.cfg.MaxCompressRetries
	}
	v, retryableFailure := judge(out.cause, retried, maxRetry)
	if v == retryTask {
		r.log.Warn("run failed, will retry", "retried", retried, "max_retry", maxRetry, "err", out.cause)
		return true
	}
	e := *connector.AsError(out.cause)
	e.Retryable = e.Retryable || retryableFailure
	out.kind, out.cause = failed, &e
	return false
}

// end is the job's one terminal write, conditioned on this run being the
// job's live run (connector.JobRuns.Finish), retried in place through a
// Redis outage. A failure refused for a charged answer kept meanwhile (a
// stale run's) completes the job with that answer instead.
func (w *Worker) end(ctx context.Context, r *run, out *outcome) (*connector.Job, connector.HooksHint, error) {
	var job *connector.Job
	var hooks connector.HooksHint
	if r.job == nil {
		// The run failed before it could read the job (Redis down): its
		// end is guarded by the run number it reads now.
		if err := retryInPlace(ctx, func() error { return w.readRunNumber(ctx, r) }); err != nil {
			return nil, hooks, err
		}
	}
	if out.kind == failed {
		w.settleUnanswered(r, nil)
		w.awaitOpenCalls(ctx, r)
	}
	if k := r.keeping; k != nil && out.kind == completed {
		return w.endKept(ctx, r, out, k)
	}
	err := retryInPlace(ctx, func() error {
		var err error
		job, hooks, err = w.cfg.Runs.Finish(ctx, r.jobID, r.number, r.endChange(*out))
		if !errors.Is(err, connector.ErrAnswerKept) {
			return err
		}
		rec, err := w.cfg.Runs.Calls(ctx, r.jobID)
		if err != nil {
			return err
		}
		r.log.Warn("a charged answer was kept for the job while this run failed: completing with it", "cause", out.cause)
		r.calls = rec
		*out = completedWith(rec.Kept)
		job, hooks, err = w.cfg.Runs.Finish(ctx, r.jobID, r.number, r.endChange(*out))
		return err
	})
	if err != nil {
		return nil, hooks, err
	}
	return w.ended(r, out, job, hooks)
}

// endKept is end for a completion whose charged answer (k) is kept by the
// end's own write (connector.KeepFinisher), retried in place through a
// Redis outage until the task's deadline, as keep's write was.
func (w *Worker) endKept(ctx context.Context, r *run, out *outcome, k *pendingKeep) (*connector.Job, connector.HooksHint, error) {
	var job *connector.Job
	var hooks connector.HooksHint
	kf := w.cfg.Runs.(connector.KeepFinisher)
	err := retryInPlace(ctx, func() error {
		var err error
		job, hooks, err = kf.FinishKept(ctx, r.jobID, r.number, k.call, k.answer, k.data, w.cfg.ResultTTL, r.endChange(*out))
		return err
	})
	if err != nil && connector.ErrorCodeOf(err) == connector.EUNAVAILABLE {
		// The deadline passed with Redis still down: the answer is lost,
		// and a re-run will call (and be charged) again.
		r.log.Error("charged, but could not keep the answer before the task's deadline", "err", err)
	}
	if err != nil {
		return nil, hooks, err
	}
	r.keeping = nil
	r.calls.Answered++
	return w.ended(r, out, job, hooks)
}

// ended counts and logs the job's end.
func (w *Worker) ended(r *run, out *outcome, job *connector.Job, hooks connector.HooksHint) (*connector.Job, connector.HooksHint, error) {
	code := ""
	if job.Error != nil {
		code = string(job.Error.Code)
	}
	w.obs.JobFinished(string(job.Status), code)
	if out.repeat {
		if o, ok := w.obs.(DedupeObserver); ok {
			o.JobDeduplicated(out.waited, 1)
		}
	}
	if job.Status == connector.StatusCompleted {
		r.log.Info("job completed", "input", job.Input.Kind, "run", job.Runs, "upstream_job_id", job.Result.UpstreamJobID,
			"original_size", job.Result.OriginalSize, "compressed_size", job.Result.CompressedSize, "upstream_calls", job.UpstreamCalls,
			"charge_uncertain", job.ChargeUncertain, "deduplicated_from", job.DeduplicatedFrom)
	} else {
		r.log.Warn("job failed", "code", code, "upstream_status", job.Error.UpstreamStatus, "retryable", job.Error.Retryable, "err", out.cause)
	}
	return job, hooks, nil
}

// readRunNumber reads the job's run number into r, for the end of a run
// that never read the job.
func (w *Worker) readRunNumber(ctx context.Context, r *run) error {
	job, input, err := w.cfg.Runs.OpenJob(ctx, r.jobID)
	if input != nil {
		input.Close()
	}
	if err == nil {
		r.number = job.Runs
	}
	return err
}

// awaitOpenCalls holds a failing run's end while a call that another run
// began may still be answered: a stale run whose call is charged keeps the
// answer, and the failure then yields to it (Runs.Finish), so the charge is
// not wasted on a failed job. It waits until that call's run's deadline,
// which comes before this run's own (that run started earlier), polling the
// call record to end early when the call is answered; never past this
// run's deadline less the time its end needs.
func (w *Worker) awaitOpenCalls(ctx context.Context, r *run) {
	logged := false
	for {
		rec, err := w.cfg.Runs.Calls(ctx, r.jobID)
		if err != nil || rec.Kept != nil {
			return // the end's own write says what to do
		}
		// A run that never started counts the last run's calls as others':
		// that run may still be live.
		own := r.number
		if !r.started {
			own++
		}
		until, open := rec.OpenEarlier(own, time.Now())
		if !open {
			return
		}
		wait := time.Until(until) + openCallGrace
		if deadline, ok := ctx.Deadline(); ok {
			if left := time.Until(deadline) - endMargin; left < wait {
				if left <= 0 {
					r.log.Warn("another run's upstream call may still be answered, but this run's time is up: failing the job now")
					return
				}
				wait = left
			}
		}
		if !logged {
			r.log.Info("another run's upstream call may still be answered: waiting for it before failing the job", "until", until)
			logged = true
		}
		t := time.NewTimer(min(wait, openCallPoll))
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// A failing run waits for other runs' open calls (awaitOpenCalls): it
// reads the call record every openCallPoll, allows openCallGrace past a
// call's deadline for its last write to land and for clocks apart, and
// leaves its own end endMargin before its deadline.
const (
	openCallPoll  = 500 * time.Millisecond
	openCallGrace = time.Second
	endMargin     = 5 * time.Second
)

// endChange is the change the job's end makes to its record: its outcome,
// what the call record says, FinishedAt, and the callback marked pending.
func (r *run) endChange(out outcome) func(*connector.Job) {
	return func(j *connector.Job) {
		switch out.kind {
		case completed:
			if out.answer != nil {
				j.Input, j.Result, j.DeduplicatedFrom = out.answer.Input, out.answer.Result, out.answer.DeduplicatedFrom
			}
			j.Status, j.Error = connector.StatusCompleted, nil
		case failed:
			if r.input != nil {
				j.Input = *r.input
			}
			j.Status, j.Error = connector.StatusFailed, connector.JobErrorFrom(out.cause)
		}
		j.UpstreamCalls = max(j.UpstreamCalls, r.calls.Calls)
		j.ChargeUncertain = j.ChargeUncertain || r.uncertain
		now := time.Now().UTC()
		j.FinishedAt = &now
		if j.CallbackURL != "" && j.Callback == nil {
			j.Callback = &connector.DeliveryState{Status: connector.DeliveryPending}
		}
	}
}

// endRefused is what a run whose end was not written tells asynq: nothing
// more to do when the job ended or is gone, or a later run is live (it
// writes the end, and finds any answer this run kept); the error to retry
// on otherwise (the next run sees the same).
func (w *Worker) endRefused(r *run, out outcome, err error) error {
	charged := out.kind == completed && out.answer != nil && !out.repeat
	switch {
	case errors.Is(err, connector.ErrStaleRun):
		r.log.Warn("a later run of the job is live: this run's end is dropped (a charged answer stays kept for it)", "run", r.number)
		return nil
	case errors.Is(err, connector.ErrJobFinished) && charged:
		// The job ended in another run before this run's answer was kept.
		// Through an upstream that honours Idempotency-Key both runs' calls
		// were one charge; through one that does not, this is the only way
		// a charged answer goes unused.
		r.log.Warn("a 200 came after the job ended in another run; kept in the call record, unused", "run", r.number)
		return nil
	case errors.Is(err, connector.ErrJobFinished), connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		return nil
	}
	r.log.Error("could not write the job's end", "err", err)
	return err
}

// followUps are what a job's end sets off, in this order, each idempotent
// so that a run finding the job ended runs them again (a worker killed
// after the end loses none):
//
//	batch count   a batch's item counted ended; the last one queues batch.finished (batch.go)
//	dedupe source a completed job serves later identical ones; a failed one frees its claim (dedupe.go)
//	fan-out       the callback, the hooks, account.credits_low (deliver.go)
func (w *Worker) followUps(ctx context.Context, r *run, job *connector.Job, hooks connector.HooksHint) error {
	if err := retryInPlace(ctx, func() error { return w.batchItemEnded(ctx, r.log, job) }); err != nil {
		return err
	}
	w.recordDedupeSource(ctx, r.log, job)
	return retryInPlace(ctx, func() error { return w.fanOut(ctx, r.log, job, hooks) })
}

// crashAt runs the test hook for step, if any.
func (w *Worker) crashAt(step, jobID string) error {
	if w.crashHook == nil || !w.crashHook(step, jobID) {
		return nil
	}
	return errCrash
}

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
// order (design §2, steps 4–7):
//
//	load → get input → dedupe → record attempt → call → keep answer → store and finish → fan out
//
// (storing the result and marking the job completed are one write: the kept
// answer before it is what a re-run needs) and guarantees that a job is
// charged once:
//
//   - every call of a job carries the same Idempotency-Key (the job id). An
//     upstream that honours it (fixtures/upstream/README.md) compresses and
//     charges the key once, and answers a repeat with the first answer, so
//     a call whose answer was lost (the worker killed mid-call, the task
//     run again after its lease ran out) costs nothing more when it is
//     made again;
//   - "record attempt" writes, before each call, a durable attempt record
//     (AttemptStore: attempts:{id}); an answer is recorded right after it
//     comes, so a re-run knows what every earlier call got;
//   - "keep answer" records a 200 with its result and bytes before
//     anything else; a re-run that finds it stores it and never calls again;
//   - keeping and storing are retried where they stand (retryInPlace) until
//     the task's deadline, never by a new attempt.
//
// Against an upstream that ignores Idempotency-Key (its answers do not echo
// it), what can still charge twice is a call that began and has no recorded
// answer: the worker was killed between sending the image and keeping the
// answer, or the call timed out. Nothing can tell whether the API charged
// it, so the re-run goes ahead and the job says so: charge_uncertain, and
// the metric imgflow_upstream_charge_uncertain_total. With an upstream that
// echoes the key, the re-run's answer settles it, and the job is not
// flagged.

// errFinished stops an update of a job that another attempt finished.
var errFinished = errors.New("job already finished")

// errCrash is what a test's crash hook returns: the attempt stops right
// there, recording nothing, as a killed worker would.
var errCrash = errors.New("worker crashed (test)")

// attempt is one run of a compress task: what the steps learn on the way.
type attempt struct {
	jobID string
	log   *slog.Logger
	job   *connector.Job
	// input is the job's input as its bytes told, once they came.
	input *connector.JobInput
	// calls is the job's attempt record as this attempt last saw it.
	calls connector.Attempts
	// unanswered: an earlier call got no recorded answer, so it may have
	// been charged; the answer of this attempt's call settles it.
	unanswered bool
	// uncertain: an earlier call may have been charged without an answer,
	// and the upstream does not honour Idempotency-Key.
	uncertain bool
	// hooks is what the finishing write told of the owner's hooks.
	hooks connector.HooksHint
	// opened is the input blob, opened with the job's read; nil when there
	// is none or getInput took it.
	opened *connector.Blob
	// begun is the attempt record when load's start of the job also began
	// the call (jobStarter); recordCallAttempt then takes it.
	begun *connector.Attempts
}

// handleCompress runs one attempt at a compress job.
func (w *Worker) handleCompress(ctx context.Context, t *asynq.Task) error {
	var p compressPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.JobID == "" {
		w.log.Error("compress task with a bad payload, dropped", "job_id", "", "err", err)
		return fmt.Errorf("bad payload: %w", asynq.SkipRetry)
	}
	a := &attempt{jobID: p.JobID, log: w.log.With("job_id", p.JobID)}
	err := w.compress(ctx, a)
	if err == nil || errors.Is(err, errCrash) {
		return err
	}
	return w.judged(ctx, a, err)
}

// compress is the job's life. Any error it returns is judged (retry the task
// or fail the job) by handleCompress.
func (w *Worker) compress(ctx context.Context, a *attempt) error {
	next, err := w.load(ctx, a)
	defer func() {
		if a.opened != nil { // read with the job, then not needed
			a.opened.Close()
		}
	}()
	if err != nil || next == nothingLeft {
		return err
	}
	// From here on a step that asynq's lease loss interrupted could waste a
	// charged answer: the rest runs until the task's deadline, whatever
	// asynq cancels.
	ctx, cancel := untilDeadline(ctx)
	defer cancel()
	var answer *connector.KeptAnswer
	switch next {
	case fanOutOnly:
		return w.fanOut(ctx, a.log, a.job, connector.HooksUnknown)
	case finishOnly:
		return w.complete(ctx, a, nil)
	case storeKept:
		a.log.Info("an earlier attempt kept the charged answer: storing it without calling the upstream")
		answer = a.calls.Kept
	case compressNow:
		img, input, err := w.getInput(ctx, a)
		if err != nil {
			if a.begun != nil {
				w.answered(ctx, a, a.begun.Calls) // begun with the start, never made
			}
			return err
		}
		defer img.Close()
		a.input = &input
		if done, err := w.completeFromRepeat(ctx, a, img); done { // dedupe.go
			return err
		}
		if img, input, err = w.transform(ctx, a, img, input); err != nil { // transform.go
			return err
		}
		call, err := w.recordCallAttempt(ctx, a)
		if err != nil {
			return err
		}
		c, err := w.call(ctx, a, call, img, input)
		if err != nil {
			return err
		}
		restoreMetadata(a, img, input, c) // transform.go
		if err := w.crashAt("answered", a.jobID); err != nil {
			return err
		}
		if answer, err = w.keep(ctx, a, call, input, img.mimeType, c); err != nil {
			return err
		}
		if err := w.crashAt("kept", a.jobID); err != nil {
			return err
		}
	}
	return w.complete(ctx, a, answer)
}

// next is what is left to do for a job, as load found it.
type next int

const (
	compressNow next = iota // get the input and call the upstream
	storeKept               // an earlier attempt kept a charged answer: store it
	finishOnly              // the result is stored: mark the job completed
	fanOutOnly              // the job is finished: make sure its deliveries are queued
	nothingLeft             // the job is gone
)

// load reads the job and its attempt record, says what is left to do, and
// marks the job processing when work remains.
func (w *Worker) load(ctx context.Context, a *attempt) (next, error) {
	job, err := w.readJob(ctx, a)
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		a.log.Warn("compress task for an unknown or expired job, dropped")
		return nothingLeft, nil
	case err != nil:
		return nothingLeft, err
	case job.Status.Finished():
		// A duplicate or a retry after the job ended: only make sure its
		// deliveries are queued (they are unique by id).
		a.log.Info("job already finished, ensuring deliveries", "status", job.Status)
		a.job = job
		return fanOutOnly, nil
	case job.Result != nil:
		a.log.Info("result already stored, completing without calling the upstream")
		a.job = job
		return finishOnly, nil
	}
	if job.Attempts >= w.cfg.MaxCompressRetries+3 {
		// Runs that ended without a word (a worker killed each time, tasks
		// requeued by recover.go) do not count as asynq retries: stop a job
		// that keeps killing its workers here.
		a.job = job
		return nothingLeft, &connector.Error{Code: connector.EINTERNAL,
			Message: fmt.Sprintf("The job was interrupted %d times (worker restarts) and was given up", job.Attempts)}
	}
	if job.Attempts > 0 {
		// A re-run: what did the earlier calls get? (A first run has no
		// record; skipping the read saves a round trip per job.)
		if a.calls, err = w.cfg.Attempts.Attempts(ctx, a.jobID); err != nil {
			return nothingLeft, err
		}
	}
	start := func(j *connector.Job) error {
		if j.Status.Finished() {
			return errFinished
		}
		now := time.Now().UTC()
		j.Status = connector.StatusProcessing
		if j.StartedAt == nil {
			j.StartedAt = &now
		}
		j.Attempts++
		return nil
	}
	if s, ok := w.cfg.Jobs.(jobStarter); ok && job.Attempts == 0 && a.opened != nil && sameStore(w.cfg.Jobs, w.cfg.Attempts) {
		// A first run whose input is open already: nothing is left to fail
		// before the call, so its attempt is recorded with the start.
		var rec connector.Attempts
		job, rec, err = s.StartJob(ctx, a.jobID, start)
		if err == nil {
			a.begun = &rec
		}
	} else {
		job, err = w.cfg.Jobs.UpdateJob(ctx, a.jobID, start)
	}
	if errors.Is(err, errFinished) || connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nothingLeft, nil // finished or expired meanwhile
	}
	if err != nil {
		return nothingLeft, err
	}
	a.job = job
	w.obs.JobStarted(time.Since(job.CreatedAt))
	w.batchItemStarted(ctx, a.log, job) // a batch's item: counted processing (batch.go)
	if a.calls.Kept != nil {
		return storeKept, nil
	}
	return compressNow, nil
}

// readJob reads the job, and with it, in the same round trip, opens its
// input blob when the job store is also the blob store (a.opened; URL jobs
// have none).
func (w *Worker) readJob(ctx context.Context, a *attempt) (*connector.Job, error) {
	r, ok := w.cfg.Jobs.(jobInputReader)
	if !ok || !sameStore(w.cfg.Jobs, w.cfg.Blobs) {
		return w.cfg.Jobs.GetJob(ctx, a.jobID)
	}
	job, input, err := r.GetJobWithInput(ctx, a.jobID)
	a.opened = input
	return job, err
}

// getInput returns the job's image and its input record, completed with
// what the bytes tell (size, type, a filename for the upstream). An upload
// streams from the blob store while the call sends it: the caller closes it.
func (w *Worker) getInput(ctx context.Context, a *attempt) (*image, connector.JobInput, error) {
	job := a.job
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
		opened := a.opened
		a.opened = nil // the image owns it now
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

// recordCallAttempt writes, before the call, that a call is about to be made,
// and returns its number. If an earlier call has no recorded answer, it may
// have been charged: this call goes ahead with the same Idempotency-Key, and
// its answer tells whether the upstream made that safe (call).
func (w *Worker) recordCallAttempt(ctx context.Context, a *attempt) (call int, err error) {
	var rec connector.Attempts
	if a.begun != nil {
		rec, a.begun = *a.begun, nil // recorded with the job's start (load)
	} else if rec, err = w.cfg.Attempts.BeginCall(ctx, a.jobID); err != nil {
		return 0, err // nothing was sent: a retry is free
	}
	a.calls = rec
	if earlier := rec.Unanswered() - 1; earlier > 0 {
		a.unanswered = true
		a.log.Info("an earlier upstream call never got an answer; calling again with the same Idempotency-Key",
			"upstream_calls", rec.Calls, "unanswered_before", earlier)
	}
	return rec.Calls, nil
}

// call sends the image to the compression API. Any answer but a 200 (and a
// failure that sent nothing) is recorded as answered, since it cost
// nothing; a 200 is recorded by keep.
func (w *Worker) call(ctx context.Context, a *attempt, call int, img *image, in connector.JobInput) (*connector.Compressed, error) {
	apiKey, err := w.cfg.Keyring.Open(a.job.SealedKey)
	if err != nil {
		a.log.Error("sealed API key does not open: is IMGFLOW_SECRET the server's?", "err", err)
		w.answered(ctx, a, call)
		return nil, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	// Debug: a job's one Info line is its outcome (complete, fail), so a
	// busy worker writes one log line per job; operators and the fault
	// suite follow calls with this one.
	a.log.Debug("compressing", "attempt", a.job.Attempts, "call", call, "input", in.Kind, "size", in.Size)
	start := time.Now()
	c, err := w.cfg.Compressor.Compress(ctx, apiKey, a.jobID, img, in.Filename)
	status := 200
	if err != nil {
		status = connector.AsError(err).UpstreamStatus
	}
	w.obs.UpstreamCall(status, time.Since(start))
	if err == nil {
		w.settleUnanswered(a, c)
	}
	if err != nil && img.readErr != nil {
		// The blob store failed while the image streamed out: the API got
		// a cut-off body (no closing boundary), which it can neither
		// compress nor charge for, whatever it answered to it.
		a.log.Warn("the stored image could not be read while it was sent", "err", img.readErr)
		w.answered(ctx, a, call)
		return nil, storedImageError(img.readErr)
	}
	if err != nil {
		a.log.Warn("upstream call failed", "upstream_status", status, "code", connector.ErrorCodeOf(err), "err", err)
		if status != 0 || nothingSent(err) {
			w.answered(ctx, a, call)
		}
		return nil, err
	}
	a.log.Debug("compressed", "upstream_job_id", c.UpstreamJobID, "original_size", c.OriginalSize, "compressed_size", c.CompressedSize, "took", time.Since(start))
	return c, nil
}

// settleUnanswered decides, from this call's 200 (c nil: the job fails
// without one), whether an earlier unanswered call may have been charged on
// top of it: not when the upstream echoed the call's Idempotency-Key, since
// it then charges the key once whichever call got through. Any other
// outcome leaves the doubt, and the job says charge_uncertain.
func (w *Worker) settleUnanswered(a *attempt, c *connector.Compressed) {
	if !a.unanswered || a.uncertain {
		return
	}
	if c != nil && c.IdempotencyHonoured {
		a.log.Info("the upstream honoured the Idempotency-Key: the earlier unanswered call cost nothing more", "replayed", c.Replayed)
		return
	}
	a.uncertain = true
	w.obs.ChargeUncertain()
	a.log.Warn("an earlier upstream call never got an answer and may have been charged; the upstream does not confirm Idempotency-Key")
}

// answered records that call got an answer that cost nothing, retried in
// place through a Redis outage. If it still fails, a later run counts the
// call as possibly charged: a false alarm, never a missed one.
func (w *Worker) answered(ctx context.Context, a *attempt, call int) {
	err := retryInPlace(ctx, func() error { return w.cfg.Attempts.AnswerCall(ctx, a.jobID, call) })
	if err != nil {
		a.log.Warn("could not record the upstream's answer; a re-run will flag the charge as uncertain", "err", err)
		return
	}
	a.calls.Answered++
}

// nothingSent reports whether a failed call never reached the API (the
// connection was refused), so it cannot have been charged.
func nothingSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// keep makes the charged answer durable before anything else: the
// compressed bytes, then the answer in the attempt record. Redis hiccups
// are retried here until the task's deadline, never by calling again.
func (w *Worker) keep(ctx context.Context, a *attempt, call int, in connector.JobInput, inputType string, c *connector.Compressed) (*connector.KeptAnswer, error) {
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
	if answer.Result.CompressedSize == 0 {
		answer.Result.CompressedSize = c.Data.Size()
	}
	err := retryInPlace(ctx, func() error {
		if k, ok := w.cfg.Attempts.(answerKeeper); ok && sameStore(w.cfg.Attempts, w.cfg.Blobs) {
			return k.KeepAnswerWithBytes(ctx, a.jobID, call, answer, c.Data, w.cfg.ResultTTL)
		}
		if err := w.cfg.Blobs.PutBlob(ctx, connector.OutputBlobKey(a.jobID), connector.BytesReader(c.Data), c.Data.Size(), w.cfg.ResultTTL); err != nil {
			return err
		}
		return w.cfg.Attempts.KeepAnswer(ctx, a.jobID, call, answer)
	})
	if err != nil {
		// The task's deadline passed with Redis still down: the answer is
		// lost, and a re-run will call (and be charged) again.
		a.log.Error("charged, but could not keep the answer before the task's deadline", "err", err)
		return nil, err
	}
	a.calls.Answered++
	return answer, nil
}

// record copies what the attempt record says onto the job.
func (a *attempt) record(j *connector.Job) {
	j.UpstreamCalls = max(j.UpstreamCalls, a.calls.Calls)
	j.ChargeUncertain = j.ChargeUncertain || a.uncertain
}

// complete stores the kept answer on the job (answer nil: an earlier run
// stored it) and marks it completed, in one write retried in place like
// keep, then fans out.
func (w *Worker) complete(ctx context.Context, a *attempt, answer *connector.KeptAnswer) error {
	job, err := w.finish(ctx, a, func(j *connector.Job) {
		if answer != nil {
			j.Input = answer.Input
			j.Result = answer.Result
			j.DeduplicatedFrom = answer.DeduplicatedFrom
		}
		j.Status = connector.StatusCompleted
		j.Error = nil
	})
	if errors.Is(err, errFinished) {
		return nil
	}
	if err != nil {
		return err
	}
	a.job = job
	w.finishRepeat(ctx, a, job)
	a.log.Info("job completed", "input", job.Input.Kind, "attempt", job.Attempts, "upstream_job_id", job.Result.UpstreamJobID,
		"original_size", job.Result.OriginalSize, "compressed_size", job.Result.CompressedSize, "upstream_calls", job.UpstreamCalls, "charge_uncertain", job.ChargeUncertain, "deduplicated_from", job.DeduplicatedFrom)
	if err := w.crashAt("stored", a.jobID); err != nil {
		return err
	}
	return retryInPlace(ctx, func() error { return w.fanOut(ctx, a.log, job, a.hooks) })
}

// judged applies the retry policy (judge, in schedule.go) to an attempt
// that failed with cause: it returns the error for asynq to retry the task,
// or fails the job.
func (w *Worker) judged(ctx context.Context, a *attempt, cause error) error {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, ok := asynq.GetMaxRetry(ctx)
	if !ok {
		maxRetry = w.cfg.MaxCompressRetries
	}
	v, retryableFailure := judge(cause, retried, maxRetry)
	if v == retryTask {
		a.log.Warn("attempt failed, will retry", "retried", retried, "max_retry", maxRetry, "err", cause)
		return cause
	}
	e := *connector.AsError(cause)
	e.Retryable = e.Retryable || retryableFailure
	ctx, cancel := untilDeadline(ctx)
	defer cancel()
	return w.fail(ctx, a, &e)
}

// fail ends the job as failed with cause, then fans out; the task is not
// retried.
func (w *Worker) fail(ctx context.Context, a *attempt, cause error) error {
	w.settleUnanswered(a, nil)
	jobErr := connector.JobErrorFrom(cause)
	job, err := w.finish(ctx, a, func(j *connector.Job) {
		if a.input != nil {
			j.Input = *a.input
		}
		j.Status = connector.StatusFailed
		j.Error = jobErr
	})
	if errors.Is(err, errFinished) || connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nil
	}
	if err != nil {
		a.log.Error("could not record the job's failure", "err", err, "cause", cause)
		return err // asynq retries; the next attempt sees the same failure
	}
	w.finishRepeat(ctx, a, job)
	a.log.Warn("job failed", "code", jobErr.Code, "upstream_status", jobErr.UpstreamStatus, "retryable", jobErr.Retryable, "err", cause)
	if err := retryInPlace(ctx, func() error { return w.fanOut(ctx, a.log, job, a.hooks) }); err != nil {
		return err
	}
	return fmt.Errorf("job failed: %w: %w", cause, asynq.SkipRetry)
}

// finish moves the job to a final state with set (retried in place),
// stamps FinishedAt, copies the attempt record on it, marks its callback
// pending, tells the observer, and deletes its input blob.
func (w *Worker) finish(ctx context.Context, a *attempt, set func(*connector.Job)) (*connector.Job, error) {
	var job *connector.Job
	err := retryInPlace(ctx, func() error {
		var err error
		finishing := func(j *connector.Job) error {
			if j.Status.Finished() {
				return errFinished
			}
			set(j)
			a.record(j)
			now := time.Now().UTC()
			j.FinishedAt = &now
			if j.CallbackURL != "" && j.Callback == nil {
				j.Callback = &connector.DeliveryState{Status: connector.DeliveryPending}
			}
			return nil
		}
		if f, ok := w.cfg.Jobs.(jobFinisher); ok && sameStore(w.cfg.Jobs, w.cfg.Hooks) {
			job, a.hooks, err = f.FinishJob(ctx, a.jobID, finishing)
			return err
		}
		job, err = w.cfg.Jobs.UpdateJob(ctx, a.jobID, finishing)
		return err
	})
	if err != nil {
		return nil, err
	}
	code := ""
	if job.Error != nil {
		code = string(job.Error.Code)
	}
	w.obs.JobFinished(string(job.Status), code)
	if d, ok := w.cfg.Jobs.(inputDropper); ok && d.DeletesInputOnFinish() && sameStore(w.cfg.Jobs, w.cfg.Blobs) {
		return job, nil // the finishing write deleted it
	}
	err = w.cfg.Blobs.DeleteBlob(ctx, connector.InputBlobKey(a.jobID))
	if err != nil && connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		a.log.Warn("could not delete the input blob; it expires on its own", "err", err)
	}
	return job, nil
}

// crashAt runs the test hook for step, if any.
func (w *Worker) crashAt(step, jobID string) error {
	if w.crashHook == nil || !w.crashHook(step, jobID) {
		return nil
	}
	return errCrash
}

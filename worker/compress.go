package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
)

// errFinished stops an update of a job that another attempt finished.
var errFinished = errors.New("job already finished")

// handleCompress runs one attempt at a compress job (design §2, steps 4–7).
func (w *Worker) handleCompress(ctx context.Context, t *asynq.Task) error {
	var p compressPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil || p.JobID == "" {
		w.log.Error("compress task with a bad payload, dropped", "job_id", "", "err", err)
		return fmt.Errorf("bad payload: %w", asynq.SkipRetry)
	}
	log := w.log.With("job_id", p.JobID)

	job, err := w.cfg.Jobs.GetJob(ctx, p.JobID)
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		log.Warn("compress task for an unknown or expired job, dropped")
		return nil
	case err != nil:
		return w.retryOrFail(ctx, log, p.JobID, err)
	case job.Status.Finished():
		// A duplicate or a retry after the job ended: only make sure its
		// deliveries are queued (they are unique by id).
		log.Info("job already finished, ensuring deliveries", "status", job.Status)
		return w.fanOut(ctx, log, job)
	case job.Result != nil:
		// An earlier attempt was charged and stored the result: never call
		// the upstream again for this job.
		log.Info("result already stored, completing without calling the upstream")
		return w.complete(ctx, log, p.JobID)
	}

	job, err = w.cfg.Jobs.UpdateJob(ctx, p.JobID, func(j *connector.Job) error {
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
	})
	if errors.Is(err, errFinished) || connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nil // finished or expired meanwhile
	}
	if err != nil {
		return w.retryOrFail(ctx, log, p.JobID, err)
	}
	w.obs.JobStarted(time.Since(job.CreatedAt))
	log.Info("compressing", "attempt", job.Attempts, "input", job.Input.Kind)

	img, input, err := w.input(ctx, job)
	if err != nil {
		return w.failOrRetry(ctx, log, p.JobID, input, err)
	}
	apiKey, err := w.cfg.Keyring.Open(job.SealedKey)
	if err != nil {
		log.Error("sealed API key does not open: is IMGFLOW_SECRET the server's?", "err", err)
		return w.fail(ctx, log, p.JobID, input, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err})
	}

	start := time.Now()
	c, err := w.cfg.Compressor.Compress(ctx, apiKey, bytes.NewReader(img.Data), input.Filename)
	status := 200
	if err != nil {
		status = connector.AsError(err).UpstreamStatus
	}
	w.obs.UpstreamCall(status, time.Since(start))
	if err != nil {
		log.Warn("upstream call failed", "upstream_status", status, "code", connector.ErrorCodeOf(err), "err", err)
		return w.failOrRetry(ctx, log, p.JobID, input, err)
	}
	log.Info("compressed", "upstream_job_id", c.UpstreamJobID, "original_size", c.OriginalSize, "compressed_size", c.CompressedSize, "took", time.Since(start))

	if err := w.storeResult(ctx, p.JobID, input, img.MIMEType, c); err != nil {
		// Charged but not stored: the only case a retry calls the upstream
		// again. storeResult already tried a few times.
		log.Error("compressed but could not store the result", "err", err)
		return w.retryOrFail(ctx, log, p.JobID, err)
	}
	if w.afterResultStored != nil {
		if err := w.afterResultStored(p.JobID); err != nil {
			return err
		}
	}
	return w.complete(ctx, log, p.JobID)
}

// input returns the job's image and its input record, completed with what
// the bytes tell (size, type, a filename for the upstream).
func (w *Worker) input(ctx context.Context, job *connector.Job) (*connector.Image, connector.JobInput, error) {
	in := job.Input
	var img *connector.Image
	if in.Kind == connector.InputURL {
		var err error
		if img, err = w.cfg.Fetcher.FetchImage(ctx, in.URL); err != nil {
			return nil, in, err
		}
		if in.Filename == "" {
			in.Filename = img.Filename
		}
	} else {
		data, err := w.cfg.Blobs.GetBlob(ctx, connector.InputBlobKey(job.ID))
		if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
			return nil, in, connector.Errorf(connector.EINVALID, "The uploaded image expired before it could be compressed")
		}
		if err != nil {
			return nil, in, err
		}
		img = &connector.Image{Data: data}
	}
	if img.MIMEType == "" {
		img.MIMEType = connector.SniffImageType(img.Data)
	}
	if img.MIMEType == "" {
		img.MIMEType = in.MIMEType
	}
	in.Size = int64(len(img.Data))
	in.MIMEType = img.MIMEType
	in.Filename = filenameFor(in.Filename, img.MIMEType)
	return img, in, nil
}

// storeResult stores the compressed bytes, then the result, before anything
// else. The upstream has charged a credit by now, so a passing Redis hiccup
// is retried here rather than by a new attempt that would charge again.
func (w *Worker) storeResult(ctx context.Context, jobID string, in connector.JobInput, inputType string, c *connector.Compressed) error {
	mime := connector.SniffImageType(c.Data)
	if mime == "" {
		mime = inputType // the output has the input's format
	}
	result := &connector.JobResult{
		OriginalSize:     c.OriginalSize,
		CompressedSize:   c.CompressedSize,
		CompressionRatio: c.CompressionRatio,
		CreditsRemaining: c.CreditsRemaining,
		MIMEType:         mime,
		Filename:         filenameFor(in.Filename, mime),
		UpstreamJobID:    c.UpstreamJobID,
	}
	if result.CompressedSize == 0 {
		result.CompressedSize = int64(len(c.Data))
	}
	return retryInPlace(ctx, func() error {
		if err := w.cfg.Blobs.PutBlob(ctx, connector.OutputBlobKey(jobID), c.Data, w.cfg.ResultTTL); err != nil {
			return err
		}
		_, err := w.cfg.Jobs.UpdateJob(ctx, jobID, func(j *connector.Job) error {
			j.Input = in
			j.Result = result
			return nil
		})
		return err
	})
}

// failOrRetry ends the job as failed when err is final, else lets asynq
// retry the task (failing the job on the last attempt).
func (w *Worker) failOrRetry(ctx context.Context, log *slog.Logger, jobID string, in connector.JobInput, err error) error {
	if !retryable(err) {
		return w.fail(ctx, log, jobID, in, err)
	}
	return w.retryOrFail(ctx, log, jobID, err)
}

// maxFetchRetries bounds retries of an image URL that failed in a way that
// may pass (connection refused, 5xx, timeout): a flow waiting on ?wait
// should hear within seconds that its URL is unreachable, not after the
// minutes that upstream outages are given.
const maxFetchRetries = 2

// retryOrFail returns err for asynq to retry, unless this was the last
// attempt: then the job fails with err, marked retryable.
func (w *Worker) retryOrFail(ctx context.Context, log *slog.Logger, jobID string, err error) error {
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, ok := asynq.GetMaxRetry(ctx)
	if connector.ErrorCodeOf(err) == connector.EFETCH {
		maxRetry = min(maxRetry, maxFetchRetries)
	}
	if !ok || retried < maxRetry {
		log.Warn("attempt failed, will retry", "retried", retried, "max_retry", maxRetry, "err", err)
		return err
	}
	e := *connector.AsError(err)
	e.Retryable = true
	return w.finishFailed(ctx, log, jobID, nil, &e)
}

// fail ends the job as failed with a final error; the task is not retried.
func (w *Worker) fail(ctx context.Context, log *slog.Logger, jobID string, in connector.JobInput, err error) error {
	return w.finishFailed(ctx, log, jobID, &in, err)
}

func (w *Worker) finishFailed(ctx context.Context, log *slog.Logger, jobID string, in *connector.JobInput, cause error) error {
	jobErr := connector.JobErrorFrom(cause)
	job, err := w.finish(ctx, jobID, func(j *connector.Job) {
		if in != nil {
			j.Input = *in
		}
		j.Status = connector.StatusFailed
		j.Error = jobErr
	})
	if errors.Is(err, errFinished) {
		return nil
	}
	if err != nil {
		log.Error("could not record the job's failure", "err", err, "cause", cause)
		return err // asynq retries; the next attempt sees the same failure
	}
	log.Warn("job failed", "code", jobErr.Code, "upstream_status", jobErr.UpstreamStatus, "retryable", jobErr.Retryable, "err", cause)
	w.obs.JobFinished(string(connector.StatusFailed), string(jobErr.Code))
	w.cleanUp(ctx, log, jobID)
	// The job is finished: on its last attempt no task retry would queue
	// its deliveries again, so a Redis hiccup is retried here.
	if err := retryInPlace(ctx, func() error { return w.fanOut(ctx, log, job) }); err != nil {
		return err
	}
	return fmt.Errorf("job failed: %w: %w", cause, asynq.SkipRetry)
}

// complete marks a job whose result is stored as completed.
func (w *Worker) complete(ctx context.Context, log *slog.Logger, jobID string) error {
	job, err := w.finish(ctx, jobID, func(j *connector.Job) {
		j.Status = connector.StatusCompleted
		j.Error = nil
	})
	if errors.Is(err, errFinished) {
		return nil
	}
	if err != nil {
		return w.retryOrFail(ctx, log, jobID, err)
	}
	log.Info("job completed", "compressed_size", job.Result.CompressedSize)
	w.obs.JobFinished(string(connector.StatusCompleted), "")
	w.cleanUp(ctx, log, jobID)
	// The job is finished: on its last attempt no task retry would queue
	// its deliveries again, so a Redis hiccup is retried here.
	return retryInPlace(ctx, func() error { return w.fanOut(ctx, log, job) })
}

// finish moves the job to a final state with set, stamps FinishedAt and
// marks its callback pending.
func (w *Worker) finish(ctx context.Context, jobID string, set func(*connector.Job)) (*connector.Job, error) {
	return w.cfg.Jobs.UpdateJob(ctx, jobID, func(j *connector.Job) error {
		if j.Status.Finished() {
			return errFinished
		}
		set(j)
		now := time.Now().UTC()
		j.FinishedAt = &now
		if j.CallbackURL != "" && j.Callback == nil {
			j.Callback = &connector.DeliveryState{Status: connector.DeliveryPending}
		}
		return nil
	})
}

// cleanUp deletes the input blob of a finished job.
func (w *Worker) cleanUp(ctx context.Context, log *slog.Logger, jobID string) {
	err := w.cfg.Blobs.DeleteBlob(ctx, connector.InputBlobKey(jobID))
	if err != nil && connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		log.Warn("could not delete the input blob; it expires on its own", "err", err)
	}
}

// retryable reports whether another attempt may succeed: upstream 5xx,
// timeouts and network errors, passing fetch errors, Redis being down, and
// anything that is not a domain error (a deadline, a bug elsewhere). A 200
// whose body could not be read is final even though the client calls it
// retryable: the upstream charged for it, and a retry would charge again.
func retryable(err error) bool {
	var e *connector.Error
	if !errors.As(err, &e) {
		return true
	}
	if e.Code == connector.EUPSTREAM && e.UpstreamStatus == 200 {
		return false
	}
	return e.Retryable || e.Code == connector.EUNAVAILABLE
}

package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/webhook"
)

// fanOut queues the deliveries of a finished job: its callback and one per
// matching hook of its owner. Delivery ids make it idempotent. hooks is
// what the job's finishing write saw of the owner's hooks: HooksNone skips
// listing them (a hook made after the job finished does not get it).
func (w *Worker) fanOut(ctx context.Context, log *slog.Logger, job *connector.Job, hooks connector.HooksHint) error {
	if err := w.batchItemEnded(ctx, log, job); err != nil { // a batch's item: counted (batch.go)
		return err
	}
	event := job.EventType()
	if job.CallbackURL != "" {
		d := connector.Delivery{ID: connector.CallbackDeliveryID(job.ID), JobID: job.ID, Event: event}
		if err := w.queue.EnqueueDelivery(ctx, d); err != nil {
			log.Error("could not queue the callback delivery", "err", err)
			return err
		}
	}
	if hooks == connector.HooksNone {
		return nil // the finishing write saw no hook of the owner
	}
	subs, err := w.cfg.Hooks.ListHooks(ctx, job.Owner)
	if err != nil {
		log.Error("could not list hooks", "err", err)
		return err
	}
	for _, h := range subs {
		if !h.Matches(event) {
			continue
		}
		d := connector.Delivery{ID: connector.HookDeliveryID(job.ID, h.ID), JobID: job.ID, HookID: h.ID, Event: event}
		if err := w.queue.EnqueueDelivery(ctx, d); err != nil {
			log.Error("could not queue a hook delivery", "hook_id", h.ID, "err", err)
			return err
		}
	}
	return nil
}

// deliveryRun is one attempt at one delivery, as handleDelivery and its
// steps share it.
type deliveryRun struct {
	d       connector.Delivery
	job     *connector.Job
	log     *slog.Logger
	retried int  // earlier attempts of this task
	last    bool // no retry follows this attempt
	attempt *connector.DeliveryAttempt
}

// handleDelivery runs one attempt at one delivery and records it in the
// job's delivery log: load the job → find the target → send → record the
// outcome. A redelivery (asked for by the owner) is a single attempt: it is
// sent even if the delivery succeeded before, and a failure is recorded,
// not retried.
func (w *Worker) handleDelivery(ctx context.Context, t *asynq.Task) error {
	var d connector.Delivery
	err := json.Unmarshal(t.Payload(), &d)
	if err == nil && d.BatchID != "" {
		return w.handleBatchDelivery(ctx, d) // a batch.finished event: batchdeliver.go
	}
	if err != nil || d.JobID == "" {
		w.log.Error("delivery task with a bad payload, dropped", "job_id", "", "err", err)
		return fmt.Errorf("bad payload: %w", asynq.SkipRetry)
	}
	r := &deliveryRun{d: d, log: w.log.With("job_id", d.JobID, "delivery_id", d.ID, "redelivery", d.Redeliver),
		attempt: &connector.DeliveryAttempt{DeliveryID: d.ID, HookID: d.HookID, Event: d.Event, Redelivery: d.Redeliver}}
	if d.HookID != "" {
		r.log = r.log.With("hook_id", d.HookID)
	}
	r.retried, _ = asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	r.last = d.Redeliver || r.retried >= maxRetry
	if r.job, err = w.cfg.Jobs.GetJob(ctx, d.JobID); connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		r.log.Info("job gone, delivery dropped")
		w.obs.DeliveryDone("dropped")
		return nil
	} else if err != nil {
		return err
	}
	if !d.Redeliver && d.HookID == "" && r.job.Callback != nil && r.job.Callback.Status == connector.DeliveryDelivered {
		// Delivered already: a task run again (from the dashboard, say, after
		// its id was forgotten) must not post the event twice.
		r.log.Info("callback already delivered, delivery dropped")
		w.obs.DeliveryDone("dropped")
		return nil
	}
	target, secret, dropped, err := w.deliveryTarget(ctx, d, r.job)
	if err != nil {
		return err
	}
	if target == "" {
		w.obs.DeliveryDone("dropped")
		if dropped != "" {
			r.log.Info("delivery dropped", "why", dropped)
			r.attempt.At, r.attempt.Outcome, r.attempt.Error = time.Now().UTC(), connector.OutcomeDropped, dropped
			w.recordAttempt(ctx, r)
		}
		return nil
	}

	body, err := json.Marshal(w.event(r.job))
	if err != nil {
		return fmt.Errorf("render event: %w", err)
	}
	r.attempt.Target, r.attempt.At = connector.TargetForDisplay(target), time.Now().UTC()
	res := w.cfg.Sender.Send(ctx, target, secret, d.ID, body)
	r.attempt.DurationMS, r.attempt.StatusCode, r.attempt.Response = res.Duration.Milliseconds(), res.Status, res.Response
	r.log = r.log.With("attempt", r.retried+1, "target_host", host(target), "status", res.Status)
	switch {
	case res.Err == nil:
		return w.delivered(ctx, r, res)
	case res.Gone:
		return w.gone(ctx, r, res)
	}
	return w.failed(ctx, r, res)
}

// delivered records a 2xx answer; the callback counts as delivered, even
// when a redelivery is what got through.
func (w *Worker) delivered(ctx context.Context, r *deliveryRun, res webhook.Result) error {
	r.log.Info("delivered")
	w.obs.DeliveryDone("delivered")
	r.attempt.Outcome = connector.OutcomeDelivered
	w.recordAttempt(ctx, r)
	w.recordCallback(ctx, r.log, r.d, func(s *connector.DeliveryState) {
		now := time.Now().UTC()
		s.Status, s.LastStatus, s.LastError, s.DeliveredAt = connector.DeliveryDelivered, res.Status, "", &now
		if !r.d.Redeliver {
			s.Attempts = r.retried + 1
		}
	})
	return nil
}

// gone records a 410 answer: no more attempts, and a hook is disabled.
func (w *Worker) gone(ctx context.Context, r *deliveryRun, res webhook.Result) error {
	r.log.Warn("receiver answered 410 Gone: no more deliveries")
	w.obs.DeliveryDone("gone")
	r.attempt.Outcome, r.attempt.Error = connector.OutcomeGone, describeSendError(res)
	w.recordAttempt(ctx, r)
	if !r.d.Redeliver {
		w.recordCallback(ctx, r.log, r.d, func(s *connector.DeliveryState) {
			s.Status, s.Attempts, s.LastStatus, s.LastError = connector.DeliveryFailed, r.retried+1, res.Status, "410 Gone"
		})
	}
	if r.d.HookID != "" {
		if err := w.cfg.Hooks.DisableHook(ctx, r.d.HookID); err != nil {
			r.log.Error("could not disable the hook", "err", err)
			return err // retry: the next attempt gets 410 again and disables it
		}
	}
	if r.d.Redeliver {
		return nil // as for any failed redelivery: recorded, id freed
	}
	return fmt.Errorf("receiver gone: %w", asynq.SkipRetry)
}

// failed records any other failure and says when the next attempt is due,
// if one is; the error returned tells asynq whether and when to retry.
func (w *Worker) failed(ctx context.Context, r *deliveryRun, res webhook.Result) error {
	why := describeSendError(res)
	if connector.ErrorCodeOf(res.Err) == connector.EURLREFUSED {
		r.last = true // the guard refuses the target: no later attempt can pass
	}
	retryErr := &retryAfterError{err: errors.New(why), after: res.RetryAfter}
	r.attempt.Error, r.attempt.Outcome = why, connector.OutcomeFailed
	if r.last {
		r.log.Warn("delivery failed for good", "err", why)
		w.obs.DeliveryDone("failed")
	} else {
		r.log.Info("delivery attempt failed, will retry", "err", why, "retry_after", res.RetryAfter)
		w.obs.DeliveryDone("retry")
		next := time.Now().UTC().Add(deliveryDelay(w.cfg.DeliverySchedule, r.retried, retryErr))
		r.attempt.Outcome, r.attempt.NextRetryAt = connector.OutcomeRetrying, &next
	}
	w.recordAttempt(ctx, r)
	if r.d.Redeliver {
		// The owner sees the failure in the delivery log and may try again;
		// ending the task here (not archiving it) frees its id for that.
		return nil
	}
	state := connector.DeliveryPending
	if r.last {
		state = connector.DeliveryFailed
	}
	w.recordCallback(ctx, r.log, r.d, func(s *connector.DeliveryState) {
		s.Status, s.Attempts, s.LastStatus, s.LastError = state, r.retried+1, res.Status, why
	})
	if r.last {
		return fmt.Errorf("%w: %w", retryErr, asynq.SkipRetry)
	}
	return retryErr
}

// deliveryTarget is where d goes and the secret that signs it. The target
// is empty when there is nowhere to send it: a job without a callback URL,
// or a hook that was deleted or disabled (dropped then says which, for the
// delivery log).
func (w *Worker) deliveryTarget(ctx context.Context, d connector.Delivery, job *connector.Job) (target, secret, dropped string, err error) {
	if d.HookID == "" {
		return job.CallbackURL, w.cfg.Keyring.WebhookSecret("callback", job.Owner), "", nil
	}
	h, err := w.cfg.Hooks.GetHook(ctx, d.HookID)
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND || (err == nil && h.Owner != job.Owner):
		return "", "", "not sent: the hook was deleted", nil
	case err != nil:
		return "", "", "", err
	case h.Disabled:
		return "", "", "not sent: the hook is disabled (its target answered 410 Gone)", nil
	}
	return h.TargetURL, w.cfg.Keyring.WebhookSecret("hook", h.ID), "", nil
}

// recordAttempt adds the run's attempt to the job's delivery log. A
// failure to record is logged, not retried: the delivery itself counts.
func (w *Worker) recordAttempt(ctx context.Context, r *deliveryRun) {
	if err := w.cfg.Deliveries.RecordDeliveryAttempt(ctx, r.job, r.attempt); err != nil {
		r.log.Warn("could not record the delivery attempt", "err", err)
	}
}

// event renders a finished job as the body of its deliveries: the job as a
// caller sees it, with file_url and without the bytes or the callback's own
// delivery state, so that every attempt sends the same body.
func (w *Worker) event(job *connector.Job) connector.Event {
	finished := job.UpdatedAt
	if job.FinishedAt != nil {
		finished = *job.FinishedAt
	}
	data := *job
	data.Callback = nil
	data.UpdatedAt = finished // later writes are the callback's own state
	if job.Result != nil {
		r := *job.Result
		r.CompressedData = ""
		if job.Status == connector.StatusCompleted {
			r.FileURL = w.fileURL(job, finished.Add(w.cfg.ResultTTL))
		}
		data.Result = &r
	}
	return connector.Event{Type: job.EventType(), Timestamp: finished, Data: &data}
}

// recordCallback updates the job's callback delivery state; hooks have none.
// A failure to record is logged, not retried: the delivery itself counts.
func (w *Worker) recordCallback(ctx context.Context, log *slog.Logger, d connector.Delivery, set func(*connector.DeliveryState)) {
	if d.HookID != "" {
		return
	}
	_, err := w.cfg.Jobs.UpdateJob(ctx, d.JobID, func(j *connector.Job) error {
		if j.Callback == nil {
			j.Callback = &connector.DeliveryState{}
		}
		if j.Callback.Status == connector.DeliveryDelivered {
			return errFinished // a late duplicate must not undo it
		}
		set(j.Callback)
		return nil
	})
	if err != nil && !errors.Is(err, errFinished) {
		log.Warn("could not record the callback state", "err", err)
	}
}

// describeSendError says why an attempt failed without repeating the target
// URL, whose query string may carry a signature (n8n's resume URLs).
func describeSendError(res webhook.Result) string {
	var ue *url.Error
	switch {
	case errors.As(res.Err, &ue):
		return ue.Err.Error()
	case res.Err != nil:
		return res.Err.Error()
	case res.Status != 0:
		return fmt.Sprintf("receiver answered %d", res.Status)
	}
	return "delivery failed"
}

// host is the part of a target URL fit for logs.
func host(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return ""
	}
	return u.Host
}

// fileURL is the file_url a delivery carries (Config.FileURL).
func (w *Worker) fileURL(j *connector.Job, exp time.Time) string {
	if w.cfg.FileURL != nil {
		return w.cfg.FileURL(j, exp)
	}
	return w.cfg.Keyring.FileURL(w.cfg.PublicURL, j.ID, exp)
}

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

// Delivery ids, the webhook-id of every attempt: stable per job and target.
func callbackDeliveryID(jobID string) string     { return "msg_" + jobID + "_cb" }
func hookDeliveryID(jobID, hookID string) string { return "msg_" + jobID + "_" + hookID }

// fanOut queues the deliveries of a finished job: its callback and one per
// matching hook of its owner. Delivery ids make it idempotent.
func (w *Worker) fanOut(ctx context.Context, log *slog.Logger, job *connector.Job) error {
	event := job.EventType()
	if job.CallbackURL != "" {
		d := connector.Delivery{ID: callbackDeliveryID(job.ID), JobID: job.ID, Event: event}
		if err := w.queue.EnqueueDelivery(ctx, d); err != nil {
			log.Error("could not queue the callback delivery", "err", err)
			return err
		}
	}
	hooks, err := w.cfg.Hooks.ListHooks(ctx, job.Owner)
	if err != nil {
		log.Error("could not list hooks", "err", err)
		return err
	}
	for _, h := range hooks {
		if !h.Matches(event) {
			continue
		}
		d := connector.Delivery{ID: hookDeliveryID(job.ID, h.ID), JobID: job.ID, HookID: h.ID, Event: event}
		if err := w.queue.EnqueueDelivery(ctx, d); err != nil {
			log.Error("could not queue a hook delivery", "hook_id", h.ID, "err", err)
			return err
		}
	}
	return nil
}

// handleDelivery runs one attempt at one delivery.
func (w *Worker) handleDelivery(ctx context.Context, t *asynq.Task) error {
	var d connector.Delivery
	if err := json.Unmarshal(t.Payload(), &d); err != nil || d.JobID == "" {
		w.log.Error("delivery task with a bad payload, dropped", "job_id", "", "err", err)
		return fmt.Errorf("bad payload: %w", asynq.SkipRetry)
	}
	log := w.log.With("job_id", d.JobID, "delivery_id", d.ID)
	if d.HookID != "" {
		log = log.With("hook_id", d.HookID)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	last := retried >= maxRetry

	job, err := w.cfg.Jobs.GetJob(ctx, d.JobID)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		log.Info("job gone, delivery dropped")
		w.obs.DeliveryDone("dropped")
		return nil
	}
	if err != nil {
		return err
	}
	if d.HookID == "" && job.Callback != nil && job.Callback.Status == connector.DeliveryDelivered {
		// Delivered already: a task run again (from the dashboard, say, after
		// its id was forgotten) must not post the event twice.
		log.Info("callback already delivered, delivery dropped")
		w.obs.DeliveryDone("dropped")
		return nil
	}
	target, secret := job.CallbackURL, w.cfg.Keyring.WebhookSecret("callback", job.Owner)
	if d.HookID != "" {
		h, err := w.cfg.Hooks.GetHook(ctx, d.HookID)
		switch {
		case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
			log.Info("hook deleted, delivery dropped")
			w.obs.DeliveryDone("dropped")
			return nil
		case err != nil:
			return err
		case h.Disabled || h.Owner != job.Owner:
			log.Info("hook disabled, delivery dropped")
			w.obs.DeliveryDone("dropped")
			return nil
		}
		target, secret = h.TargetURL, w.cfg.Keyring.WebhookSecret("hook", h.ID)
	}
	if target == "" {
		w.obs.DeliveryDone("dropped")
		return nil
	}
	body, err := json.Marshal(w.event(job))
	if err != nil {
		return fmt.Errorf("render event: %w", err)
	}

	res := w.cfg.Sender.Send(ctx, target, secret, d.ID, body)
	attempt := retried + 1
	log = log.With("attempt", attempt, "target_host", host(target), "status", res.Status)
	switch {
	case res.Err == nil:
		log.Info("delivered")
		w.obs.DeliveryDone("delivered")
		w.recordCallback(ctx, log, d, func(s *connector.DeliveryState) {
			now := time.Now().UTC()
			s.Status, s.Attempts, s.LastStatus, s.LastError, s.DeliveredAt = connector.DeliveryDelivered, attempt, res.Status, "", &now
		})
		return nil
	case res.Gone:
		log.Warn("receiver answered 410 Gone: no more deliveries")
		w.obs.DeliveryDone("gone")
		w.recordCallback(ctx, log, d, func(s *connector.DeliveryState) {
			s.Status, s.Attempts, s.LastStatus, s.LastError = connector.DeliveryFailed, attempt, res.Status, "410 Gone"
		})
		if d.HookID != "" {
			if err := w.cfg.Hooks.DisableHook(ctx, d.HookID); err != nil {
				log.Error("could not disable the hook", "err", err)
				return err // retry: the next attempt gets 410 again and disables it
			}
		}
		return fmt.Errorf("receiver gone: %w", asynq.SkipRetry)
	}

	why := describeSendError(res)
	if connector.ErrorCodeOf(res.Err) == connector.EURLREFUSED {
		last = true // the guard refuses the target: no later attempt can pass
	}
	state := connector.DeliveryPending
	if last {
		state = connector.DeliveryFailed
		log.Warn("delivery failed for good", "err", why)
		w.obs.DeliveryDone("failed")
	} else {
		log.Info("delivery attempt failed, will retry", "err", why, "retry_after", res.RetryAfter)
		w.obs.DeliveryDone("retry")
	}
	w.recordCallback(ctx, log, d, func(s *connector.DeliveryState) {
		s.Status, s.Attempts, s.LastStatus, s.LastError = state, attempt, res.Status, why
	})
	err = &retryAfterError{err: errors.New(why), after: res.RetryAfter}
	if last {
		return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
	}
	return err
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
			r.FileURL = w.cfg.Keyring.FileURL(w.cfg.PublicURL, job.ID, finished.Add(w.cfg.ResultTTL))
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

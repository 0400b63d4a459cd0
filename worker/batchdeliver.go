package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
)

// handleBatchDelivery runs one attempt at a batch.finished delivery: load
// the batch → find the target → send → record. It shares the job events'
// task type, and so their retry schedule (RetryDelay), their sender and
// their signing: the batch's callback is signed with the owner's callback
// secret, a hook's delivery with the hook's. The callback's state is kept
// on the batch (its "callback" field).
func (w *Worker) handleBatchDelivery(ctx context.Context, d connector.Delivery) error {
	log := w.log.With("batch_id", d.BatchID, "delivery_id", d.ID, "hook_id", d.HookID)
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	last := d.Redeliver || retried >= maxRetry
	b, err := w.cfg.Batches.GetBatch(ctx, d.BatchID)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		log.Info("batch gone, delivery dropped")
		w.obs.DeliveryDone("dropped")
		return nil
	} else if err != nil {
		return err
	}
	if d.HookID == "" && !d.Redeliver && b.Callback != nil && b.Callback.Status == connector.DeliveryDelivered {
		w.obs.DeliveryDone("dropped")
		return nil // delivered already
	}
	now := time.Now()
	target := b.CallbackURL
	var secrets []string // the signing secrets, as job events are signed (rotation included)
	if d.HookID == "" {
		v, err := w.cfg.CallbackSecrets.CallbackSecretVersion(ctx, b.Owner)
		if err != nil {
			return err
		}
		secrets = w.cfg.Keyring.WebhookSecrets("callback", b.Owner, connector.SigningVersions(v.Version, &v.PreviousUntil, now))
	} else {
		h, err := w.cfg.Hooks.GetHook(ctx, d.HookID)
		switch {
		case connector.ErrorCodeOf(err) == connector.ENOTFOUND || (err == nil && (h.Owner != b.Owner || h.Disabled)):
			log.Info("hook deleted or disabled, delivery dropped")
			w.obs.DeliveryDone("dropped")
			return nil
		case err != nil:
			return err
		}
		target = h.TargetURL
		secrets = w.cfg.Keyring.WebhookSecrets("hook", h.ID, connector.SigningVersions(h.SecretVersion, h.PreviousSecretUntil, now))
	}
	if target == "" {
		w.obs.DeliveryDone("dropped")
		return nil
	}
	body, err := json.Marshal(w.batchEvent(b))
	if err != nil {
		return fmt.Errorf("render batch event: %w", err)
	}
	res := w.cfg.Sender.Send(ctx, target, secrets, d.ID, body)
	log = log.With("attempt", retried+1, "target_host", host(target), "status", res.Status)
	record := func(set func(*connector.DeliveryState)) {
		if d.HookID != "" || d.Redeliver {
			return
		}
		if err := w.cfg.Batches.UpdateBatchCallback(ctx, b.ID, set); err != nil {
			log.Warn("could not record the batch callback state", "err", err)
		}
	}
	switch {
	case res.Err == nil:
		log.Info("batch event delivered")
		w.obs.DeliveryDone("delivered")
		record(func(s *connector.DeliveryState) {
			now := time.Now().UTC()
			s.Status, s.Attempts, s.LastStatus, s.LastError, s.DeliveredAt = connector.DeliveryDelivered, retried+1, res.Status, "", &now
		})
		return nil
	case res.Gone:
		log.Warn("receiver answered 410 Gone: no more deliveries")
		w.obs.DeliveryDone("gone")
		record(func(s *connector.DeliveryState) {
			s.Status, s.Attempts, s.LastStatus, s.LastError = connector.DeliveryFailed, retried+1, res.Status, "410 Gone"
		})
		if d.HookID != "" {
			if err := w.cfg.Hooks.DisableHook(ctx, d.HookID); err != nil {
				return err
			}
		}
		return fmt.Errorf("receiver gone: %w", asynq.SkipRetry)
	}
	why := describeSendError(res)
	if connector.ErrorCodeOf(res.Err) == connector.EURLREFUSED {
		last = true
	}
	state := connector.DeliveryPending
	if last {
		state = connector.DeliveryFailed
		w.obs.DeliveryDone("failed")
		log.Warn("batch event delivery failed for good", "err", why)
	} else {
		w.obs.DeliveryDone("retry")
		log.Info("batch event delivery failed, will retry", "err", why)
	}
	record(func(s *connector.DeliveryState) {
		s.Status, s.Attempts, s.LastStatus, s.LastError = state, retried+1, res.Status, why
	})
	retryErr := &retryAfterError{err: errors.New(why), after: res.RetryAfter}
	if last {
		return fmt.Errorf("%w: %w", retryErr, asynq.SkipRetry)
	}
	return retryErr
}

// batchEvent is the body of a batch.finished delivery: the batch as its
// owner reads it, with a signed archive link, without its own callback
// state (so every attempt sends the same body).
func (w *Worker) batchEvent(b *connector.Batch) connector.BatchEvent {
	data := *b
	data.Callback = nil
	finished := b.CreatedAt
	if b.FinishedAt != nil {
		finished = *b.FinishedAt
	}
	data.Links = &connector.BatchLinks{
		Self:    w.cfg.PublicURL + "/v1/batches/" + b.ID,
		Jobs:    w.cfg.PublicURL + "/v1/batches/" + b.ID + "/jobs",
		Archive: w.cfg.Keyring.ArchiveURL(w.cfg.PublicURL, b.ID, finished.Add(w.cfg.ResultTTL)),
	}
	return connector.BatchEvent{Type: connector.EventBatchFinished, Timestamp: finished, Data: &data}
}

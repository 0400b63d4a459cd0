package worker

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"

	"github.com/imgflow/imgflow/connector"
)

// Events that are not a job's own (hook.disabled, account.credits_low, and
// any later type) are stored once as a connector.Message and go to the
// owner's matching hooks through the same delivery path as job events:
// same signing, retries, endpoint policy and delivery log.

// publish sends an event of type typ with data to owner's hooks that
// match it and pass only, at most MaxHooksPerKey of them.
func (w *Worker) publish(ctx context.Context, owner, typ string, data any, only func(*connector.Hook) bool) error {
	subs, err := w.cfg.Hooks.List(ctx, owner)
	if err != nil {
		return err
	}
	var targets []*connector.Hook
	for _, h := range w.capHooks(subs, typ) {
		if !h.Disabled && (only == nil || only(h)) {
			targets = append(targets, h)
		}
	}
	if len(targets) == 0 {
		return nil
	}
	msg, err := connector.NewMessage("msg_"+uuid.Must(uuid.NewV7()).String(), owner, typ, time.Now(), data)
	if err != nil {
		return err
	}
	return w.sendMessage(ctx, msg, targets)
}

// sendMessage stores msg and queues its delivery to each hook.
func (w *Worker) sendMessage(ctx context.Context, msg *connector.Message, hooks []*connector.Hook) error {
	if err := w.cfg.Hooks.PutMessage(ctx, msg); err != nil {
		return err
	}
	for _, h := range hooks {
		d := connector.Delivery{ID: connector.MessageDeliveryID(msg.ID, h.ID), MessageID: msg.ID, Owner: msg.Owner, HookID: h.ID, Event: msg.Type}
		if err := w.queue.EnqueueDelivery(ctx, d); err != nil {
			return err
		}
	}
	return nil
}

// creditsLow sends account.credits_low to each of subs that watches the
// balance, once when the job's answer takes it to or below the hook's
// threshold; a balance above the threshold arms the hook again.
func (w *Worker) creditsLow(ctx context.Context, log *slog.Logger, job *connector.Job, subs []*connector.Hook) error {
	balance := jobBalance(job)
	if balance == nil {
		return nil
	}
	for _, h := range subs {
		if h.Disabled || h.Event != connector.EventCreditsLow {
			continue
		}
		threshold := int64(connector.DefaultCreditsThreshold)
		if h.Threshold != nil {
			threshold = *h.Threshold
		}
		low := *balance <= threshold
		crossed, err := w.cfg.Hooks.MarkCreditsLow(ctx, connector.HookEndpointID(h.ID), low)
		if err != nil {
			return err
		}
		if !crossed {
			continue
		}
		// One message per job and hook: a fan-out run again makes the same.
		msg, err := connector.NewMessage("msg_"+job.ID+"_credits_"+h.ID, job.Owner, connector.EventCreditsLow, time.Now(),
			connector.CreditsLowData{CreditsRemaining: *balance, Threshold: threshold, JobID: job.ID})
		if err == nil {
			err = w.sendMessage(ctx, msg, []*connector.Hook{h})
		}
		if err != nil {
			// Armed again, so the fan-out's retry crosses again and sends it.
			w.cfg.Hooks.MarkCreditsLow(context.WithoutCancel(ctx), connector.HookEndpointID(h.ID), false)
			return err
		}
		log.Info("credits low", "hook_id", h.ID, "credits_remaining", *balance, "threshold", threshold)
	}
	return nil
}

// jobBalance is the balance the job's answer reported, or nil.
func jobBalance(j *connector.Job) *int64 {
	switch {
	case j.Result != nil && j.Result.CreditsRemaining != nil:
		return j.Result.CreditsRemaining
	case j.Error != nil && j.Error.CreditsRemaining != nil:
		return j.Error.CreditsRemaining
	}
	return nil
}

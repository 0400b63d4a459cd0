package worker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/webhook"
)

// The endpoint side of a delivery: before an attempt, the endpoint's
// policy (connector.EndpointPolicy) says whether it may go now; after it,
// the outcome is the endpoint's as much as the message's. A receiver's
// Retry-After pauses every message to it, a rate caps how fast any burst
// reaches it, and an endpoint failing for too long (or answering 410) is
// disabled and its owner told with a hook.disabled event.

// maxInlineWait is the longest wait an attempt spends in its handler, for
// its endpoint's rate or pause; a longer one puts the delivery off as a
// new task, so slow receivers do not hold the worker's slots.
const maxInlineWait = time.Second

// maxSlotWait bounds how far ahead a delivery reserves its endpoint's
// slot: a backlog beyond it is absurd for any rate.
const maxSlotWait = 24 * time.Hour

// admit applies the endpoint's policy before an attempt: true when the
// attempt may go now (after a short wait); false when the delivery was
// dropped (the endpoint is disabled) or put off until its endpoint can
// take it.
func (w *Worker) admit(ctx context.Context, r *deliveryRun) (bool, error) {
	rate := w.cfg.Endpoint.Rate
	if r.d.SlotTaken {
		rate = -1 // put off until a slot it holds
	}
	st, slotWait, reserved, err := w.cfg.Hooks.AdmitEndpoint(ctx, r.target.id, rate, maxSlotWait)
	if err != nil {
		return false, err
	}
	r.endpoint = st
	if r.d.Redeliver && r.target.hook == nil && st.Disabled() {
		// The owner's own redelivery is how a disabled callback URL is
		// tried again (a hook has POST /v1/hooks/{id}/enable); its success
		// enables the URL.
		st.DisabledAt = time.Time{}
		if slotWait, reserved, err = w.takeSlot(ctx, r, rate); err != nil {
			return false, err
		}
	}
	adm := w.cfg.Endpoint.Admit(st, time.Now())
	switch {
	case adm.Dropped != "":
		return false, w.dropped(ctx, r, adm.Dropped)
	case adm.Wait > maxInlineWait:
		return false, w.putOff(ctx, r, adm.Wait, false)
	case adm.Wait > 0:
		// A pause about to end: wait it out, then take a slot.
		if err := sleep(ctx, adm.Wait); err != nil {
			return false, err
		}
		if slotWait, reserved, err = w.takeSlot(ctx, r, rate); err != nil {
			return false, err
		}
	}
	if !reserved || slotWait > maxInlineWait {
		return false, w.putOff(ctx, r, slotWait, reserved)
	}
	return true, sleep(ctx, slotWait)
}

// takeSlot reserves the endpoint's next rate slot (none needed at rate <= 0).
func (w *Worker) takeSlot(ctx context.Context, r *deliveryRun, rate float64) (time.Duration, bool, error) {
	if rate <= 0 {
		return 0, true, nil
	}
	return w.cfg.Hooks.TakeSlot(ctx, r.target.id, rate, maxSlotWait)
}

// putOff queues the delivery again to run after wait, as a new task that
// carries its attempt count on: being put off costs no attempt.
func (w *Worker) putOff(ctx context.Context, r *deliveryRun, wait time.Duration, slotTaken bool) error {
	d := r.d
	d.Retried, d.Deferrals, d.SlotTaken = r.retried, d.Deferrals+1, slotTaken
	if err := w.queue.EnqueueDeferred(ctx, d, wait); err != nil {
		return err
	}
	r.log.Info("delivery put off by its endpoint's pause or rate", "wait", wait, "deferrals", d.Deferrals)
	w.obs.DeliveryDone("deferred")
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// endpointSucceeded ends the endpoint's run of failures (and a callback
// URL's disabling: only an owner's redelivery reaches a disabled one); an
// endpoint that had none costs nothing.
func (w *Worker) endpointSucceeded(ctx context.Context, r *deliveryRun) {
	if r.endpoint.FailingSince.IsZero() && r.endpoint.DisabledAt.IsZero() {
		return
	}
	if err := w.cfg.Hooks.EndpointSucceeded(ctx, r.target.id); err != nil {
		r.log.Warn("could not record the endpoint's success", "err", err)
	}
}

// endpointFailed records a failed attempt for the endpoint (pausing it for
// the receiver's Retry-After) and disables it once the policy says so;
// true when the endpoint is disabled now.
func (w *Worker) endpointFailed(ctx context.Context, r *deliveryRun, res webhook.Result) bool {
	now := time.Now()
	st, err := w.cfg.Hooks.EndpointFailed(ctx, r.target.id, now, min(res.RetryAfter, maxRetryAfter))
	if err != nil {
		r.log.Warn("could not record the endpoint's failure", "err", err)
		return false
	}
	reason, disable := w.cfg.Endpoint.DisableFor(false, st.FailingSince, now)
	if !disable {
		return false
	}
	if err := w.disableEndpoint(ctx, r, reason); err != nil {
		r.log.Warn("could not disable the failing endpoint", "err", err)
		return false
	}
	return true
}

// disableEndpoint disables the run's endpoint for reason: the hook, or the
// owner's callback URL. The first to disable it counts it and tells the
// owner's hook.disabled subscribers.
func (w *Worker) disableEndpoint(ctx context.Context, r *deliveryRun, reason string) error {
	now := time.Now().UTC()
	var changed bool
	var err error
	if h := r.target.hook; h != nil {
		changed, err = w.cfg.Hooks.DisableFor(ctx, h.ID, reason, now)
		if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
			return nil // deleted meanwhile
		}
	} else {
		changed, err = w.cfg.Hooks.DisableEndpoint(ctx, r.target.id, reason, now)
	}
	if err != nil || !changed {
		return err
	}
	r.log.Warn("endpoint disabled", "reason", reason)
	data := connector.NewHookDisabled(r.d.HookID, r.target.url, reason, now)
	if o, ok := w.obs.(EndpointObserver); ok {
		o.EndpointDisabled(data.Kind, reason)
	}
	if err := w.publish(ctx, r.subject.owner(), connector.EventHookDisabled, data, func(h *connector.Hook) bool {
		return h.ID != r.d.HookID
	}); err != nil {
		r.log.Warn("could not queue the hook.disabled event", "err", err)
	}
	return nil
}

// EndpointObserver, when the Observer implements it, is told of every
// endpoint disabled: kind hook or callback, reason gone or failing.
type EndpointObserver interface {
	EndpointDisabled(kind, reason string)
}

// deliveryRetried is how many attempts a delivery task's payload says were
// made before it (a delivery put off goes on as a new task).
func deliveryRetried(t *asynq.Task) int {
	var d struct {
		Retried int `json:"retried"`
	}
	json.Unmarshal(t.Payload(), &d)
	return d.Retried
}

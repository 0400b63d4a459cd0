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

// fanOut queues the deliveries of a finished job: its callback, one per
// matching hook of its owner (at most MaxHooksPerKey, oldest first), and an
// account.credits_low event where the job's answer took the balance to a
// hook's threshold. Delivery ids make it idempotent. hooks is what the
// job's finishing write saw of the owner's hooks: HooksNone skips listing
// them (a hook made after the job finished does not get it).
func (w *Worker) fanOut(ctx context.Context, log *slog.Logger, job *connector.Job, hooks connector.HooksHint) error {
	owner := job.Owner
	if hooks == connector.HooksNone {
		owner = "" // the finishing write saw no hook of the owner: the callback alone
	}
	subs, err := w.fanOutEvent(ctx, log, eventFanOut{subject: subject{job: job}, event: job.EventType(),
		callbackURL: job.CallbackURL, owner: owner, delivery: jobDelivery(job)})
	if err != nil {
		return err
	}
	return w.creditsLow(ctx, log, job, subs)
}

// jobDelivery names the deliveries of job's event: its callback's (hookID
// "") and each hook's.
func jobDelivery(job *connector.Job) func(hookID string) connector.Delivery {
	return func(hookID string) connector.Delivery {
		id := connector.CallbackDeliveryID(job.ID)
		if hookID != "" {
			id = connector.HookDeliveryID(job.ID, hookID)
		}
		return connector.Delivery{ID: id, JobID: job.ID, Owner: job.Owner, HookID: hookID, Event: job.EventType()}
	}
}

// eventFanOut is one event to fan out: what it is about, its type, the
// callback URL of its subject ("" for none), the owner whose hooks hear it
// ("" to skip listing them), and how each delivery is named (hookID "" for
// the callback's). The names are the subject's own, so a second run of the
// fan-out makes the same deliveries.
type eventFanOut struct {
	subject     subject
	event       string
	callbackURL string
	owner       string
	delivery    func(hookID string) connector.Delivery
}

// fanOutEvent is every event's fan-out: the callback's delivery, then one
// for each of the owner's hooks subscribed to the event (capHooks); a
// disabled hook's is recorded as not sent, for recovery. It returns the
// owner's hooks, all of them.
func (w *Worker) fanOutEvent(ctx context.Context, log *slog.Logger, f eventFanOut) ([]*connector.Hook, error) {
	if f.callbackURL != "" {
		if err := w.queue.EnqueueDelivery(ctx, f.delivery("")); err != nil {
			log.Error("could not queue the callback delivery", "err", err)
			return nil, err
		}
	}
	if f.owner == "" {
		return nil, nil
	}
	subs, err := w.cfg.Hooks.List(ctx, f.owner)
	if err != nil {
		log.Error("could not list hooks", "err", err)
		return nil, err
	}
	for _, h := range w.capHooks(subs, f.event) {
		d := f.delivery(h.ID)
		if h.Disabled {
			w.recordSkipped(ctx, log, f.subject, d, h)
			continue
		}
		if err := w.queue.EnqueueDelivery(ctx, d); err != nil {
			log.Error("could not queue a hook delivery", "hook_id", h.ID, "err", err)
			return nil, err
		}
	}
	return subs, nil
}

// capHooks is the hooks of subs subscribed to an event of this type, at
// most MaxHooksPerKey of them (the oldest), so that one event never turns
// into an unbounded burst of requests. Disabled ones are among them: their
// delivery is recorded as not sent (recordSkipped), for recovery.
func (w *Worker) capHooks(subs []*connector.Hook, event string) []*connector.Hook {
	var out []*connector.Hook
	for _, h := range subs {
		if h.Subscribed(event) {
			out = append(out, h)
		}
	}
	if n := w.cfg.MaxHooksPerKey; n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// recordSkipped records, without a task, that d was not sent because its
// hook is disabled: the delivery ends failed in the delivery log, so that
// POST /v1/hooks/{id}/recover sends it once the hook is enabled again.
func (w *Worker) recordSkipped(ctx context.Context, log *slog.Logger, s subject, d connector.Delivery, h *connector.Hook) {
	r := &deliveryRun{d: d, subject: s, log: log.With("hook_id", h.ID),
		attempt: &connector.DeliveryAttempt{DeliveryID: d.ID, HookID: h.ID, Event: d.Event, Target: connector.TargetForDisplay(h.TargetURL),
			At: time.Now().UTC(), Outcome: connector.OutcomeDropped,
			Error: "not sent: the hook is disabled (" + connector.DescribeDisabled(h.DisabledReason) + ")"}}
	w.obs.DeliveryDone("dropped")
	w.recordAttempt(ctx, r)
}

// deliveryRun is one attempt at one delivery, as handleDelivery and its
// steps share it.
type deliveryRun struct {
	d       connector.Delivery
	subject subject
	log     *slog.Logger
	retried int  // earlier attempts of this delivery
	last    bool // no retry follows this attempt
	target  endpoint
	// endpoint is the endpoint's state as the attempt was admitted.
	endpoint connector.EndpointState
	attempt  *connector.DeliveryAttempt
}

// subject is what a delivery is about: a finished job (its event rendered
// at each attempt) or a stored message (any other event). batch is the
// batch of a batch.finished message's callback delivery, whose state it
// keeps.
type subject struct {
	job   *connector.Job
	msg   *connector.Message
	batch *connector.Batch
}

// callbackURL is where the subject's callback delivery goes; "" for none.
func (s subject) callbackURL() string {
	if s.msg != nil {
		return s.msg.CallbackURL
	}
	return s.job.CallbackURL
}

// callbackDelivered reports whether the subject's callback was delivered
// already.
func (s subject) callbackDelivered() bool {
	var st *connector.DeliveryState
	switch {
	case s.batch != nil:
		st = s.batch.Callback
	case s.job != nil:
		st = s.job.Callback
	}
	return st != nil && st.Status == connector.DeliveryDelivered
}

func (s subject) owner() string {
	if s.msg != nil {
		return s.msg.Owner
	}
	return s.job.Owner
}

// handleDelivery runs one attempt at one delivery and records it in the
// delivery log: load what it is about → find the endpoint → spend the
// key's outbound budget (a free job's) → ask the endpoint's policy
// (disabled, paused, rate) → send → record the outcome
// for the message and for the endpoint. A redelivery (asked for by the
// owner) is a single attempt: it is sent even if the delivery succeeded
// before, and a failure is recorded, not retried.
func (w *Worker) handleDelivery(ctx context.Context, t *asynq.Task) error {
	var d connector.Delivery
	err := json.Unmarshal(t.Payload(), &d)
	if err != nil || (d.JobID == "" && d.MessageID == "") {
		w.log.Error("delivery task with a bad payload, dropped", "job_id", "", "err", err)
		return fmt.Errorf("bad payload: %w", asynq.SkipRetry)
	}
	r := &deliveryRun{d: d, log: w.log.With("job_id", d.JobID, "delivery_id", d.ID, "redelivery", d.Redeliver),
		attempt: &connector.DeliveryAttempt{DeliveryID: d.ID, HookID: d.HookID, Event: d.Event, Redelivery: d.Redeliver}}
	if d.HookID != "" {
		r.log = r.log.With("hook_id", d.HookID)
	}
	if d.MessageID != "" {
		r.log = r.log.With("message_id", d.MessageID)
	}
	retried, _ := asynq.GetRetryCount(ctx)
	maxRetry, _ := asynq.GetMaxRetry(ctx)
	r.retried, r.last = d.Retried+retried, d.Redeliver || retried >= maxRetry
	if r.subject, err = w.deliverySubject(ctx, d); connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		r.log.Info("job or message gone, delivery dropped")
		w.obs.DeliveryDone("dropped")
		return nil
	} else if err != nil {
		return err
	}
	if !d.Redeliver && d.HookID == "" && r.subject.callbackDelivered() {
		// Delivered already: a task run again (from the dashboard, say, after
		// its id was forgotten) must not post the event twice.
		r.log.Info("callback already delivered, delivery dropped")
		w.obs.DeliveryDone("dropped")
		return nil
	}
	var dropped string
	if r.target, dropped, err = w.deliveryTarget(ctx, d, r.subject); err != nil {
		return err
	}
	if r.target.url == "" {
		return w.dropped(ctx, r, dropped)
	}
	if spent, err := w.spendBudget(ctx, r); err != nil || !spent {
		return err // put off by the key's outbound budget (deliver_budget.go)
	}
	admitted, err := w.admit(ctx, r)
	if err != nil || !admitted {
		return err // put off (or dropped) by the endpoint's policy
	}

	body, err := w.body(r.subject)
	if err != nil {
		return fmt.Errorf("render event: %w", err)
	}
	at := time.Now()
	res := w.cfg.Sender.Send(ctx, r.target.url, r.target.secrets, d.ID, body)
	r.attempt = res.Attempt(d.ID, d.HookID, d.Event, r.target.url, at)
	r.attempt.Redelivery = d.Redeliver
	r.log = r.log.With("attempt", r.retried+1, "target_host", host(r.target.url), "status", res.Status)
	switch {
	case res.Err == nil:
		return w.delivered(ctx, r, res)
	case res.Gone:
		return w.gone(ctx, r, res)
	}
	return w.failed(ctx, r, res)
}

// deliverySubject loads what d is about; ENOTFOUND once it expired.
func (w *Worker) deliverySubject(ctx context.Context, d connector.Delivery) (subject, error) {
	if d.MessageID != "" {
		m, err := w.cfg.Hooks.GetMessage(ctx, d.MessageID)
		if err != nil || m.BatchID == "" || d.HookID != "" || w.cfg.Batches == nil {
			return subject{msg: m}, err
		}
		b, err := w.cfg.Batches.Get(ctx, m.BatchID)
		return subject{msg: m, batch: b}, err
	}
	j, err := w.cfg.Jobs.Get(ctx, d.JobID)
	return subject{job: j}, err
}

// body is what every attempt of the subject's deliveries sends.
func (w *Worker) body(s subject) ([]byte, error) {
	if s.msg != nil {
		return s.msg.Body, nil
	}
	return json.Marshal(w.view().JobEvent(s.job))
}

// dropped records a delivery that has nowhere to go (a deleted or disabled
// hook, a disabled endpoint); why is empty when there is nothing to say
// (a job without callback URL).
func (w *Worker) dropped(ctx context.Context, r *deliveryRun, why string) error {
	w.obs.DeliveryDone("dropped")
	if why != "" {
		r.log.Info("delivery dropped", "why", why)
		r.attempt.At, r.attempt.Outcome, r.attempt.Error = time.Now().UTC(), connector.OutcomeDropped, why
		w.recordAttempt(ctx, r)
	}
	return nil
}

// delivered records a 2xx answer; the callback counts as delivered, even
// when a redelivery is what got through.
func (w *Worker) delivered(ctx context.Context, r *deliveryRun, res webhook.Result) error {
	r.log.Info("delivered")
	w.obs.DeliveryDone("delivered")
	w.recordAttempt(ctx, r)
	w.endpointSucceeded(ctx, r)
	w.recordCallback(ctx, r, func(s *connector.DeliveryState) {
		now := time.Now().UTC()
		s.Status, s.LastStatus, s.LastError, s.DeliveredAt = connector.DeliveryDelivered, res.Status, "", &now
		if !r.d.Redeliver {
			s.Attempts = r.retried + 1
		}
	})
	return nil
}

// gone records a 410 answer: no more attempts, and the endpoint (a hook,
// or the callback URL) is disabled.
func (w *Worker) gone(ctx context.Context, r *deliveryRun, res webhook.Result) error {
	r.log.Warn("receiver answered 410 Gone: no more deliveries")
	w.obs.DeliveryDone("gone")
	w.recordAttempt(ctx, r)
	if !r.d.Redeliver {
		w.recordCallback(ctx, r, func(s *connector.DeliveryState) {
			s.Status, s.Attempts, s.LastStatus, s.LastError = connector.DeliveryFailed, r.retried+1, res.Status, "410 Gone"
		})
	}
	if err := w.disableEndpoint(ctx, r, connector.DisabledGone); err != nil {
		r.log.Error("could not disable the endpoint", "err", err)
		return err // retry: the next attempt gets 410 again and disables it
	}
	// Done, as for any delivery that fails for the receiver's reasons: the
	// delivery log and the callback's state say why; asynq's archive (dead
	// letters, and their alert) keeps system faults only.
	return nil
}

// failed records any other failure and says when the next attempt is due,
// if one is; the error returned tells asynq whether and when to retry. An
// endpoint that has failed every attempt for the policy's DisableAfter is
// disabled here, and this delivery ends with it.
func (w *Worker) failed(ctx context.Context, r *deliveryRun, res webhook.Result) error {
	why := res.Why()
	if connector.ErrorCodeOf(res.Err) == connector.EURLREFUSED {
		r.last = true // the guard refuses the target: no later attempt can pass
	}
	if w.endpointFailed(ctx, r, res) {
		r.last = true
	}
	retryErr := &retryAfterError{err: errors.New(why), after: res.RetryAfter}
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
	w.recordCallback(ctx, r, func(s *connector.DeliveryState) {
		s.Status, s.Attempts, s.LastStatus, s.LastError = state, r.retried+1, res.Status, why
	})
	if r.last {
		// Failed for good for the receiver's reasons (its answers, its
		// address, the guard refusing it): recorded above, so the task ends
		// here rather than in asynq's archive, which keeps system faults
		// (a store that cannot be read, say, retried until the last attempt).
		return nil
	}
	return retryErr
}

// endpoint is where a delivery goes: its URL, the secrets that sign it
// (the current one first), and the endpoint's id for its state.
type endpoint struct {
	url     string
	secrets []string
	id      string
	hook    *connector.Hook // nil for a callback
}

// deliveryTarget is where d goes and the secrets that sign it. The URL is
// empty when there is nowhere to send it: a job without a callback URL,
// or a hook that was deleted or disabled (dropped then says which, for the
// delivery log).
func (w *Worker) deliveryTarget(ctx context.Context, d connector.Delivery, s subject) (ep endpoint, dropped string, err error) {
	now := time.Now()
	if d.HookID == "" {
		target, owner := s.callbackURL(), s.owner()
		if target == "" {
			return endpoint{}, "", nil
		}
		v, err := w.cfg.Hooks.CallbackSecretVersion(ctx, owner)
		if err != nil {
			return endpoint{}, "", err
		}
		prev := &v.PreviousUntil
		return endpoint{url: target, id: connector.CallbackEndpointID(owner, target),
			secrets: w.cfg.Keyring.WebhookSecrets("callback", owner, connector.SigningVersions(v.Version, prev, now))}, "", nil
	}
	h, err := w.cfg.Hooks.Get(ctx, d.HookID)
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND || (err == nil && h.Owner != s.owner()):
		return endpoint{}, "not sent: the hook was deleted", nil
	case err != nil:
		return endpoint{}, "", err
	case h.Disabled:
		return endpoint{}, "not sent: the hook is disabled (" + connector.DescribeDisabled(h.DisabledReason) + ")", nil
	}
	return endpoint{url: h.TargetURL, id: connector.HookEndpointID(h.ID), hook: h,
		secrets: w.cfg.Keyring.WebhookSecrets("hook", h.ID, connector.SigningVersions(h.SecretVersion, h.PreviousSecretUntil, now))}, "", nil
}

// recordAttempt adds the run's attempt to its job's or message's delivery
// log. A failure to record is logged, not retried: the delivery itself
// counts.
func (w *Worker) recordAttempt(ctx context.Context, r *deliveryRun) {
	var err error
	if r.subject.msg != nil {
		err = w.cfg.Hooks.RecordMessageAttempt(ctx, r.subject.msg, r.attempt)
	} else {
		err = w.cfg.Hooks.RecordDeliveryAttempt(ctx, r.subject.job, r.attempt)
	}
	if err != nil {
		r.log.Warn("could not record the delivery attempt", "err", err)
	}
}

// view is the one public view of jobs and batches (connector.View): a
// delivery's body is what the API answers for the same job or batch.
func (w *Worker) view() connector.View {
	return w.cfg.Keyring.View(w.cfg.PublicURL, w.cfg.ResultTTL, w.cfg.FileURL)
}

// errDelivered stops an update of a callback state that says delivered.
var errDelivered = errors.New("callback already delivered")

// recordCallback updates the callback delivery state of the job or batch
// the run delivers for; hooks have none. A failure to record is logged,
// not retried: the delivery itself counts.
func (w *Worker) recordCallback(ctx context.Context, r *deliveryRun, set func(*connector.DeliveryState)) {
	if r.d.HookID != "" {
		return
	}
	var err error
	switch {
	case r.subject.batch != nil:
		err = w.cfg.Batches.UpdateCallback(ctx, r.subject.batch.ID, func(s *connector.DeliveryState) {
			if s.Status != connector.DeliveryDelivered { // a late duplicate must not undo it
				set(s)
			}
		})
	case r.d.JobID != "":
		_, err = w.cfg.Jobs.Update(ctx, r.d.JobID, func(j *connector.Job) error {
			if j.Callback == nil {
				j.Callback = &connector.DeliveryState{}
			}
			if j.Callback.Status == connector.DeliveryDelivered {
				return errDelivered // a late duplicate must not undo it
			}
			set(j.Callback)
			return nil
		})
	}
	if err != nil && !errors.Is(err, errDelivered) {
		r.log.Warn("could not record the callback state", "err", err)
	}
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

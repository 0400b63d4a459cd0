package connector

import (
	"net/url"
	"time"
)

// Delivery is one event for one target: a job's callback, or one hook.
type Delivery struct {
	ID     string `json:"id"`      // webhook-id: stable across retries and redeliveries
	JobID  string `json:"job_id"`  // the job whose event this is
	HookID string `json:"hook_id"` // "" for the job's own callback_url
	Event  string `json:"event"`
	// MessageID names the stored event (Message) of a delivery that is not
	// a job's; JobID is empty then.
	MessageID string `json:"message_id,omitempty"`
	// Owner is the owner id of the key whose job, batch or event this is
	// (never the key): the worker counts the delivery in that key's share
	// without reading its subject. Empty on deliveries queued before it
	// was carried: the worker reads the job's then.
	Owner string `json:"owner,omitempty"`
	// Retried counts the attempts made before this task: a delivery put off
	// for its endpoint's pause or rate goes on as a new task, which carries
	// them on so the schedule continues where it was.
	Retried int `json:"retried,omitempty"`
	// Deferrals counts how often the delivery was put off (it names the
	// task that carries it on).
	Deferrals int `json:"deferrals,omitempty"`
	// SlotTaken says the delivery was put off until a slot of its
	// endpoint's rate that it already reserved.
	SlotTaken bool `json:"slot_taken,omitempty"`
	// BudgetTaken says the delivery, a free job's, was put off until a turn
	// of its key's outbound budget that it already reserved.
	BudgetTaken bool `json:"budget_taken,omitempty"`
	// Redeliver marks a one-off attempt its owner asked for: it is sent
	// even when the delivery already succeeded, and not retried.
	Redeliver bool `json:"redeliver,omitempty"`
}

// CallbackDeliveryID and HookDeliveryID are the webhook-ids of a job's
// deliveries: stable per job and target, so retries and redeliveries of
// one event carry the same id and receivers can drop duplicates.
func CallbackDeliveryID(jobID string) string     { return "msg_" + jobID + "_cb" }
func HookDeliveryID(jobID, hookID string) string { return "msg_" + jobID + "_" + hookID }

// AttemptOutcome is what one delivery attempt came to.
type AttemptOutcome string

const (
	OutcomeDelivered AttemptOutcome = "delivered" // the receiver answered 2xx
	OutcomeRetrying  AttemptOutcome = "retrying"  // failed; another attempt is scheduled (NextRetryAt)
	OutcomeFailed    AttemptOutcome = "failed"    // failed, and no further attempt is scheduled
	OutcomeGone      AttemptOutcome = "gone"      // the receiver answered 410: no more deliveries
	OutcomeDropped   AttemptOutcome = "dropped"   // not sent: the hook was deleted or disabled
)

// DeliveryAttempt is one attempt at one delivery, as the job's owner sees
// it. It never holds the signature, the secret, the request body or the
// target's query string (a callback URL may carry a signature there).
type DeliveryAttempt struct {
	DeliveryID string `json:"delivery_id"`
	// Attempt numbers the attempts of one delivery from 1, in order; set
	// when a log is read (GroupDeliveries), not stored.
	Attempt int    `json:"attempt"`
	HookID  string `json:"hook_id,omitempty"`
	Event   string `json:"event"`
	// Target is the receiver's URL without query string or user info.
	Target     string    `json:"target"`
	Redelivery bool      `json:"redelivery,omitempty"`
	At         time.Time `json:"at"`
	// DurationMS is how long the request took, answer included.
	DurationMS int64 `json:"duration_ms"`
	// StatusCode is the receiver's HTTP status; 0 when none came back.
	StatusCode int `json:"status_code,omitempty"`
	// Response is the start of the receiver's answer (MaxResponseSnippet
	// bytes at most, valid UTF-8).
	Response    string         `json:"response,omitempty"`
	Error       string         `json:"error,omitempty"`
	Outcome     AttemptOutcome `json:"outcome"`
	NextRetryAt *time.Time     `json:"next_retry_at,omitempty"`
}

// MaxResponseSnippet bounds DeliveryAttempt.Response: enough to read an
// error page's message, small enough to keep hundreds of attempts per job.
const MaxResponseSnippet = 512

// TargetForDisplay is a receiver URL fit for the delivery log and for
// logs: scheme, host and path, without user info or query string.
func TargetForDisplay(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path}).String()
}

// DeliveryRecord is one delivery of a job, its callback or one hook, with
// every attempt at it, oldest first: what GET /v1/jobs/{id}/deliveries lists.
type DeliveryRecord struct {
	ID   string `json:"id"`   // the webhook-id
	Kind string `json:"kind"` // "callback" or "hook"
	// JobID or MessageID names what the delivery is about, in the owner's
	// delivery log across jobs (GET /v1/deliveries).
	JobID     string `json:"job_id,omitempty"`
	MessageID string `json:"message_id,omitempty"`
	HookID    string `json:"hook_id,omitempty"`
	Event     string `json:"event"`
	Target    string `json:"target,omitempty"`
	// Status is delivered once any attempt got a 2xx, pending while a
	// retry is due (or no attempt was made yet), failed otherwise.
	Status   DeliveryStatus     `json:"status"`
	Attempts []*DeliveryAttempt `json:"attempts"`
}

// Kinds of delivery.
const (
	KindCallback = "callback"
	KindHook     = "hook"
)

// DeliveryList is the JSON of GET /v1/jobs/{id}/deliveries.
type DeliveryList struct {
	JobID      string            `json:"job_id"`
	Deliveries []*DeliveryRecord `json:"deliveries"`
}

// GroupDeliveries turns a job's delivery log (oldest first) into one
// record per delivery, in the order of their first attempts, numbering
// each delivery's attempts.
func GroupDeliveries(log []*DeliveryAttempt) []*DeliveryRecord {
	out := []*DeliveryRecord{}
	byID := map[string]*DeliveryRecord{}
	for _, a := range log {
		r := byID[a.DeliveryID]
		if r == nil {
			r = &DeliveryRecord{ID: a.DeliveryID, Kind: KindCallback, HookID: a.HookID, Event: a.Event}
			if a.HookID != "" {
				r.Kind = KindHook
			}
			byID[a.DeliveryID] = r
			out = append(out, r)
		}
		a.Attempt = len(r.Attempts) + 1
		if a.Target != "" {
			r.Target = a.Target
		}
		r.Attempts = append(r.Attempts, a)
	}
	for _, r := range out {
		r.Status = deliveryStatus(r.Attempts)
	}
	return out
}

func deliveryStatus(attempts []*DeliveryAttempt) DeliveryStatus {
	if len(attempts) == 0 {
		return DeliveryPending
	}
	for _, a := range attempts {
		if a.Outcome == OutcomeDelivered {
			return DeliveryDelivered
		}
	}
	// A failed redelivery does not cancel a retry still scheduled.
	if last := lastScheduled(attempts); last != nil && last.Outcome == OutcomeRetrying {
		return DeliveryPending
	}
	return DeliveryFailed
}

// lastScheduled is the newest attempt that was not a redelivery, or nil.
func lastScheduled(attempts []*DeliveryAttempt) *DeliveryAttempt {
	for i := len(attempts) - 1; i >= 0; i-- {
		if !attempts[i].Redelivery {
			return attempts[i]
		}
	}
	return nil
}

package webhook

import (
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Attempt is the delivery-log record of one send: delivery deliveryID of
// event (to hook hookID, "" for a callback) sent to targetURL at at, and
// what came of it — delivered, gone (410) or failed. It is the one
// builder of the record, for the worker's deliveries and the API's test
// events alike; the worker marks a failure it will retry as retrying.
func (r Result) Attempt(deliveryID, hookID, event, targetURL string, at time.Time) *connector.DeliveryAttempt {
	a := &connector.DeliveryAttempt{DeliveryID: deliveryID, HookID: hookID, Event: event,
		Target: connector.TargetForDisplay(targetURL), At: at.UTC(), DurationMS: r.Duration.Milliseconds(),
		StatusCode: r.Status, Response: r.Response, Outcome: connector.OutcomeDelivered}
	if r.Err != nil {
		a.Outcome, a.Error = connector.OutcomeFailed, r.Why()
		if r.Gone {
			a.Outcome = connector.OutcomeGone
		}
	}
	return a
}

// Why says why the send failed, without repeating the target URL, whose
// query string may carry a signature (n8n's resume URLs): a refusal's
// message, else the sender's own words.
func (r Result) Why() string {
	var e *connector.Error
	var ue *url.Error
	switch {
	case errors.As(r.Err, &e):
		return e.Message
	case errors.As(r.Err, &ue):
		return ue.Err.Error()
	case r.Err != nil:
		return r.Err.Error()
	case r.Status != 0:
		return fmt.Sprintf("receiver answered %d", r.Status)
	}
	return "delivery failed"
}

package webhook

import (
	"errors"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// One send's record reads the same whoever sent it (the worker, a test
// event): outcome and error from the result, the target without its query.
func TestAttemptRecordsWhatCameOfTheSend(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.FixedZone("x", 3600))
	target := "https://hooks.example.com/in?sig=secret"
	for _, tc := range []struct {
		name    string
		res     Result
		outcome connector.AttemptOutcome
		err     string
	}{
		{"delivered", Result{Status: 204, Duration: 1500 * time.Microsecond}, connector.OutcomeDelivered, ""},
		{"failed", Result{Status: 500, Err: errors.New("webhook URL answered 500 Internal Server Error"), Response: "oops"},
			connector.OutcomeFailed, "webhook URL answered 500 Internal Server Error"},
		{"gone", Result{Status: 410, Gone: true, Err: errors.New("webhook URL answered 410 Gone; no more deliveries")},
			connector.OutcomeGone, "webhook URL answered 410 Gone; no more deliveries"},
		{"refused", Result{Err: connector.Errorf(connector.EURLREFUSED, "webhook URL points into a private network")},
			connector.OutcomeFailed, "webhook URL points into a private network"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.res.Attempt("d1", "h1", "job.completed", target, at)
			if a.Outcome != tc.outcome || a.Error != tc.err {
				t.Errorf("outcome %q error %q, want %q %q", a.Outcome, a.Error, tc.outcome, tc.err)
			}
			if a.Target != "https://hooks.example.com/in" || !a.At.Equal(at) || a.At.Location() != time.UTC {
				t.Errorf("target %q at %v, want the URL without its query, at %v in UTC", a.Target, a.At, at)
			}
			if a.DeliveryID != "d1" || a.HookID != "h1" || a.Event != "job.completed" || a.StatusCode != tc.res.Status ||
				a.Response != tc.res.Response || a.DurationMS != tc.res.Duration.Milliseconds() {
				t.Errorf("record %+v does not carry the send's facts %+v", a, tc.res)
			}
		})
	}
}

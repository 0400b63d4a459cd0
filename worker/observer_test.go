package worker

import (
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// recorder is an Observer that keeps what it was told.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func (r *recorder) has(s string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Contains(r.events, s)
}

func (r *recorder) JobStarted(time.Duration)            { r.add("started") }
func (r *recorder) JobFinished(status, code string)     { r.add("finished " + status + " " + code) }
func (r *recorder) UpstreamCall(s int, _ time.Duration) { r.add("upstream " + strconv.Itoa(s)) }
func (r *recorder) DeliveryDone(outcome string)         { r.add("delivery " + outcome) }
func (r *recorder) ChargeUncertain()                    { r.add("charge uncertain") }

func TestObserverHearsJobsUpstreamCallsAndDeliveries(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.cfg.Observer = rec
	h.comp.setFailures(&connector.Error{Code: connector.EUPSTREAM, Message: "Internal server error", UpstreamStatus: 500, Retryable: true})
	h.start()
	cb := newReceiver(t, 500)
	h.submitURLJob(cb.URL)

	for _, want := range []string{"started", "upstream 500", "upstream 200", "finished completed ", "delivery retry", "delivery delivered"} {
		waitFor(t, "the observer to hear "+want, func() bool { return rec.has(want) })
	}
}

func (r *recorder) EndpointDisabled(kind, reason string) {
	r.add("endpoint disabled " + kind + " " + reason)
}

package worker_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// The webhook payload of a job and the API's answer for it are one view
// (connector.View): a job.completed delivery's data equals GET
// /v1/jobs/{id}, but for the callback's own delivery state (callback, and
// the updated_at of its writes), which the payload leaves out so that
// every attempt sends the same body.
func TestAJobsWebhookPayloadIsItsAPIAnswer(t *testing.T) {
	s := startSystem(t)
	rcv, got := systemtest.Receiver(t)
	_, _ = s.Subscribe(rcv+"/hook", "job.completed")
	st, job := s.Call("POST", "/v1/jobs", `{"image_url":"`+s.Samples+`/photo.png","filename":"shoe.png","metadata":{"sku":"A1"},"callback_url":"`+rcv+`/cb?sig=1"}`)
	if st != http.StatusAccepted {
		t.Fatalf("POST /v1/jobs: %d %v", st, job)
	}
	bodies := map[string][]byte{}
	deadline := time.After(30 * time.Second)
	for len(bodies) < 2 {
		select {
		case r := <-got:
			bodies[strings.SplitN(r.Path, "?", 2)[0]] = r.Body
		case <-deadline:
			t.Fatalf("expected the callback and the hook delivery within 30s, got %d", len(bodies))
		}
	}
	st, answer := s.Call("GET", "/v1/jobs/"+job["id"].(string), "")
	if st != http.StatusOK {
		t.Fatalf("GET job: %d %v", st, answer)
	}
	delete(answer, "callback")
	delete(answer, "updated_at")
	for path, body := range bodies {
		var event struct {
			Type string         `json:"type"`
			Data map[string]any `json:"data"`
		}
		if err := json.Unmarshal(body, &event); err != nil || event.Type != "job.completed" {
			t.Fatalf("%s: expected a job.completed event, got %s (%v)", path, body, err)
		}
		if _, ok := event.Data["callback"]; ok {
			t.Errorf("%s: expected no callback state in the payload, got %v", path, event.Data["callback"])
		}
		delete(event.Data, "updated_at")
		if !reflect.DeepEqual(event.Data, answer) {
			a, _ := json.Marshal(answer)
			d, _ := json.Marshal(event.Data)
			t.Errorf("%s: the payload's data differs from the API's answer:\npayload %s\nanswer  %s", path, d, a)
		}
	}
}

package systemtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// HookReceiver records every delivery; answer decides the reply to
// request n (from 0), 200 when nil.
type HookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []ReceivedDelivery
}

// ReceivedDelivery is one request a HookReceiver got, and when.
type ReceivedDelivery struct {
	At     time.Time
	Header http.Header
	Body   []byte
}

// NewHookReceiver starts a HookReceiver on loopback until the test ends.
func NewHookReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *HookReceiver {
	r := &HookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, ReceivedDelivery{time.Now(), req.Header.Clone(), body})
		r.mu.Unlock()
		if answer != nil {
			answer(n, w)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

// All is every delivery so far.
func (r *HookReceiver) All() []ReceivedDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]ReceivedDelivery(nil), r.got...)
}

// Wait waits up to 20 s for n deliveries and returns them.
func (r *HookReceiver) Wait(t *testing.T, n int) []ReceivedDelivery {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got := r.All(); len(got) >= n {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("expected %d deliveries within 20s, got %d", n, len(r.All()))
	return nil
}

// Event is the delivery's event type and data.
func (d ReceivedDelivery) Event(t *testing.T) (string, map[string]any) {
	t.Helper()
	var ev struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(d.Body, &ev); err != nil {
		t.Fatalf("delivery %q: %v", d.Body, err)
	}
	return ev.Type, ev.Data
}

// Verifies checks the delivery's Standard Webhooks signature with secret.
func (d ReceivedDelivery) Verifies(secret string) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	return wh.Verify(d.Body, d.Header)
}

// Call sends a JSON request with the key and decodes the answer.
func (s *System) Call(method, path, body string) (int, map[string]any) {
	s.T.Helper()
	var r io.Reader
	ct := ""
	if body != "" {
		r, ct = strings.NewReader(body), "application/json"
	}
	st, _, data := s.Request(method, path, ct, r, map[string]string{"X-API-Key": s.Key})
	var out map[string]any
	json.Unmarshal(data, &out)
	return st, out
}

// Subscribe makes a hook of the key's for event to target.
func (s *System) Subscribe(target, event string) (id, secret string) {
	s.T.Helper()
	st, hook := s.Call("POST", "/v1/hooks", fmt.Sprintf(`{"target_url":%q,"event":%q}`, target, event))
	if st != http.StatusCreated {
		s.T.Fatalf("POST /v1/hooks: %d %v", st, hook)
	}
	return hook["id"].(string), hook["secret"].(string)
}

// Compress runs one job, charged: the same sample every time, so content
// dedupe is turned off for it.
func (s *System) Compress() string {
	s.T.Helper()
	st, job := s.Call("POST", "/v1/jobs?wait=20", `{"image_url":"`+s.Samples+`/photo.png","dedupe":false}`)
	if st != http.StatusOK {
		s.T.Fatalf("job: %d %v", st, job)
	}
	return job["id"].(string)
}

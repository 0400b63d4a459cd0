package main

import (
	"context"
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

// The webhook operations against the live API (serve + work as wired for
// production, loopback allowed as in dev), with receivers on loopback.

// hookReceiver records every delivery; answer decides the reply to
// request n (from 0), 200 when nil.
type hookReceiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []receivedDelivery
}

type receivedDelivery struct {
	at     time.Time
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *hookReceiver {
	r := &hookReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		n := len(r.got)
		r.got = append(r.got, receivedDelivery{time.Now(), req.Header.Clone(), body})
		r.mu.Unlock()
		if answer != nil {
			answer(n, w)
		}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *hookReceiver) all() []receivedDelivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]receivedDelivery(nil), r.got...)
}

// wait waits for n deliveries and returns them.
func (r *hookReceiver) wait(t *testing.T, n int) []receivedDelivery {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got := r.all(); len(got) >= n {
			return got
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("expected %d deliveries within 20s, got %d", n, len(r.all()))
	return nil
}

func (d receivedDelivery) event(t *testing.T) (string, map[string]any) {
	t.Helper()
	var ev struct {
		Type string         `json:"type"`
		Data map[string]any `json:"data"`
	}
	if err := json.Unmarshal(d.body, &ev); err != nil {
		t.Fatalf("delivery %q: %v", d.body, err)
	}
	return ev.Type, ev.Data
}

func (d receivedDelivery) verifies(secret string) error {
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return err
	}
	return wh.Verify(d.body, d.header)
}

// call sends a JSON request with the key and decodes the answer.
func (s *system) call(method, path, body string) (int, map[string]any) {
	s.t.Helper()
	var r io.Reader
	ct := ""
	if body != "" {
		r, ct = strings.NewReader(body), "application/json"
	}
	st, _, data := s.request(method, path, ct, r, map[string]string{"X-API-Key": s.key})
	var out map[string]any
	json.Unmarshal(data, &out)
	return st, out
}

func (s *system) subscribe(target, event string) (id, secret string) {
	s.t.Helper()
	st, hook := s.call("POST", "/v1/hooks", fmt.Sprintf(`{"target_url":%q,"event":%q}`, target, event))
	if st != http.StatusCreated {
		s.t.Fatalf("POST /v1/hooks: %d %v", st, hook)
	}
	return hook["id"].(string), hook["secret"].(string)
}

// compress runs one job, charged: the same sample every time, so content
// dedupe (#24) is turned off for it.
func (s *system) compress() string {
	s.t.Helper()
	st, job := s.call("POST", "/v1/jobs?wait=20", `{"image_url":"`+s.samples+`/photo.png","dedupe":false}`)
	if st != http.StatusOK {
		s.t.Fatalf("job: %d %v", st, job)
	}
	return job["id"].(string)
}

func TestTheKeysHookAfterTheCapIsRefusedAndHooksComeInPages(t *testing.T) {
	s := startSystem(t, func(o *appOptions) { o.MaxHooksPerKey = 25 })
	rcv := newHookReceiver(t, nil)
	made := map[string]bool{}
	for i := range 25 {
		id, _ := s.subscribe(fmt.Sprintf("%s/hook/%d", rcv.URL, i), "job.finished")
		made[id] = true
	}
	st, body := s.call("POST", "/v1/hooks", `{"target_url":"`+rcv.URL+`/26","event":"job.finished"}`)
	if st != http.StatusConflict || body["code"] != "too_many_hooks" {
		t.Errorf("26th hook: expected 409 too_many_hooks, got %d %v", st, body)
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		st, page := s.call("GET", "/v1/hooks?limit=10&cursor="+cursor, "")
		if st != http.StatusOK {
			t.Fatalf("GET /v1/hooks: %d %v", st, page)
		}
		pages++
		for _, h := range page["hooks"].([]any) {
			seen[h.(map[string]any)["id"].(string)] = true
		}
		next, _ := page["next_cursor"].(string)
		if next == "" {
			break
		}
		cursor = next
	}
	if pages != 3 || len(seen) != 25 {
		t.Errorf("expected the 25 hooks in 3 pages of up to 10, got %d hooks in %d pages", len(seen), pages)
	}
	for id := range made {
		if !seen[id] {
			t.Errorf("hook %s missing from the pages", id)
		}
	}
}

func TestAReceiverAnswering503WithRetryAfter3GetsNoAttemptFor3Seconds(t *testing.T) {
	s := startSystem(t)
	rcv := newHookReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 0 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	s.subscribe(rcv.URL, "job.finished")
	s.compress()
	first := rcv.wait(t, 1)[0]
	s.compress() // another message for the paused endpoint
	got := rcv.wait(t, 3)
	for i, d := range got[1:] {
		if gap := d.at.Sub(first.at); gap < 3*time.Second {
			t.Errorf("attempt %d came %s after the 503 with Retry-After: 3; expected none sooner than 3s", i+2, gap)
		}
	}
}

func TestA410DisablesTheHookAnotherHookHearsOfItAndEnableTestRecoverAndRotationWork(t *testing.T) {
	s := startSystem(t)
	rcv := newHookReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 0 {
			w.WriteHeader(http.StatusGone)
		}
	})
	watcher := newHookReceiver(t, nil)
	start := time.Now().Add(-time.Second)
	hookID, secret := s.subscribe(rcv.URL+"/flow", "job.finished")
	_, watchSecret := s.subscribe(watcher.URL, "hook.disabled")

	job1 := s.compress()
	disabled := watcher.wait(t, 1)[0]
	if err := disabled.verifies(watchSecret); err != nil {
		t.Errorf("hook.disabled: expected it signed with the watching hook's secret, got %v", err)
	}
	if typ, data := disabled.event(t); typ != "hook.disabled" || data["hook_id"] != hookID || data["reason"] != "gone" {
		t.Errorf("expected hook.disabled for %s (gone), got %s %v", hookID, typ, data)
	}
	st, hook := s.call("GET", "/v1/hooks/"+hookID, "")
	if st != http.StatusOK || hook["status"] != "disabled" || hook["disabled_reason"] != "gone" || hook["disabled_at"] == nil {
		t.Errorf("expected the hook disabled with its reason and time, got %d %v", st, hook)
	}
	job2 := s.compress() // not sent: the hook is disabled

	if st, body := s.call("POST", "/v1/hooks/"+hookID+"/recover", `{"since":"`+start.UTC().Format(time.RFC3339)+`"}`); st != http.StatusConflict || body["code"] != "hook_disabled" {
		t.Errorf("recover of a disabled hook: expected 409 hook_disabled, got %d %v", st, body)
	}
	if st, body := s.call("POST", "/v1/hooks/"+hookID+"/enable", ""); st != http.StatusOK || body["status"] != "enabled" {
		t.Fatalf("enable: expected 200 and status enabled, got %d %v", st, body)
	}
	st, rec := s.call("POST", "/v1/hooks/"+hookID+"/recover", `{"since":"`+start.UTC().Format(time.RFC3339)+`"}`)
	if st != http.StatusAccepted || rec["queued"] != float64(2) {
		t.Fatalf("recover: expected 202 with both jobs' deliveries queued, got %d %v", st, rec)
	}
	got := rcv.wait(t, 3)
	resent := map[string]bool{}
	for _, d := range got[1:] {
		resent[d.header.Get("webhook-id")] = true
		if err := d.verifies(secret); err != nil {
			t.Errorf("recovered delivery %s: expected it signed with the hook's secret, got %v", d.header.Get("webhook-id"), err)
		}
	}
	if !resent["msg_"+job1+"_"+hookID] || !resent["msg_"+job2+"_"+hookID] || got[0].header.Get("webhook-id") != "msg_"+job1+"_"+hookID {
		t.Errorf("expected both jobs' deliveries sent again with their own webhook-ids, got %v", resent)
	}

	st, test := s.call("POST", "/v1/hooks/"+hookID+"/test", "")
	if st != http.StatusOK || test["status"] != "delivered" || test["status_code"] != float64(200) {
		t.Fatalf("test: expected 200 with the delivered attempt, got %d %v", st, test)
	}
	testDelivery := rcv.wait(t, 4)[3]
	if typ, _ := testDelivery.event(t); typ != "hook.test" || testDelivery.verifies(secret) != nil {
		t.Errorf("expected a signed hook.test, got %s (%v)", typ, testDelivery.verifies(secret))
	}

	st, rotated := s.call("POST", "/v1/hooks/"+hookID+"/rotate-secret", "")
	newSecret, _ := rotated["secret"].(string)
	if st != http.StatusOK || newSecret == "" || newSecret == secret || rotated["previous_secret_expires_at"] == nil {
		t.Fatalf("rotate: expected a new secret and the overlap's end, got %d %v", st, rotated)
	}
	s.call("POST", "/v1/hooks/"+hookID+"/test", "")
	afterRotation := rcv.wait(t, 5)[4]
	for name, sec := range map[string]string{"old": secret, "new": newSecret} {
		if err := afterRotation.verifies(sec); err != nil {
			t.Errorf("after rotation: expected the %s secret to verify during the overlap, got %v", name, err)
		}
	}

	st, page := s.call("GET", "/v1/deliveries?hook_id="+hookID, "")
	if st != http.StatusOK {
		t.Fatalf("GET /v1/deliveries: %d %v", st, page)
	}
	jobs := map[string]bool{}
	for _, d := range page["deliveries"].([]any) {
		if id, _ := d.(map[string]any)["job_id"].(string); id != "" {
			jobs[id] = true
		}
	}
	if !jobs[job1] || !jobs[job2] || len(page["deliveries"].([]any)) != 4 {
		t.Errorf("expected the hook's deliveries of both jobs and its two tests, got %v", page)
	}
}

func TestCreditsLowFiresOnceWhenAJobTakesTheBalanceToTheThreshold(t *testing.T) {
	s := startSystem(t)
	rcv := newHookReceiver(t, nil)
	balance := s.credits()
	st, hook := s.call("POST", "/v1/hooks", fmt.Sprintf(`{"target_url":%q,"event":"account.credits_low","threshold":%d}`, rcv.URL, balance-2))
	if st != http.StatusCreated || hook["threshold"] != float64(balance-2) {
		t.Fatalf("subscribe: %d %v", st, hook)
	}
	for range 3 { // balance-1, balance-2 (crossing), balance-3
		s.compress()
	}
	rcv.wait(t, 1)
	time.Sleep(500 * time.Millisecond) // room for a second event, which must not come
	got := rcv.all()
	if len(got) != 1 {
		t.Fatalf("expected one account.credits_low for three jobs at or around the threshold, got %d", len(got))
	}
	typ, data := got[0].event(t)
	if typ != "account.credits_low" || data["credits_remaining"] != float64(balance-2) || data["threshold"] != float64(balance-2) {
		t.Errorf("expected account.credits_low at %d, got %s %v", balance-2, typ, data)
	}
	if err := got[0].verifies(hook["secret"].(string)); err != nil {
		t.Errorf("expected it signed with the hook's secret, got %v", err)
	}
	if _, err := s.ledger.TopUp(context.Background(), s.key, 10); err != nil {
		t.Fatal(err)
	}
	s.compress() // above the threshold again: armed
	time.Sleep(300 * time.Millisecond)
	if n := len(rcv.all()); n != 1 {
		t.Errorf("expected no event while above the threshold, got %d in all", n)
	}
}

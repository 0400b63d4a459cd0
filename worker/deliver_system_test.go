package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// The webhook operations against the live API (serve + work as wired for
// production, loopback allowed as in dev), with receivers on loopback.

func TestTheKeysHookAfterTheCapIsRefusedAndHooksComeInPages(t *testing.T) {
	s := startSystem(t, func(o *systemtest.Options) { o.MaxHooksPerKey = 25 })
	rcv := systemtest.NewHookReceiver(t, nil)
	made := map[string]bool{}
	for i := range 25 {
		id, _ := s.Subscribe(fmt.Sprintf("%s/hook/%d", rcv.URL, i), "job.finished")
		made[id] = true
	}
	st, body := s.Call("POST", "/v1/hooks", `{"target_url":"`+rcv.URL+`/26","event":"job.finished"}`)
	if st != http.StatusConflict || body["code"] != "too_many_hooks" {
		t.Errorf("26th hook: expected 409 too_many_hooks, got %d %v", st, body)
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		st, page := s.Call("GET", "/v1/hooks?limit=10&cursor="+cursor, "")
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
	rcv := systemtest.NewHookReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 0 {
			w.Header().Set("Retry-After", "3")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	s.Subscribe(rcv.URL, "job.finished")
	s.Compress()
	first := rcv.Wait(t, 1)[0]
	s.Compress() // another message for the paused endpoint
	got := rcv.Wait(t, 3)
	for i, d := range got[1:] {
		if gap := d.At.Sub(first.At); gap < 3*time.Second {
			t.Errorf("attempt %d came %s after the 503 with Retry-After: 3; expected none sooner than 3s", i+2, gap)
		}
	}
}

func TestA410DisablesTheHookAnotherHookHearsOfItAndEnableTestRecoverAndRotationWork(t *testing.T) {
	s := startSystem(t)
	rcv := systemtest.NewHookReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 0 {
			w.WriteHeader(http.StatusGone)
		}
	})
	watcher := systemtest.NewHookReceiver(t, nil)
	start := time.Now().Add(-time.Second)
	hookID, secret := s.Subscribe(rcv.URL+"/flow", "job.finished")
	_, watchSecret := s.Subscribe(watcher.URL, "hook.disabled")

	job1 := s.Compress()
	disabled := watcher.Wait(t, 1)[0]
	if err := disabled.Verifies(watchSecret); err != nil {
		t.Errorf("hook.disabled: expected it signed with the watching hook's secret, got %v", err)
	}
	if typ, data := disabled.Event(t); typ != "hook.disabled" || data["hook_id"] != hookID || data["reason"] != "gone" {
		t.Errorf("expected hook.disabled for %s (gone), got %s %v", hookID, typ, data)
	}
	st, hook := s.Call("GET", "/v1/hooks/"+hookID, "")
	if st != http.StatusOK || hook["status"] != "disabled" || hook["disabled_reason"] != "gone" || hook["disabled_at"] == nil {
		t.Errorf("expected the hook disabled with its reason and time, got %d %v", st, hook)
	}
	job2 := s.Compress() // not sent: the hook is disabled
	// Its delivery is recorded failed by the fan-out after the job's end,
	// which the answer to job2 does not wait for.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, page := s.Call("GET", "/v1/deliveries?status=failed&hook_id="+hookID, "")
		if list, _ := page["deliveries"].([]any); len(list) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("expected job2's delivery to the disabled hook recorded failed within 10s, got %v", page)
		}
	}

	if st, body := s.Call("POST", "/v1/hooks/"+hookID+"/recover", `{"since":"`+start.UTC().Format(time.RFC3339)+`"}`); st != http.StatusConflict || body["code"] != "hook_disabled" {
		t.Errorf("recover of a disabled hook: expected 409 hook_disabled, got %d %v", st, body)
	}
	if st, body := s.Call("POST", "/v1/hooks/"+hookID+"/enable", ""); st != http.StatusOK || body["status"] != "enabled" {
		t.Fatalf("enable: expected 200 and status enabled, got %d %v", st, body)
	}
	st, rec := s.Call("POST", "/v1/hooks/"+hookID+"/recover", `{"since":"`+start.UTC().Format(time.RFC3339)+`"}`)
	if st != http.StatusAccepted || rec["queued"] != float64(2) {
		t.Fatalf("recover: expected 202 with both jobs' deliveries queued, got %d %v", st, rec)
	}
	got := rcv.Wait(t, 3)
	resent := map[string]bool{}
	for _, d := range got[1:] {
		resent[d.Header.Get("webhook-id")] = true
		if err := d.Verifies(secret); err != nil {
			t.Errorf("recovered delivery %s: expected it signed with the hook's secret, got %v", d.Header.Get("webhook-id"), err)
		}
	}
	if !resent["msg_"+job1+"_"+hookID] || !resent["msg_"+job2+"_"+hookID] || got[0].Header.Get("webhook-id") != "msg_"+job1+"_"+hookID {
		t.Errorf("expected both jobs' deliveries sent again with their own webhook-ids, got %v", resent)
	}

	st, test := s.Call("POST", "/v1/hooks/"+hookID+"/test", "")
	if st != http.StatusOK || test["status"] != "delivered" || test["status_code"] != float64(200) {
		t.Fatalf("test: expected 200 with the delivered attempt, got %d %v", st, test)
	}
	testDelivery := rcv.Wait(t, 4)[3]
	if typ, _ := testDelivery.Event(t); typ != "hook.test" || testDelivery.Verifies(secret) != nil {
		t.Errorf("expected a signed hook.test, got %s (%v)", typ, testDelivery.Verifies(secret))
	}

	st, rotated := s.Call("POST", "/v1/hooks/"+hookID+"/rotate-secret", "")
	newSecret, _ := rotated["secret"].(string)
	if st != http.StatusOK || newSecret == "" || newSecret == secret || rotated["previous_secret_expires_at"] == nil {
		t.Fatalf("rotate: expected a new secret and the overlap's end, got %d %v", st, rotated)
	}
	s.Call("POST", "/v1/hooks/"+hookID+"/test", "")
	afterRotation := rcv.Wait(t, 5)[4]
	for name, sec := range map[string]string{"old": secret, "new": newSecret} {
		if err := afterRotation.Verifies(sec); err != nil {
			t.Errorf("after rotation: expected the %s secret to verify during the overlap, got %v", name, err)
		}
	}

	st, page := s.Call("GET", "/v1/deliveries?hook_id="+hookID, "")
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
	rcv := systemtest.NewHookReceiver(t, nil)
	balance := s.Credits()
	st, hook := s.Call("POST", "/v1/hooks", fmt.Sprintf(`{"target_url":%q,"event":"account.credits_low","threshold":%d}`, rcv.URL, balance-2))
	if st != http.StatusCreated || hook["threshold"] != float64(balance-2) {
		t.Fatalf("subscribe: %d %v", st, hook)
	}
	for range 3 { // balance-1, balance-2 (crossing), balance-3
		s.Compress()
	}
	rcv.Wait(t, 1)
	time.Sleep(500 * time.Millisecond) // room for a second event, which must not come
	got := rcv.All()
	if len(got) != 1 {
		t.Fatalf("expected one account.credits_low for three jobs at or around the threshold, got %d", len(got))
	}
	typ, data := got[0].Event(t)
	if typ != "account.credits_low" || data["credits_remaining"] != float64(balance-2) || data["threshold"] != float64(balance-2) {
		t.Errorf("expected account.credits_low at %d, got %s %v", balance-2, typ, data)
	}
	if err := got[0].Verifies(hook["secret"].(string)); err != nil {
		t.Errorf("expected it signed with the hook's secret, got %v", err)
	}
	if _, err := s.Ledger.TopUp(context.Background(), s.Key, 10); err != nil {
		t.Fatal(err)
	}
	s.Compress() // above the threshold again: armed
	time.Sleep(300 * time.Millisecond)
	if n := len(rcv.All()); n != 1 {
		t.Errorf("expected no event while above the threshold, got %d in all", n)
	}
}

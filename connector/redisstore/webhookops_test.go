package redisstore

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/redistest"
)

func TestCreateHookLimitedHoldsTheCapUnderConcurrentCreates(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for i := range 12 {
		wg.Go(func() {
			err := s.Hooks.CreateLimited(ctx, &connector.Hook{ID: "h" + strconv.Itoa(i), TargetURL: "https://hooks.example/x", Event: connector.EventJobFinished, Owner: "me"}, 5)
			if connector.ErrorCodeOf(err) == connector.ETOOMANYHOOKS {
				mu.Lock()
				refused++
				mu.Unlock()
			} else if err != nil {
				t.Errorf("CreateLimited: %v", err)
			}
		})
	}
	wg.Wait()
	hooks, err := s.Hooks.List(ctx, "me")
	if err != nil || len(hooks) != 5 || refused != 7 {
		t.Errorf("expected 5 hooks made and 7 refused with too_many_hooks, got %d hooks, %d refused (%v)", len(hooks), refused, err)
	}
	if err := s.Hooks.Delete(ctx, "me", hooks[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Hooks.CreateLimited(ctx, &connector.Hook{ID: "again", Owner: "me"}, 5); err != nil {
		t.Errorf("expected room for one hook after a delete, got %v", err)
	}
	if err := s.Hooks.CreateLimited(ctx, &connector.Hook{ID: "other", Owner: "you"}, 5); err != nil {
		t.Errorf("expected another owner unaffected, got %v", err)
	}
}

func TestDisableEnableAndRotateAHook(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	createHook(t, s, "h1", "me", time.Now())
	at := time.Date(2026, 11, 25, 1, 0, 0, 0, time.UTC)
	changed, err := s.Hooks.DisableFor(ctx, "h1", connector.DisabledFailing, at)
	if err != nil || !changed {
		t.Fatalf("DisableFor: changed %v, %v; want true", changed, err)
	}
	if changed, _ := s.Hooks.DisableFor(ctx, "h1", connector.DisabledGone, at.Add(time.Hour)); changed {
		t.Errorf("expected a second disable to change nothing")
	}
	h, _ := s.Hooks.Get(ctx, "h1")
	if !h.Disabled || h.Status != connector.HookDisabled || h.DisabledReason != connector.DisabledFailing || !h.DisabledAt.Equal(at) {
		t.Errorf("expected disabled for failing at %s, got %+v", at, h)
	}
	s.Hooks.EndpointFailed(ctx, connector.HookEndpointID("h1"), at, 0)
	if _, err := s.Hooks.Enable(ctx, "you", "h1"); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("expected another owner's enable to be not found, got %v", err)
	}
	h, err = s.Hooks.Enable(ctx, "me", "h1")
	if err != nil || h.Disabled || h.Status != connector.HookEnabled || h.DisabledAt != nil {
		t.Errorf("expected the hook enabled, got %+v (%v)", h, err)
	}
	if st, _ := s.Hooks.Endpoint(ctx, connector.HookEndpointID("h1")); !st.FailingSince.IsZero() {
		t.Errorf("expected enabling to forget the endpoint's failures, got %+v", st)
	}
	r, err := s.Hooks.RotateSecret(ctx, "me", "h1", at, time.Hour)
	if err != nil || r.SecretVersion != 1 || !r.PreviousSecretUntil.Equal(at.Add(time.Hour)) {
		t.Fatalf("RotateSecret: %+v, %v", r, err)
	}
	if h, _ := s.Hooks.Get(ctx, "h1"); h.SecretVersion != 1 || h.PreviousSecretUntil == nil {
		t.Errorf("expected the secret version kept, got %+v", h)
	}
}

// The pause is stored in milliseconds; a failure between two of them must
// not end it before the receiver's Retry-After has passed (the cause of a
// retry seen 2.999999606 s after a 503 with Retry-After: 3).
func TestEndpointPauseNeverEndsBeforeRetryAfter(t *testing.T) {
	s, _ := newStore(t, Options{})
	id := connector.HookEndpointID("pause")
	now := time.UnixMilli(1_790_000_000_000).Add(394 * time.Microsecond)
	st, err := s.Hooks.EndpointFailed(context.Background(), id, now, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.PausedUntil.Before(now.Add(3 * time.Second)) {
		t.Errorf("paused until %s, %s after the failure; want at least 3s", st.PausedUntil, st.PausedUntil.Sub(now))
	}
	if st.PausedUntil.After(now.Add(3*time.Second + time.Millisecond)) {
		t.Errorf("paused until %s; want within the millisecond after 3s", st.PausedUntil)
	}
}

func TestEndpointStateRecordsFailuresPausesAndDisabling(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	id := connector.CallbackEndpointID("me", "https://flows.example/resume/1?sig=x")
	if id != connector.CallbackEndpointID("me", "https://flows.example/resume/1?sig=y") {
		t.Errorf("expected a callback endpoint to ignore the query string")
	}
	t0 := time.UnixMilli(1_790_000_000_000).UTC()
	st, err := s.Hooks.EndpointFailed(ctx, id, t0, 3*time.Second)
	if err != nil || !st.FailingSince.Equal(t0) || !st.PausedUntil.Equal(t0.Add(3*time.Second)) {
		t.Fatalf("first failure: %+v, %v", st, err)
	}
	st, _ = s.Hooks.EndpointFailed(ctx, id, t0.Add(time.Second), time.Second)
	if !st.FailingSince.Equal(t0) || !st.PausedUntil.Equal(t0.Add(3*time.Second)) {
		t.Errorf("expected the run's start and the longer pause kept, got %+v", st)
	}
	if changed, _ := s.Hooks.DisableEndpoint(ctx, id, connector.DisabledGone, t0); !changed {
		t.Errorf("expected the first disable to change it")
	}
	if changed, _ := s.Hooks.DisableEndpoint(ctx, id, connector.DisabledGone, t0); changed {
		t.Errorf("expected the second disable to change nothing")
	}
	if st, _ := s.Hooks.Endpoint(ctx, id); !st.Disabled() || st.DisabledReason != connector.DisabledGone {
		t.Errorf("expected disabled (gone), got %+v", st)
	}
	if err := s.Hooks.EndpointSucceeded(ctx, id); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Hooks.Endpoint(ctx, id); st.Disabled() || !st.FailingSince.IsZero() {
		t.Errorf("expected a success to end the failures and the disabling, got %+v", st)
	}
}

func TestTakeSlotSpacesDeliveriesAtTheRate(t *testing.T) {
	now := time.UnixMilli(1_790_000_000_000)
	s, _ := newStore(t, Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	for i, want := range []time.Duration{0, 100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond} {
		wait, ok, err := s.Hooks.TakeSlot(ctx, "hook:r", 10, time.Second)
		if err != nil || !ok || wait != want {
			t.Errorf("slot %d at 10/s: wait %s, reserved %v (%v); want %s, reserved", i+1, wait, ok, err, want)
		}
	}
	if wait, ok, _ := s.Hooks.TakeSlot(ctx, "hook:r", 10, 350*time.Millisecond); ok || wait != 400*time.Millisecond {
		t.Errorf("beyond maxWait: wait %s, reserved %v; want 400ms, not reserved", wait, ok)
	}
	now = now.Add(time.Second)
	if wait, ok, _ := s.Hooks.TakeSlot(ctx, "hook:r", 10, time.Second); !ok || wait != 0 {
		t.Errorf("a second later: wait %s, reserved %v; want at once", wait, ok)
	}
	if wait, ok, _ := s.Hooks.TakeSlot(ctx, "hook:other", 10, time.Second); !ok || wait != 0 {
		t.Errorf("another endpoint: wait %s; want at once", wait)
	}
	if wait, ok, _ := s.Hooks.TakeSlot(ctx, "hook:r", -1, 0); !ok || wait != 0 {
		t.Errorf("no rate: wait %s; want at once", wait)
	}
}

func TestCreditsLowCrossesOncePerFall(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	var got []bool
	for _, low := range []bool{false, true, true, false, true} {
		crossed, err := s.Hooks.MarkCreditsLow(ctx, "hook:c", low)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, crossed)
	}
	if want := []bool{false, true, false, false, true}; !slices.Equal(got, want) {
		t.Errorf("crossings: got %v, want %v", got, want)
	}
}

func TestListDeliveriesPagesAcrossJobsAndMessagesNewestFirst(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	var jobs []*connector.Job
	for i := range 5 {
		j := &connector.Job{ID: "0190a0a0-0000-7000-8000-00000000000" + strconv.Itoa(i), Status: connector.StatusCompleted, Owner: "me"}
		if err := s.Jobs.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, j)
		outcome := connector.OutcomeDelivered
		if i%2 == 1 {
			outcome = connector.OutcomeFailed
		}
		a := &connector.DeliveryAttempt{DeliveryID: connector.HookDeliveryID(j.ID, "h1"), HookID: "h1", Event: connector.EventJobCompleted,
			At: now.Add(time.Duration(i) * time.Second), Outcome: outcome}
		if err := s.Hooks.RecordDeliveryAttempt(ctx, j, a); err != nil {
			t.Fatal(err)
		}
	}
	msg, _ := connector.NewMessage("msg_test", "me", connector.EventHookTest, now, map[string]string{"hook_id": "h2"})
	if err := s.Hooks.PutMessage(ctx, msg); err != nil {
		t.Fatal(err)
	}
	s.Hooks.RecordMessageAttempt(ctx, msg, &connector.DeliveryAttempt{DeliveryID: connector.MessageDeliveryID(msg.ID, "h2"), HookID: "h2",
		Event: connector.EventHookTest, At: now.Add(10 * time.Second), Outcome: connector.OutcomeDelivered})
	other := &connector.Job{ID: "0190a0a0-0000-7000-8000-0000000000ff", Status: connector.StatusCompleted, Owner: "you"}
	s.Jobs.Create(ctx, other)
	s.Hooks.RecordDeliveryAttempt(ctx, other, &connector.DeliveryAttempt{DeliveryID: "x", At: now, Outcome: connector.OutcomeDelivered})

	var ids []string
	f := connector.DeliveryFilter{Limit: 2}
	for range 10 {
		page, err := s.Hooks.ListDeliveries(ctx, "me", f)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Deliveries {
			ids = append(ids, r.JobID+r.MessageID)
		}
		if f.Cursor = page.NextCursor; f.Cursor == "" {
			break
		}
	}
	want := []string{"msg_test", jobs[4].ID, jobs[3].ID, jobs[2].ID, jobs[1].ID, jobs[0].ID}
	if len(ids) != len(want) {
		t.Fatalf("expected %d deliveries newest first, got %v", len(want), ids)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Errorf("delivery %d: got %s, want %s", i, ids[i], want[i])
		}
	}
	failed, err := s.Hooks.ListDeliveries(ctx, "me", connector.DeliveryFilter{Status: connector.DeliveryFailed, HookID: "h1"})
	if err != nil || len(failed.Deliveries) != 2 || failed.Deliveries[0].JobID != jobs[3].ID || failed.Deliveries[1].JobID != jobs[1].ID {
		t.Errorf("expected h1's two failed deliveries, got %+v (%v)", failed, err)
	}
	since, _ := s.Hooks.ListDeliveries(ctx, "me", connector.DeliveryFilter{Since: now.Add(3 * time.Second), HookID: "h1"})
	if len(since.Deliveries) != 2 {
		t.Errorf("expected the 2 deliveries first attempted since +3s, got %d", len(since.Deliveries))
	}
	if _, err := s.Hooks.ListDeliveries(ctx, "me", connector.DeliveryFilter{Cursor: "%%"}); connector.ErrorCodeOf(err) != connector.EINVALID {
		t.Errorf("expected a bad cursor to be invalid_input, got %v", err)
	}
}

func TestCallbackSecretVersionsRotate(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	if v, err := s.Hooks.CallbackSecretVersion(ctx, "me"); err != nil || v.Version != 0 || !v.PreviousUntil.IsZero() {
		t.Fatalf("before any rotation: %+v, %v", v, err)
	}
	at := time.UnixMilli(1_790_000_000_000).UTC()
	v, err := s.Hooks.RotateCallbackSecret(ctx, "me", at, time.Hour)
	if err != nil || v.Version != 1 || !v.PreviousUntil.Equal(at.Add(time.Hour)) {
		t.Fatalf("rotation: %+v, %v", v, err)
	}
	if got, _ := s.Hooks.CallbackSecretVersion(ctx, "me"); got != v {
		t.Errorf("expected %+v kept, got %+v", v, got)
	}
}

// TestWebhookOperationsWorkOnARedisCluster: every script of the webhook
// operations touches one slot, and the pipelines that span slots (an
// attempt's record beside the owner's index) are split by the client.
func TestWebhookOperationsWorkOnARedisCluster(t *testing.T) {
	c := redistest.NewCluster(t)
	s := New(c.Client, Options{Prefix: c.Prefix})
	ctx := context.Background()
	for i := range 3 {
		if err := s.Hooks.CreateLimited(ctx, &connector.Hook{ID: "ch" + strconv.Itoa(i), Owner: "owner-c", Event: connector.EventJobFinished}, 2); i < 2 && err != nil {
			t.Fatalf("CreateLimited: %v", err)
		} else if i == 2 && connector.ErrorCodeOf(err) != connector.ETOOMANYHOOKS {
			t.Fatalf("third hook: expected too_many_hooks, got %v", err)
		}
	}
	if _, err := s.Hooks.DisableFor(ctx, "ch0", connector.DisabledGone, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Hooks.Enable(ctx, "owner-c", "ch0"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Hooks.RotateSecret(ctx, "owner-c", "ch0", time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	id := connector.HookEndpointID("ch0")
	if _, _, _, err := s.Hooks.AdmitEndpoint(ctx, id, 10, time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Hooks.EndpointFailed(ctx, id, time.Now(), time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Hooks.MarkCreditsLow(ctx, id, true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Hooks.RotateCallbackSecret(ctx, "owner-c", time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		j := newJob(t, s, "owner-c", connector.StatusCompleted)
		if err := s.Hooks.RecordDeliveryAttempt(ctx, j, &connector.DeliveryAttempt{DeliveryID: "d" + strconv.Itoa(i), HookID: "ch0", At: time.Now(), Outcome: connector.OutcomeFailed}); err != nil {
			t.Fatalf("RecordDeliveryAttempt: %v", err)
		}
	}
	msg, _ := connector.NewMessage("msg_cluster", "owner-c", connector.EventHookTest, time.Now(), map[string]string{})
	if err := s.Hooks.PutMessage(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if err := s.Hooks.RecordMessageAttempt(ctx, msg, &connector.DeliveryAttempt{DeliveryID: "dm", HookID: "ch0", At: time.Now(), Outcome: connector.OutcomeDelivered}); err != nil {
		t.Fatal(err)
	}
	page, err := s.Hooks.ListDeliveries(ctx, "owner-c", connector.DeliveryFilter{HookID: "ch0"})
	if err != nil || len(page.Deliveries) != 7 {
		t.Fatalf("ListDeliveries on a cluster: %d deliveries, %v; want 7", len(page.Deliveries), err)
	}
}

package redisstore

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

func TestDeliveryAttemptsComeBackInOrderAndExpireWithTheJob(t *testing.T) {
	s, r := newStore(t, Options{JobTTL: time.Hour})
	ctx := context.Background()
	job := newJob(t, s, "o", connector.StatusCompleted)
	next := time.Date(2026, 11, 21, 10, 0, 5, 0, time.UTC)
	want := []*connector.DeliveryAttempt{
		{DeliveryID: connector.CallbackDeliveryID(job.ID), Event: connector.EventJobCompleted, Target: "https://cb.example/done",
			At: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), DurationMS: 31, StatusCode: 500, Response: "oops",
			Error: "webhook URL answered 500 Internal Server Error", Outcome: connector.OutcomeRetrying, NextRetryAt: &next},
		{DeliveryID: connector.CallbackDeliveryID(job.ID), Event: connector.EventJobCompleted, Target: "https://cb.example/done",
			At: next, DurationMS: 12, StatusCode: 204, Outcome: connector.OutcomeDelivered},
		{DeliveryID: connector.HookDeliveryID(job.ID, "h1"), HookID: "h1", Event: connector.EventJobCompleted, Target: "https://hooks.example/x",
			At: next, StatusCode: 200, Outcome: connector.OutcomeDelivered, Redelivery: true},
	}
	for _, a := range want {
		if err := s.Hooks.RecordDeliveryAttempt(ctx, job, a); err != nil {
			t.Fatalf("RecordDeliveryAttempt: %v", err)
		}
	}
	got, err := s.Hooks.DeliveryAttempts(ctx, job.ID)
	if err != nil {
		t.Fatalf("DeliveryAttempts: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("expected the attempts as recorded, oldest first, got %+v", got)
	}
	jobTTL := r.Client.PTTL(ctx, s.conn.keys.job(job.ID)).Val()
	logTTL := r.Client.PTTL(ctx, s.conn.keys.deliveries(job.ID)).Val()
	if logTTL <= 0 || logTTL > jobTTL+time.Second || logTTL < jobTTL-5*time.Second {
		t.Errorf("expected the delivery log to expire with the job (job TTL %s), got TTL %s", jobTTL, logTTL)
	}
}

func TestDeliveryAttemptsOfAJobWithoutAnyAreEmpty(t *testing.T) {
	s, _ := newStore(t, Options{})
	got, err := s.Hooks.DeliveryAttempts(context.Background(), "no-such-job")
	if err != nil || got == nil || len(got) != 0 {
		t.Errorf("expected an empty list and no error, got %v, %v", got, err)
	}
}

func TestDeliveryLogKeepsTheNewestAttemptsUpToTheCap(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	job := newJob(t, s, "o", connector.StatusCompleted)
	for i := range MaxDeliveryAttempts + 5 {
		a := &connector.DeliveryAttempt{DeliveryID: fmt.Sprintf("d%d", i), Outcome: connector.OutcomeFailed}
		if err := s.Hooks.RecordDeliveryAttempt(ctx, job, a); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := s.Hooks.DeliveryAttempts(ctx, job.ID)
	if len(got) != MaxDeliveryAttempts || got[0].DeliveryID != "d5" || got[len(got)-1].DeliveryID != fmt.Sprintf("d%d", MaxDeliveryAttempts+4) {
		t.Errorf("expected the newest %d attempts (d5 ... d%d), got %d from %s", MaxDeliveryAttempts, MaxDeliveryAttempts+4, len(got), got[0].DeliveryID)
	}
}

func TestDeliveryLogExpiresOnMiniredisWhenTheJobDoes(t *testing.T) {
	s, r := newStore(t, Options{JobTTL: time.Hour})
	if r.Mini == nil {
		t.Skip("expiry is checked on miniredis only (FastForward)")
	}
	ctx := context.Background()
	job := newJob(t, s, "o", connector.StatusCompleted)
	if err := s.Hooks.RecordDeliveryAttempt(ctx, job, &connector.DeliveryAttempt{DeliveryID: "d"}); err != nil {
		t.Fatal(err)
	}
	r.Mini.FastForward(time.Hour + time.Second)
	if _, err := s.Jobs.Get(ctx, job.ID); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Fatalf("expected the job gone, got %v", err)
	}
	if got, _ := s.Hooks.DeliveryAttempts(ctx, job.ID); len(got) != 0 {
		t.Errorf("expected the delivery log gone with the job, got %d attempts", len(got))
	}
}

func TestNoDeliveryLogIsKeptForAJobThatIsGone(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	job := newJob(t, s, "o", connector.StatusCompleted)
	r.Client.Del(ctx, s.conn.keys.job(job.ID))
	if err := s.Hooks.RecordDeliveryAttempt(ctx, job, &connector.DeliveryAttempt{DeliveryID: "d"}); err != nil {
		t.Fatal(err)
	}
	if n := r.Client.Exists(ctx, s.conn.keys.deliveries(job.ID)).Val(); n != 0 {
		t.Errorf("expected no delivery log without the job (it would never expire), got one")
	}
}

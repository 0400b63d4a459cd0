package redisstore

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// A re-run reads what earlier runs did: calls begun, calls answered (each
// counted once however often it is recorded), and the kept 200 answer.
func TestCallRecordCountsCallsAnswersAndKeepsTheChargedAnswer(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	if a, err := s.Jobs.callRecord(ctx, "j1"); err != nil || a.Calls != 0 || a.Kept != nil {
		t.Fatalf("Attempts of a new job = %+v, %v; want zero", a, err)
	}
	a, err := s.Jobs.beginCall(ctx, "j1", 1)
	if err != nil || a.Calls != 1 || a.Unanswered() != 1 {
		t.Fatalf("BeginCall = %+v, %v; want 1 call, 1 unanswered", a, err)
	}
	// A 500: answered, twice recorded (a lost reply), counted once.
	for range 2 {
		if err := s.Jobs.answer(ctx, "j1", 1, ""); err != nil {
			t.Fatalf("AnswerCall: %v", err)
		}
	}
	// Call 2 never answered (the worker died mid-call); call 3 was charged.
	s.Jobs.beginCall(ctx, "j1", 1)
	a, err = s.Jobs.beginCall(ctx, "j1", 1)
	if err != nil || a.Calls != 3 || a.Answered != 1 || a.Unanswered() != 2 {
		t.Fatalf("third BeginCall = %+v, %v; want 3 calls, 1 answered", a, err)
	}
	kept := &connector.KeptAnswer{Input: connector.JobInput{Kind: connector.InputURL, Size: 10},
		Result: &connector.JobResult{OriginalSize: 10, CompressedSize: 7, MIMEType: "image/png"}}
	if err := s.Jobs.keepAnswerOnly(ctx, "j1", 3, kept); err != nil {
		t.Fatalf("KeepAnswer: %v", err)
	}
	a, err = s.Jobs.callRecord(ctx, "j1")
	if err != nil || a.Calls != 3 || a.Answered != 2 || a.Unanswered() != 1 || a.Kept == nil ||
		a.Kept.Result.CompressedSize != 7 || a.Kept.Input.Size != 10 {
		t.Fatalf("Attempts = %+v (kept %+v), %v; want 3 calls, 2 answered, the kept result", a, a.Kept, err)
	}
	if ttl := r.Client.PTTL(ctx, s.conn.keys.calls("j1")).Val(); ttl <= 0 || ttl > DefaultJobTTL {
		t.Errorf("call record TTL = %v, want (0, %v] like the job", ttl, DefaultJobTTL)
	}
	if err := s.Jobs.answer(ctx, "gone", 1, ""); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("AnswerCall without a record = %v, want not_found", err)
	}
}

// A call is open from its begin until its answer is recorded, marked with
// the run that began it and its run's deadline.
func TestCallRecordKeepsOpenCallsUntilAnswered(t *testing.T) {
	s, _ := newStore(t, Options{})
	deadline := time.Now().Add(time.Minute).Truncate(time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	s.Jobs.beginCall(ctx, "j1", 1)
	s.Jobs.beginCall(ctx, "j1", 2)
	a, err := s.Jobs.callRecord(ctx, "j1")
	want := []connector.OpenCall{{Call: 1, Run: 1, Until: deadline}, {Call: 2, Run: 2, Until: deadline}}
	if err != nil || !reflect.DeepEqual(a.Open, want) {
		t.Fatalf("open calls = %+v, %v; want %+v", a.Open, err, want)
	}
	if until, open := a.OpenEarlier(2, time.Now()); !open || !until.Equal(deadline) {
		t.Errorf("OpenEarlier(2) = %v, %v; want run 1's call open until %v", until, open, deadline)
	}
	if _, open := a.OpenEarlier(1, time.Now()); open {
		t.Error("OpenEarlier(1): run 1's own call and run 2's must not count")
	}
	if err := s.Jobs.answer(ctx, "j1", 1, ""); err != nil {
		t.Fatal(err)
	}
	if err := s.Jobs.keepAnswerOnly(ctx, "j1", 2, &connector.KeptAnswer{Result: &connector.JobResult{}}); err != nil {
		t.Fatal(err)
	}
	if a, err = s.Jobs.callRecord(ctx, "j1"); err != nil || len(a.Open) != 0 {
		t.Fatalf("open calls after both answers = %+v, %v; want none", a.Open, err)
	}
}

package connector

import (
	"testing"
	"time"
)

func TestGroupDeliveriesNumbersAttemptsPerDeliveryAndSaysWhereEachStands(t *testing.T) {
	next := time.Now().Add(time.Minute)
	log := []*DeliveryAttempt{
		{DeliveryID: "cb", Event: EventJobCompleted, Target: "https://a.example/cb", Outcome: OutcomeRetrying, NextRetryAt: &next},
		{DeliveryID: "h1", HookID: "hook1", Event: EventJobCompleted, Target: "https://b.example/in", Outcome: OutcomeFailed},
		{DeliveryID: "cb", Event: EventJobCompleted, Target: "https://a.example/cb", Outcome: OutcomeFailed, Redelivery: true},
		{DeliveryID: "h2", HookID: "hook2", Event: EventJobCompleted, Outcome: OutcomeRetrying, NextRetryAt: &next},
		{DeliveryID: "h2", HookID: "hook2", Event: EventJobCompleted, Outcome: OutcomeDelivered},
		{DeliveryID: "h2", HookID: "hook2", Event: EventJobCompleted, Outcome: OutcomeFailed, Redelivery: true},
	}
	got := GroupDeliveries(log)
	want := []struct {
		id, kind string
		status   DeliveryStatus
		attempts int
	}{
		{"cb", KindCallback, DeliveryPending, 2}, // a retry is still due
		{"h1", KindHook, DeliveryFailed, 1},
		{"h2", KindHook, DeliveryDelivered, 3}, // once delivered, a failed redelivery does not undo it
	}
	if len(got) != len(want) {
		t.Fatalf("expected %d deliveries, got %d", len(want), len(got))
	}
	for i, w := range want {
		g := got[i]
		if g.ID != w.id || g.Kind != w.kind || g.Status != w.status || len(g.Attempts) != w.attempts {
			t.Errorf("delivery %d: expected %s %s %s with %d attempts, got %s %s %s with %d", i, w.id, w.kind, w.status, w.attempts, g.ID, g.Kind, g.Status, len(g.Attempts))
		}
		for n, a := range g.Attempts {
			if a.Attempt != n+1 {
				t.Errorf("%s: expected attempt %d numbered %d, got %d", g.ID, n, n+1, a.Attempt)
			}
		}
	}
	if got[0].Target != "https://a.example/cb" || got[1].HookID != "hook1" {
		t.Errorf("expected the target and hook id kept, got %q and %q", got[0].Target, got[1].HookID)
	}
}

func TestTargetForDisplayDropsQueryAndUserInfo(t *testing.T) {
	for in, want := range map[string]string{
		"https://user:pw@hooks.example/resume/42?signature=abc#x": "https://hooks.example/resume/42",
		"http://127.0.0.1:9000/done":                              "http://127.0.0.1:9000/done",
		"not a url":                                               "",
	} {
		if got := TargetForDisplay(in); got != want {
			t.Errorf("TargetForDisplay(%q): expected %q, got %q", in, want, got)
		}
	}
}

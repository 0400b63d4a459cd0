package redisstore

import (
	"context"
	"testing"
	"time"
)

// A key's outbound budget lets a burst of perMinute through at once, then
// one every minute/perMinute; a turn further off than the caller waits is
// not reserved. Keys do not share a budget.
func TestSpendOutboundIsABurstThenEvenTurns(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	s, _ := newStore(t, Options{Now: func() time.Time { return now }})
	ctx := context.Background()
	for i := range 3 {
		if wait, ok, err := s.Accounts.SpendOutbound(ctx, "owner", 3, time.Hour); err != nil || !ok || wait != 0 {
			t.Fatalf("burst turn %d: expected at once, got %v, %v, %v", i, wait, ok, err)
		}
	}
	if wait, ok, err := s.Accounts.SpendOutbound(ctx, "owner", 3, 10*time.Second); err != nil || ok || wait != 20*time.Second {
		t.Fatalf("past the burst with a 10 s limit: expected not reserved, 20 s off, got %v, %v, %v", wait, ok, err)
	}
	for i, want := range []time.Duration{20 * time.Second, 40 * time.Second} {
		if wait, ok, err := s.Accounts.SpendOutbound(ctx, "owner", 3, time.Hour); err != nil || !ok || wait != want {
			t.Fatalf("turn %d past the burst: expected reserved %v on, got %v, %v, %v", i, want, wait, ok, err)
		}
	}
	if wait, ok, err := s.Accounts.SpendOutbound(ctx, "another owner", 3, time.Hour); err != nil || !ok || wait != 0 {
		t.Fatalf("another key: expected its own budget, got %v, %v, %v", wait, ok, err)
	}
	now = now.Add(time.Minute)
	if wait, ok, err := s.Accounts.SpendOutbound(ctx, "owner", 3, time.Hour); err != nil || !ok || wait != 0 {
		t.Fatalf("a minute on: expected a turn at once, got %v, %v, %v", wait, ok, err)
	}
}

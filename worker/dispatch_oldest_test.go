package worker

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

// FairOldest dates the oldest job waiting for a worker by its UUIDv7 id,
// across the keys in the ring; a running job is not waiting.
func TestFairOldestIsTheAgeOfTheOldestReadyJob(t *testing.T) {
	h := newFairHarness(t)
	ctx := context.Background()
	if d, err := h.queue.FairOldest(ctx); err != nil || d != 0 {
		t.Fatalf("empty queue: %v %v; want 0", d, err)
	}
	old := v7At(time.Now().Add(-time.Hour))
	mustEnqueue(t, h.queue.fair, uuid.Must(uuid.NewV7()).String(), "a")
	mustEnqueue(t, h.queue.fair, old, "b")
	d, err := h.queue.FairOldest(ctx)
	if err != nil || d < 59*time.Minute || d > 61*time.Minute {
		t.Fatalf("FairOldest = %v (%v); want about an hour", d, err)
	}
	// b's job leaves the lists (dispatched): a's is the oldest waiting.
	for j := mustDispatch(t, h.queue.fair, time.Minute); j.jobID != old; j = mustDispatch(t, h.queue.fair, time.Minute) {
	}
	if d, err := h.queue.FairOldest(ctx); err != nil || d > time.Minute {
		t.Fatalf("after the old job was dispatched: %v (%v); want seconds", d, err)
	}
}

// v7At is a UUIDv7 made at t: its first 48 bits are t in Unix ms.
func v7At(t time.Time) string {
	u := uuid.Must(uuid.NewV7())
	ms := uint64(t.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (8 * (5 - i)))
	}
	return u.String()
}

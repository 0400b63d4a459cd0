package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// A waiter on a batch is woken by its last item's end (the count publishes
// the finish) and answers the finished batch; an earlier end does not wake
// it for good.
func TestWaitBatchWakesWhenTheLastItemEnds(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	b := &connector.Batch{ID: "b-wait", Owner: "o", JobIDs: []string{"j1", "j2"}}
	if err := s.Batches.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, generous)
	defer cancel()
	type result struct {
		b   *connector.Batch
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := s.Batches.Wait(wctx, b)
		done <- result{got, err}
	}()
	untilSubscribed(t, r, s, b.ID)
	if _, err := s.Batches.ItemEnded(ctx, b.ID, "j1", true, 10, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case res := <-done:
		t.Fatalf("Wait = %+v, %v with one item of two ended, want it to keep waiting", res.b, res.err)
	case <-time.After(50 * time.Millisecond):
	}
	if _, err := s.Batches.ItemEnded(ctx, b.ID, "j2", false, 0, time.Now()); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.err != nil || res.b.Status != connector.BatchFinished || res.b.Counts.Completed != 1 || res.b.Counts.Failed != 1 {
		t.Fatalf("Wait = %+v, %v; want the finished batch (1 completed, 1 failed), nil", res.b, res.err)
	}
}

// A batch made but not yet published (its publication met a Redis hiccup;
// the sweeper or a retry publishes it) is not yet, not gone: the wait ends
// with its deadline and the batch as it was made.
func TestWaitBatchReadsAnUnpublishedBatchAsNotYet(t *testing.T) {
	s, _ := newStore(t, Options{})
	b := &connector.Batch{ID: "b-unpublished", Owner: "o", JobIDs: []string{"j1"}, Status: connector.BatchRunning}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	got, err := s.Batches.Wait(ctx, b)
	if !errors.Is(err, context.DeadlineExceeded) || got != b {
		t.Fatalf("Wait = %+v, %v; want the batch as made and context.DeadlineExceeded", got, err)
	}
}

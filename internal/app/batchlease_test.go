package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/app"
)

// slowMaking is a service on the fixture's Redis whose batch requests
// (lease lease) stop at their first item until released.
func (f *fixture) slowMaking(lease time.Duration) (s *app.Maker, staged, release chan struct{}) {
	store := redisstore.New(f.r.Client, redisstore.Options{Prefix: f.r.Prefix, IdempotencyLease: lease})
	staged, release = make(chan struct{}), make(chan struct{})
	stage := &failingStage{Jobs: store.Jobs, onStage: func(n int) {
		if n == 1 {
			close(staged)
			<-release
		}
	}}
	s = f.service(func(c *app.Config) { c.Jobs, c.Batches, c.Idempotency = stage, store.Batches, store.Idempotency })
	return s, staged, release
}

// A live request's batch is its own however long its items take: the
// sweeper, though the batch is older than it looks for, leaves it while
// the request renews its lease, and the request answers it made. With an
// Idempotency-Key or without.
func TestSweepLeavesTheBatchOfASlowLiveRequest(t *testing.T) {
	for name, key := range map[string]string{"without a key": "", "with a key": "abc"} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			const lease = 2500 * time.Millisecond
			s, staged, release := f.slowMaking(lease)
			type answer struct {
				b   *connector.Batch
				err error
			}
			done := make(chan answer, 1)
			go func() {
				b, _, err := s.CreateBatch(ctx, &app.BatchRequest{Owner: "o1", Key: "k", IdempotencyKey: key, Fingerprint: "fp", Items: urlItems(10)})
				done <- answer{b, err}
			}()
			<-staged
			time.Sleep(lease + time.Second) // past the lease: only its renewal keeps it
			if n, more, err := f.service(nil).SweepBatches(ctx, time.Now().Add(time.Second)); err != nil || n != 0 || more {
				t.Fatalf("settled %d (%v), want the live request's batch left to it", n, err)
			}
			close(release)
			a := <-done
			if a.err != nil {
				t.Fatalf("the slow request lost its batch: %v", a.err)
			}
			got, err := f.store.Batches.Get(ctx, a.b.ID)
			if err != nil || got.Counts.Total != 10 {
				t.Fatalf("batch %+v %v, want published with 10 items", got, err)
			}
			if q := f.queue.ids(); len(q) != 10 {
				t.Errorf("%d items queued, want 10", len(q))
			}
		})
	}
}

// A retry that takes over the key of a request still making its batch
// (the key's lease lapsed, the batch's is held) makes no second batch: it
// waits for it, and answers 409 while that request lives; the request
// answers its batch made.
func TestBatchTakeoverWaitsForALiveRequestsBatch(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s, staged, release := f.slowMaking(10 * time.Second)
	req := func() *app.BatchRequest {
		return &app.BatchRequest{Owner: "o1", Key: "k", IdempotencyKey: "abc", Fingerprint: "fp", Items: urlItems(5)}
	}
	type answer struct {
		b   *connector.Batch
		err error
	}
	done := make(chan answer, 1)
	go func() {
		b, _, err := s.CreateBatch(ctx, req())
		done <- answer{b, err}
	}()
	<-staged
	f.r.Client.Del(ctx, f.r.Prefix+"idemlease:{o1}:batch:abc") // the key's lease lapsed (Redis slow)
	retry := f.service(func(c *app.Config) { c.IdempotencyWait = 300 * time.Millisecond })
	if b, _, err := retry.CreateBatch(ctx, req()); connector.ErrorCodeOf(err) != connector.ECONFLICT {
		t.Fatalf("retry: %+v %v, want 409 while the first request makes its batch", b, err)
	}
	close(release)
	a := <-done
	if a.err != nil {
		t.Fatalf("the first request lost its batch: %v", a.err)
	}
	page, err := f.store.Batches.List(ctx, "o1", connector.BatchFilter{})
	if err != nil || len(page.Batches) != 1 || page.Batches[0].ID != a.b.ID {
		t.Fatalf("batches %+v %v, want the first request's alone", page, err)
	}
	if q := f.queue.ids(); len(q) != 5 {
		t.Errorf("%d items queued, want 5 (one batch)", len(q))
	}
}

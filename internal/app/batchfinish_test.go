package app_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/app"
)

// commitHiccup is the job store with its first failures commits failing
// (a Redis hiccup while a made batch is finished).
type commitHiccup struct {
	*redisstore.Jobs
	mu       sync.Mutex
	failures int
}

func (c *commitHiccup) CommitStaged(ctx context.Context, owner string, ids []string) error {
	c.mu.Lock()
	fail := c.failures > 0
	c.failures--
	c.mu.Unlock()
	if fail {
		return &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage unavailable"}
	}
	return c.Jobs.CommitStaged(ctx, owner, ids)
}

// The request that makes a batch finishes it before answering, over a
// Redis hiccup: the batch its 2xx names is published and its items queued,
// not left for the sweeper (a GET of its Location would be 404 until then).
func TestMadeBatchIsFinishedBeforeTheAnswer(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.service(func(c *app.Config) { c.Jobs = &commitHiccup{Jobs: f.store.Jobs, failures: 2} })
	b, _, err := s.CreateBatch(ctx, &app.BatchRequest{Owner: "o1", Key: "k", Items: urlItems(10)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Batches.Get(ctx, b.ID)
	if err != nil || got.Counts.Total != 10 {
		t.Fatalf("batch answered: %+v %v, want published with 10 items", got, err)
	}
	if q := f.queue.ids(); len(q) != 10 {
		t.Errorf("%d items queued, want 10", len(q))
	}
	if ids, err := f.store.Batches.MakingBefore(ctx, time.Now().Add(time.Second), 10); err != nil || len(ids) != 0 {
		t.Errorf("batches still making: %v %v, want its making ended", ids, err)
	}
}

// A retry taking over the key of a request killed after its batch was
// decided made answers that batch even when finishing it meets a Redis
// hiccup: it tries again in place, and never makes a second batch.
func TestBatchTakeoverFinishesAMadeBatchOverAHiccup(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := func() *app.BatchRequest {
		return &app.BatchRequest{Owner: "o1", Key: "k", IdempotencyKey: "abc", Fingerprint: "fp", Items: urlItems(5)}
	}
	first, _, err := f.service(f.killedAt(true)).CreateBatch(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	// The killed request never completed its key, and its lease lapsed.
	f.r.Client.Del(ctx, f.r.Prefix+"idem:{o1}:batch:abc")
	if _, reserved, err := f.store.Idempotency.Reserve(ctx, "o1", "batch:abc", "fp", first.ID); err != nil || !reserved {
		t.Fatalf("re-reserve: %v", err)
	}
	f.r.Client.Del(ctx, f.r.Prefix+"idemlease:{o1}:batch:abc")

	retry := f.service(func(c *app.Config) { c.Jobs = &commitHiccup{Jobs: f.store.Jobs, failures: 1} })
	b, _, err := retry.CreateBatch(ctx, req())
	if err != nil {
		t.Fatal(err)
	}
	if b.ID != first.ID {
		t.Errorf("answer %s, want the made batch %s", b.ID, first.ID)
	}
	page, err := f.store.Batches.List(ctx, "o1", connector.BatchFilter{})
	if err != nil || len(page.Batches) != 1 {
		t.Errorf("batches %+v %v, want the made one alone", page, err)
	}
}

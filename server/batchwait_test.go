package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/server"
)

// unpublishedAtFirst is the batch store of a request whose made batch is
// published a little late (its finish met a Redis hiccup; the sweeper
// publishes it): its first reads are not found.
type unpublishedAtFirst struct {
	server.BatchStore
	mu      sync.Mutex
	missing int // reads left to answer not found
}

func (s *unpublishedAtFirst) GetBatch(ctx context.Context, id string) (*connector.Batch, error) {
	s.mu.Lock()
	hide := s.missing > 0
	s.missing--
	s.mu.Unlock()
	if hide {
		return nil, connector.Errorf(connector.ENOTFOUND, "batch %s not found", id)
	}
	return s.BatchStore.GetBatch(ctx, id)
}

// A request waiting for the batch it just made (?wait) reads a batch not
// yet published as not yet, not as gone: it answers the batch (202 while
// it runs), not 404.
func TestBatchWaitReadsAMadeBatchNotYetPublishedAsNotYet(t *testing.T) {
	var store *unpublishedAtFirst
	h := newHarness(t, func(c *harnessConfig) {
		store = &unpublishedAtFirst{BatchStore: c.Batches, missing: 3}
		c.Batches = store
	})
	body := map[string]any{"items": []map[string]any{{"image_url": "https://images.example.com/cat.png"}}}
	r := h.postJSON("/v1/batches?wait=1", body, nil)
	expectStatus(t, r, http.StatusAccepted)
	if r.str("id") == "" || r.header.Get("Location") == "" {
		t.Fatalf("answer %s, want the batch with its Location", r.body)
	}
}

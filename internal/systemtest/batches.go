package systemtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BatchView is the part of a batch's JSON the tests read.
type BatchView struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Counts struct {
		Total, Queued, Processing, Completed, Failed int
	} `json:"counts"`
	SavedBytes int64      `json:"saved_bytes"`
	FinishedAt *time.Time `json:"finished_at"`
	Metadata   map[string]any
	Links      struct{ Self, Jobs, Archive string } `json:"links"`
}

// BatchJobView is a job of a batch, as GET /v1/batches/{id}/jobs lists it.
type BatchJobView struct {
	JobView
	BatchID          string `json:"batch_id"`
	Index            *int   `json:"index"`
	DeduplicatedFrom string `json:"deduplicated_from"`
	Input            struct {
		Filename string `json:"filename"`
	} `json:"input"`
}

// Received is one delivery a Receiver got.
type Received struct {
	Path   string // with the query
	Header http.Header
	Body   []byte
}

// Receiver is a webhook receiver on loopback answering 200 to everything:
// its URL, and each request it got on the channel (up to 100 unread).
func Receiver(t *testing.T) (string, chan Received) {
	got := make(chan Received, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- Received{r.URL.RequestURI(), r.Header.Clone(), body}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, got
}

// WaitBatch polls the batch until it is finished.
func (s *System) WaitBatch(id string) BatchView {
	s.T.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		st, _, body := s.Request("GET", "/v1/batches/"+id, "", nil, map[string]string{"X-API-Key": s.Key})
		var b BatchView
		if err := json.Unmarshal(body, &b); err != nil || st != http.StatusOK {
			s.T.Fatalf("GET batch: %d %s", st, body)
		}
		if b.Status == "finished" {
			return b
		}
		if time.Now().After(deadline) {
			s.T.Fatalf("batch not finished within 60s: %s", body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

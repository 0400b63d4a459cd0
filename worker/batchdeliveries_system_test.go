package worker_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/imgflow/imgflow/internal/systemtest"
)

// batch.finished takes the one delivery path: its callback is listed in
// the key's GET /v1/deliveries like any job's, delivered.
func TestBatchFinishedIsInTheKeysDeliveries(t *testing.T) {
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.Key}
	rcv, got := systemtest.Receiver(t)
	req, _ := json.Marshal(map[string]any{"items": []map[string]any{{"image_url": s.Samples + "/photo.png"}}, "callback_url": rcv + "/batch?sig=1"})
	st, _, body := s.Request("POST", "/v1/batches", "application/json", bytes.NewReader(req), auth)
	if st != http.StatusAccepted {
		t.Fatalf("POST /v1/batches: %d %s", st, body)
	}
	var created systemtest.BatchView
	json.Unmarshal(body, &created)
	s.WaitBatch(created.ID)
	select {
	case <-got:
	case <-time.After(30 * time.Second):
		t.Fatal("expected batch.finished at the callback within 30s")
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, page := s.Call("GET", "/v1/deliveries", "")
		deliveries, _ := page["deliveries"].([]any)
		for _, d := range deliveries {
			d, _ := d.(map[string]any)
			if d["event"] == "batch.finished" && d["kind"] == "callback" && d["status"] == "delivered" && d["message_id"] != "" {
				return
			}
		}
		if st != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("GET /v1/deliveries: expected the delivered batch.finished callback, got %d %v", st, page)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

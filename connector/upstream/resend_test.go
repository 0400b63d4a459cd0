package upstream

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
)

// A call the API took and left without an answer (it closed the
// connection) comes back as an error, never sent again behind the caller's
// back: Go's transport resends a POST that carries an Idempotency-Key on
// its own when a reused connection closes unanswered, and the worker's
// call record would count one call where an API ignoring the key charged
// two.
func TestCompressIsNotResentByTheTransport(t *testing.T) {
	var calls atomic.Int32
	srv := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if calls.Add(1) == 2 {
			panic(http.ErrAbortHandler) // taken, then no answer
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, okAnswer)
	})
	c := New(srv.URL)
	// The first call leaves a kept-alive connection for the second.
	if _, err := c.Compress(context.Background(), "k", "job-1", png(100), "a.png"); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if _, err := c.Compress(context.Background(), "k", "job-2", png(100), "a.png"); err == nil {
		t.Errorf("the second call got an answer; the API gave none (the transport sent it again)")
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the API got %d calls for two Compress calls", n)
	}
}

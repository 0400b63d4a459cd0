package fetch

import (
	"net/http"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
)

// TestSlowHostsAreCutEarly: a host that never starts answering, and one
// that trickles its image, fail with a message naming the reason instead
// of holding the fetch for the whole Timeout.
func TestSlowHostsAreCutEarly(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	silent := serve(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	trickle := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		w.Write(pngHead)
		for i := 0; i < 1000; i++ {
			select {
			case <-release:
				return
			case <-r.Context().Done():
				return
			case <-time.After(50 * time.Millisecond):
			}
			w.Write([]byte{0})
			w.(http.Flusher).Flush()
		}
	})
	f := New(Options{Allow: guard.Loopback(), Timeout: time.Minute, FirstByte: 300 * time.Millisecond,
		MinRate: 1 << 10, RateGrace: 500 * time.Millisecond})

	e := fetchErr(t, f, silent.URL+"/a.png")
	expectError(t, e, connector.EFETCH, "image_url host 127.0.0.1 did not start answering within 300ms")
	if !e.Retryable {
		t.Error("a host that did not answer may answer later: want retryable")
	}
	e = fetchErr(t, f, trickle.URL+"/a.png")
	expectError(t, e, connector.EFETCH, "image_url host 127.0.0.1 sent the image slower than 1 KiB/s")
	if e.Retryable {
		t.Error("a trickling host would hold a worker as long again: want final")
	}
	// A host that answers at a normal pace is unaffected.
	if _, err := f.FetchImage(t.Context(), servePNG(t, 200_000).URL+"/ok.png"); err != nil {
		t.Errorf("a fast host: %v", err)
	}
}

package server_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// Anonymous connections trickling large bodies take no slot: each is
// refused before its body is read, and a keyed upload still gets in while
// they are all open.
func TestTricklingAnonymousBodiesDoNotLockAKeyedUploadOut(t *testing.T) {
	h := newHarness(t, func(c *harnessConfig) { c.MaxLargeBodies, c.LargeBodyWait = 2, 50*time.Millisecond })
	const trickling = 45
	bodies := make([]*stalledBody, trickling)
	answers := make([]*response, trickling)
	var wg sync.WaitGroup
	for i := range bodies {
		bodies[i] = newStalledBody()
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			go bodies[i].pw.Write([]byte(`{"api_key":"` + h.key + `","image_base64":"`)) // a trickle, never finished
			answers[i], _ = h.tryPost("/v1/jobs", 1<<20, bodies[i].pr, map[string]string{"Content-Type": "application/json"})
		}(i)
	}
	wg.Wait() // every anonymous request was answered while its body was still open
	for _, b := range bodies {
		defer b.pw.Close()
	}
	for i, r := range answers {
		if r == nil {
			t.Fatalf("trickling request %d got no answer", i)
		}
		if r.status != http.StatusUnauthorized || !strings.Contains(string(r.body), `"`+string(connector.EUNAUTHORIZED)+`"`) ||
			!strings.Contains(string(r.body), "in a header") {
			t.Fatalf("trickling anonymous request %d: %d %s; want 401 invalid_key asking for the key in a header", i, r.status, r.body)
		}
	}
	// A large keyed upload (a 256 KiB+ image) is read and queued.
	img := images.Read(t, "photo.png")
	for len(img) < 300<<10 { // PNG readers stop at IEND: trailing bytes pad the body
		img = append(img, make([]byte, 64<<10)...)
	}
	big := `{"image_base64":"` + base64.StdEncoding.EncodeToString(img) + `"}`
	r := h.postStalled("/v1/jobs", int64(len(big)), strings.NewReader(big),
		map[string]string{"Content-Type": "application/json", "X-API-Key": h.key})
	if r.status != http.StatusAccepted {
		t.Fatalf("a keyed large upload beside %d trickling connections: %d %s", trickling, r.status, r.body)
	}
}

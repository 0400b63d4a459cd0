package mcp_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// An upload URL takes one upload: a second PUT is refused and the bytes
// behind the handle stay the first PUT's.
func TestMCPUploadURLTakesOnePUT(t *testing.T) {
	s := startSystem(t)
	cs := s.mcp()
	var ticket struct {
		File     struct{ URI string }
		Transfer struct{ URL string }
	}
	systemtest.CallTool(t, cs, "prepare_upload", map[string]any{"name": "once.webp"}, &ticket)
	put := func(body []byte) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, ticket.Transfer.URL, bytes.NewReader(body))
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		return r.StatusCode, string(b)
	}
	if st, body := put(images.Read(t, "photo.webp")); st != http.StatusOK {
		t.Fatalf("first PUT answered %d %s", st, body)
	}
	if st, body := put(images.Read(t, "photo.png")); st != http.StatusConflict || !strings.Contains(body, "upload_already_used") {
		t.Fatalf("second PUT answered %d %s; want 409 upload_already_used", st, body)
	}
	var job systemtest.JobView
	res := systemtest.CallTool(t, cs, "compress_image", map[string]any{"upload": ticket.File.URI}, &job)
	expectFileLink(t, res, job, "image/webp")
}

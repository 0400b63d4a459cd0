package server_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// Power Automate hands files over as file content, {"$content-type",
// "$content"}; HTTP actions and curl --data-binary send the image as the
// body. Both make the same job an upload or base64 would.
func TestCreateJobTakesFileContentAndRawImageBodies(t *testing.T) {
	h := newHarness(t)
	png := images.Read(t, "photo.png")
	b64 := base64.StdEncoding.EncodeToString(png)
	stored := func(t *testing.T, r *response) {
		t.Helper()
		got, err := connector.ReadBlob(context.Background(), h.store.Blobs, connector.InputBlobKey(r.str("id")))
		if err != nil || !bytes.Equal(got, png) {
			t.Fatalf("input blob = %d bytes, %v; want the image (%d bytes)", len(got), err, len(png))
		}
		if r.str("input.mime_type") != "image/png" || r.num("input.size") != float64(len(png)) {
			t.Errorf("input = %v; want image/png of %d bytes", r.get("input"), len(png))
		}
	}

	t.Run("file content, type first", func(t *testing.T) {
		r := h.postJSON("/v1/jobs", `{"image_base64":{"$content-type":"image/png","$content":"`+b64+`"},"filename":"pa.png"}`, nil)
		expectStatus(t, r, http.StatusAccepted)
		stored(t, r)
		if r.str("input.kind") != "base64" || r.str("input.filename") != "pa.png" {
			t.Errorf("input = %v; want a base64 job named pa.png", r.get("input"))
		}
	})
	t.Run("file content, content first, type with parameters", func(t *testing.T) {
		r := h.postJSON("/v1/jobs", `{"image_base64":{"$content":"`+b64+`","$content-type":"Image/PNG; name=x.png"}}`, nil)
		expectStatus(t, r, http.StatusAccepted)
		stored(t, r)
	})
	t.Run("raw body with filename in the query", func(t *testing.T) {
		r := h.do(http.MethodPost, "/v1/jobs?filename=raw.png&metadata=%7B%22row%22%3A3%7D", bytes.NewReader(png),
			map[string]string{"Content-Type": "image/png", "X-API-Key": h.key})
		expectStatus(t, r, http.StatusAccepted)
		stored(t, r)
		if r.str("input.kind") != "upload" || r.str("input.filename") != "raw.png" || r.num("metadata.row") != 3 {
			t.Errorf("job = %s; want an upload named raw.png with metadata", truncate(r.body))
		}
	})
	t.Run("octet-stream body named by Content-Disposition", func(t *testing.T) {
		r := h.do(http.MethodPost, "/v1/jobs", bytes.NewReader(png), map[string]string{
			"Content-Type": "application/octet-stream", "Content-Disposition": `attachment; filename="cd.png"`, "X-API-Key": h.key})
		expectStatus(t, r, http.StatusAccepted)
		stored(t, r)
		if r.str("input.filename") != "cd.png" {
			t.Errorf("filename = %q, want cd.png", r.str("input.filename"))
		}
	})

	bad := []struct {
		name, body, contentType, query string
		status                         int
		code                           connector.ErrorCode
		text                           string
	}{
		{"file content without $content", `{"image_base64":{"$content-type":"image/png"}}`, "application/json", "", 400, connector.EINVALID, `needs "$content"`},
		{"file content with another key", `{"image_base64":{"$content":"` + b64 + `","name":"a.png"}}`, "application/json", "", 400, connector.EINVALID, `only "$content-type" and "$content"`},
		{"file content that lies about its type", `{"image_base64":{"$content-type":"image/jpeg","$content":"` + b64 + `"}}`, "application/json", "", 400, connector.EINVALID, "declares image/jpeg but the bytes are image/png"},
		{"file content that is not base64", `{"image_base64":{"$content":"***"}}`, "application/json", "", 400, connector.EINVALID, "image_base64"},
		{"file content that is not an image", `{"image_base64":{"$content":"` + base64.StdEncoding.EncodeToString([]byte("hello, world")) + `"}}`, "application/json", "", 400, connector.EFORMAT, "not a PNG"},
		{"raw body that lies about its type", string(png), "image/webp", "", 400, connector.EINVALID, "declares image/webp"},
		{"raw body that is empty", "", "image/png", "", 400, connector.EINVALID, "body is empty"},
		{"raw body with the key in the URL", string(png), "image/png", "?api_key=" + h.key, 400, connector.EINVALID, "must not be in the URL"},
		{"raw body that is not an image", "GIF89a....", "application/octet-stream", "", 400, connector.EFORMAT, "not a PNG"},
	}
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(http.MethodPost, "/v1/jobs"+tc.query, strings.NewReader(tc.body),
				map[string]string{"Content-Type": tc.contentType, "X-API-Key": h.key})
			expectError(t, r, tc.status, tc.code, tc.text)
		})
	}
}

// A flow that asks for include=data gets the compressed bytes in the same
// answer as the finished job (Make's and Power Automate's file outputs),
// and a Location that keeps asking for them.
func TestCreateJobWithIncludeDataAnswersTheFileInline(t *testing.T) {
	h := newHarness(t)
	r := h.postJSON("/v1/jobs?include=data", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil)
	expectStatus(t, r, http.StatusAccepted)
	loc := r.header.Get("Location")
	if want := h.url + "/v1/jobs/" + r.str("id") + "?poll=1&include=data"; loc != want {
		t.Fatalf("Location = %q, want %q", loc, want)
	}
	if r.header.Get("Retry-After") == "" {
		t.Errorf("202 without Retry-After")
	}
	auth := map[string]string{"X-API-Key": h.key}
	expectStatus(t, h.do(http.MethodGet, strings.TrimPrefix(loc, h.url), nil, auth), http.StatusAccepted)
	data := []byte("\x89PNG compressed bytes")
	h.finish(r.str("id"), data)
	done := h.do(http.MethodGet, strings.TrimPrefix(loc, h.url), nil, auth)
	expectStatus(t, done, http.StatusOK)
	if got := done.str("result.compressed_data"); got != base64.StdEncoding.EncodeToString(data) {
		t.Errorf("compressed_data = %q, want the stored bytes in base64", got)
	}

	// A second request with the same Idempotency-Key finds the finished
	// job: its answer carries the bytes at once.
	idem := map[string]string{"Idempotency-Key": "file-inline-1"}
	first := h.postJSON("/v1/jobs?include=data", map[string]any{"image_url": "https://images.example.com/dog.png"}, idem)
	h.finish(first.str("id"), data)
	again := h.postJSON("/v1/jobs?include=data&wait=1", map[string]any{"image_url": "https://images.example.com/dog.png"}, idem)
	expectStatus(t, again, http.StatusOK)
	if again.str("id") != first.str("id") || again.str("result.compressed_data") == "" {
		t.Errorf("replay = %s; want job %s with compressed_data", truncate(again.body), first.str("id"))
	}

	bad := h.postJSON("/v1/jobs?include=everything", map[string]any{"image_url": "https://images.example.com/cat.png"}, nil)
	expectError(t, bad, http.StatusBadRequest, connector.EINVALID, "include")
}

package server_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// TestUnknownSubFieldsAndQueryParametersAreRefused: a misspelt field
// inside resize or convert, or a misspelt query parameter, is a 400 naming
// it, before any job is made (it would otherwise run untransformed and be
// charged).
func TestUnknownSubFieldsAndQueryParametersAreRefused(t *testing.T) {
	h := newHarness(t)
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	key := map[string]string{"X-API-Key": h.key}
	for _, c := range []struct {
		path  string
		body  map[string]any
		field string
	}{
		{"/v1/jobs", map[string]any{"image_base64": png, "resize": map[string]any{"method": "fit", "width": 100, "height": 100, "enlrage": true}}, "resize.enlrage"},
		{"/v1/jobs", map[string]any{"image_base64": png, "convert": map[string]any{"type": "webp", "backgroud": "#000000"}}, "convert.backgroud"},
		{"/v1/jobs/dry-run", map[string]any{"image_base64": png, "resize": map[string]any{"widht": 100}}, "resize.widht"},
		{"/v1/batches", map[string]any{"items": []any{map[string]any{"image_base64": png, "resize": map[string]any{"width": 10, "hieght": 10}}}}, "hieght"},
		{"/v1/jobs?resise=100", map[string]any{"image_base64": png}, "resise"},
		{"/v1/jobs/dry-run?resise=100", map[string]any{"image_base64": png}, "resise"},
		{"/v1/batches?wiat=10", map[string]any{"items": []any{map[string]any{"image_base64": png}}}, "wiat"},
	} {
		r := h.postJSON(c.path, c.body, key)
		expectError(t, r, http.StatusBadRequest, connector.EINVALID, c.field)
	}
	r := h.do("POST", "/v1/jobs?resise=100", strings.NewReader(string(images.Read(t, "photo.png"))),
		map[string]string{"Content-Type": "image/png", "X-API-Key": h.key})
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, "resise")
	if got := h.queue.enqueued(); len(got) != 0 {
		t.Fatalf("refused requests made jobs: %v", got)
	}
}

// TestADataURIPrefixInAnyCaseIsTaken: DATA:IMAGE/PNG;BASE64, is the same
// prefix as data:image/png;base64,.
func TestADataURIPrefixInAnyCaseIsTaken(t *testing.T) {
	h := newHarness(t)
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	for _, prefix := range []string{"data:image/png;base64,", "DATA:IMAGE/PNG;BASE64,", "Data:image/png;Base64,"} {
		r := h.postJSON("/v1/jobs", map[string]any{"image_base64": prefix + png}, map[string]string{"X-API-Key": h.key})
		expectStatus(t, r, http.StatusAccepted)
	}
}

// TestInvisibleCharactersInAFilenameAreRefused: a name that looks like
// another (zero-width, BOM, word joiner, soft hyphen, tag characters) or
// breaks a line is a 400 naming filename.
func TestInvisibleCharactersInAFilenameAreRefused(t *testing.T) {
	h := newHarness(t)
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	for _, name := range []string{"a\u200b.png", "\ufeffa.png", "a\u2060.png", "in\u00advoice.png", "a\U000E0041.png", "a\u2028b.png", "a\u2029b.png"} {
		r := h.postJSON("/v1/jobs", map[string]any{"image_base64": png, "filename": name}, map[string]string{"X-API-Key": h.key})
		expectError(t, r, http.StatusBadRequest, connector.EINVALID, "filename")
	}
}

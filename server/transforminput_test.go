package server_test

import (
	"net/http"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// TestEmptyTransformFieldsAskForNothing: a form that sends every transform
// field empty (the n8n templates' upload nodes, a Zapier form left blank)
// makes a plain job; a filled one that cannot apply is a 400 naming it.
func TestEmptyTransformFieldsAskForNothing(t *testing.T) {
	h := newHarness(t)
	empty := map[string]string{"resize": "", "resize_method": "", "resize_enlarge": "", "convert": "", "background": "", "preserve": ""}
	body, ct := multipartBody(t, empty, "file", "a.png", images.Read(t, "photo.png"))
	r := h.do("POST", "/v1/jobs", body, map[string]string{"Content-Type": ct, "X-API-Key": h.key})
	expectStatus(t, r, http.StatusAccepted)
	if r.get("resize") != nil || r.get("convert") != nil || r.get("preserve") != nil {
		t.Errorf("empty fields echoed a transform: %s", r.body)
	}
	body, ct = multipartBody(t, map[string]string{"resize": "", "resize_method": "cover"}, "file", "a.png", images.Read(t, "photo.png"))
	r = h.do("POST", "/v1/jobs", body, map[string]string{"Content-Type": ct, "X-API-Key": h.key})
	expectError(t, r, http.StatusBadRequest, connector.EINVALID, "resize_method needs resize")
}

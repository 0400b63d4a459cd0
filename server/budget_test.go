package server_test

import (
	"encoding/base64"
	"net/http"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
)

func needVips(t *testing.T) {
	t.Helper()
	if err := imaging.Available(); err != nil {
		t.Skipf("libvips not available: %v", err)
	}
}

// TestMetadataBombsAreRefusedBeforeAnyJob: an image whose EXIF expands
// past imgflow's bounds, kept with preserve, is a 422 metadata_too_large at
// creation and in a dry run: no job, no credit.
func TestMetadataBombsAreRefusedBeforeAnyJob(t *testing.T) {
	needVips(t)
	h := newHarness(t)
	pngBomb := images.PNGWithEXIF(images.Read(t, "photo.png"), images.EXIFBomb(400, 512<<10))
	jpegBomb := images.JPEGWithEXIF(images.Read(t, "photo.jpg"), images.EXIFBomb(4000, 16000))
	for _, c := range []struct {
		name, path string
		img        []byte
	}{
		{"a job of a PNG whose EXIF expands to 200 MB", "/v1/jobs", pngBomb},
		{"a dry run of a 64 KB JPEG EXIF bomb", "/v1/jobs/dry-run", jpegBomb},
	} {
		r := h.postJSON(c.path, map[string]any{"image_base64": base64.StdEncoding.EncodeToString(c.img), "preserve": "copyright"},
			map[string]string{"X-API-Key": h.key})
		expectError(t, r, http.StatusUnprocessableEntity, connector.EMETADATA, "too large to keep")
	}
	if got := h.queue.enqueued(); len(got) != 0 {
		t.Fatalf("refused jobs were queued: %v", got)
	}
	kept := images.PNGWithEXIF(images.Read(t, "photo.png"), images.EXIFBomb(1, 100_000))
	r := h.postJSON("/v1/jobs", map[string]any{"image_base64": base64.StdEncoding.EncodeToString(kept), "preserve": "copyright"},
		map[string]string{"X-API-Key": h.key})
	expectError(t, r, http.StatusUnprocessableEntity, connector.EMETADATA, "over the 65527 bytes a result carries")
}

// TestEnlargementPastThePixelCapIsRefusedAtCreation: fit into 16384² with
// enlarge asks for 268 MP; refused naming the limit, nothing queued.
func TestEnlargementPastThePixelCapIsRefusedAtCreation(t *testing.T) {
	needVips(t)
	h := newHarness(t)
	png := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	for _, body := range []map[string]any{
		{"image_base64": png, "resize": map[string]any{"method": "fit", "width": 16384, "height": 16384, "enlarge": true}},
		{"image_url": "https://images.example.com/a.png", "resize": map[string]any{"method": "cover", "width": 16384, "height": 16384, "enlarge": true}},
		{"image_base64": png, "resize": map[string]any{"method": "scale", "width": 16384, "enlarge": true}},
	} {
		r := h.postJSON("/v1/jobs", body, map[string]string{"X-API-Key": h.key})
		expectError(t, r, http.StatusBadRequest, connector.EINVALID, "over the 50 megapixels")
	}
	if got := h.queue.enqueued(); len(got) != 0 {
		t.Fatalf("refused jobs were queued: %v", got)
	}
}

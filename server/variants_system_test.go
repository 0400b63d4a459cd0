package server_test

import (
	"archive/zip"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/imgflow/imgflow/connector/imaging"
)

// rotatedPhoto is a 3000×2000 JPEG stored landscape with EXIF orientation
// 6: a portrait photo, shown 2000×3000, as phones write them.
func rotatedPhoto(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 3000, 2000))
	for y := 0; y < 2000; y++ {
		for x := 0; x < 3000; x++ {
			img.Set(x, y, color.RGBA{uint8(x / 12), uint8(y / 8), uint8((x ^ y) & 0xff), 255})
		}
	}
	var buf bytes.Buffer
	if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 90}); err != nil {
		t.Fatal(err)
	}
	// APP1 Exif, little-endian TIFF with one IFD entry: Orientation = 6.
	tiff := []byte{'I', 'I', 42, 0, 8, 0, 0, 0, 1, 0, 0x12, 0x01, 3, 0, 1, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0}
	body := append([]byte("Exif\x00\x00"), tiff...)
	app1 := append([]byte{0xFF, 0xE1, byte((len(body) + 2) >> 8), byte(len(body) + 2)}, body...)
	data := buf.Bytes()
	return append(append(append([]byte{}, data[:2]...), app1...), data[2:]...)
}

// countingServer serves data at /photo.jpg on loopback and counts its
// requests.
func countingServer(t *testing.T, data []byte) (string, *atomic.Int64) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "image/jpeg")
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/photo.jpg", &hits
}

type setView struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Counts   struct{ Total, Completed, Failed int }
	Variants map[string]struct {
		ID      string `json:"id"`
		Status  string `json:"status"`
		Variant string `json:"variant"`
		Result  *struct {
			MIMEType string `json:"mime_type"`
			Width    int    `json:"width"`
			Height   int    `json:"height"`
			Filename string `json:"filename"`
			FileURL  string `json:"file_url"`
		} `json:"result"`
		Error            *struct{ Code string } `json:"error"`
		DeduplicatedFrom string                 `json:"deduplicated_from"`
	} `json:"variants"`
	Srcset  string `json:"srcset"`
	Picture string `json:"picture"`
	Links   struct{ Archive string }
}

const threeVariants = `[{"id": "sm", "resize": "320x", "convert": "webp"}, {"id": "md", "resize": {"method": "scale", "width": 800}}, {"id": "lg", "resize": "1600x"}]`

func (s *system) postSet(t *testing.T, contentType string, body io.Reader, header map[string]string) (int, setView, []byte) {
	t.Helper()
	h := map[string]string{"X-API-Key": s.Key}
	for k, v := range header {
		h[k] = v
	}
	st, _, data := s.Request("POST", "/v1/jobs?wait=20", contentType, body, h)
	var v setView
	if st < 300 {
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("status %d, %s: %v", st, data, err)
		}
	}
	return st, v, data
}

// checkSetDryRun dry-runs a set: each variant checked and priced on its
// own, want credits in all; dedupedMD, when set, is the job md would
// complete from.
func (s *system) checkSetDryRun(t *testing.T, body string, want int, dedupedMD string) {
	t.Helper()
	st, _, data := s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": s.Key})
	var check struct {
		WouldCharge int `json:"would_charge"`
		Variants    []struct {
			ID               string `json:"id"`
			WouldCharge      int    `json:"would_charge"`
			DeduplicatedFrom string `json:"deduplicated_from"`
			Output           struct {
				Type          string
				Width, Height int
			}
		}
	}
	if err := json.Unmarshal(data, &check); st != http.StatusOK || err != nil {
		t.Fatalf("dry run of a set: %d %s", st, data)
	}
	if check.WouldCharge != want || len(check.Variants) != 3 {
		t.Fatalf("dry run of a set: %s; want %d credits over 3 variants", data, want)
	}
	sm, md := check.Variants[0], check.Variants[1]
	if sm.ID != "sm" || sm.Output.Width != 320 || sm.Output.Height != 480 || sm.Output.Type != "image/webp" {
		t.Errorf("dry run's sm: %+v; want 320×480 WebP", sm)
	}
	if md.DeduplicatedFrom != dedupedMD {
		t.Errorf("dry run's md deduplicated from %q; want %q", md.DeduplicatedFrom, dedupedMD)
	}
}

func checkRotatedSet(t *testing.T, v setView, body []byte) {
	t.Helper()
	if v.Status != "finished" || v.Counts.Completed != 3 {
		t.Fatalf("set %s; want finished with 3 completed", body)
	}
	want := map[string][3]any{"sm": {320, 480, "image/webp"}, "md": {800, 1200, "image/jpeg"}, "lg": {1600, 2400, "image/jpeg"}}
	for id, w := range want {
		j := v.Variants[id]
		if j.Result == nil || j.Result.Width != w[0] || j.Result.Height != w[1] || j.Result.MIMEType != w[2] || j.Variant != id {
			t.Errorf("variant %s = %+v %+v; want %v×%v %v", id, j, j.Result, w[0], w[1], w[2])
		}
	}
	if !strings.Contains(v.Srcset, " 800w, ") || !strings.HasSuffix(v.Srcset, " 1600w") {
		t.Errorf("srcset %q; want the JPEG variants by width", v.Srcset)
	}
	if !strings.Contains(v.Picture, `<source type="image/webp"`) || !strings.Contains(v.Picture, `width="1600" height="2400"`) {
		t.Errorf("picture %q; want a WebP source and a 1600×2400 img", v.Picture)
	}
}

func TestVariantSetFromOneFetchOrientedAndChargedPerVariant(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	s := startSystem(t)
	photo := rotatedPhoto(t)
	url, hits := countingServer(t, photo)
	before := s.Credits()
	body := fmt.Sprintf(`{"image_url": %q, "filename": "photo.jpg", "variants": %s}`, url, threeVariants)
	s.checkSetDryRun(t, body, 3, "") // fetches the source once itself
	fetched := hits.Load()
	st, v, data := s.postSet(t, "application/json", strings.NewReader(body), nil)
	if st != http.StatusOK {
		t.Fatalf("POST set: %d %s", st, data)
	}
	checkRotatedSet(t, v, data)
	if got := hits.Load() - fetched; got != 1 {
		t.Errorf("the source was fetched %d times; want once for three variants", got)
	}
	if spent := before - s.Credits(); spent != 3 {
		t.Errorf("the set cost %d credits; want 3, one per variant", spent)
	}
	if f := v.Variants["sm"].Result.Filename; f != "photo-sm.webp" {
		t.Errorf("sm's filename %q; want photo-sm.webp", f)
	}
	s.checkSetDryRun(t, body, 0, v.Variants["md"].ID)

	// The same set again, by base64 and by upload: every variant is
	// deduplicated on its own, nothing charged.
	b64 := fmt.Sprintf(`{"image_base64": %q, "filename": "photo.jpg", "variants": %s}`, base64.StdEncoding.EncodeToString(photo), threeVariants)
	st, v, data = s.postSet(t, "application/json", strings.NewReader(b64), nil)
	if st != http.StatusOK {
		t.Fatalf("POST base64 set: %d %s", st, data)
	}
	checkRotatedSet(t, v, data)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "photo.jpg")
	fw.Write(photo)
	mw.WriteField("variants", threeVariants)
	mw.Close()
	st, v, data = s.postSet(t, mw.FormDataContentType(), &form, nil)
	if st != http.StatusOK {
		t.Fatalf("POST multipart set: %d %s", st, data)
	}
	checkRotatedSet(t, v, data)
	for id, j := range v.Variants {
		if j.DeduplicatedFrom == "" {
			t.Errorf("variant %s of a repeated set was compressed again; want its earlier result", id)
		}
	}
	if spent := before - s.Credits(); spent != 3 {
		t.Errorf("three sets of one image cost %d credits; want 3", spent)
	}

	// The set's ZIP holds every variant under its own name.
	res, err := http.Get(v.Links.Archive)
	if err != nil {
		t.Fatal(err)
	}
	zdata, _ := io.ReadAll(res.Body)
	res.Body.Close()
	zr, err := zip.NewReader(bytes.NewReader(zdata), int64(len(zdata)))
	if err != nil {
		t.Fatalf("archive: %d %v", res.StatusCode, err)
	}
	names := []string{}
	for _, f := range zr.File {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); !strings.Contains(got, "photo-sm.webp") || !strings.Contains(got, "photo-lg.jpg") || len(names) != 4 {
		t.Errorf("archive holds %v; want photo-sm.webp, photo-md.jpg, photo-lg.jpg and the manifest", names)
	}
}

func TestVariantSetIdempotencyKeyAnswersTheSameSet(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	s := startSystem(t)
	body := fmt.Sprintf(`{"image_url": %q, "variants": [{"id": "a", "resize": "64x"}, {"id": "b", "resize": "32x"}]}`, s.Samples+"/photo.jpg")
	key := map[string]string{"Idempotency-Key": "set-once"}
	st1, v1, d1 := s.postSet(t, "application/json", strings.NewReader(body), key)
	st2, v2, d2 := s.postSet(t, "application/json", strings.NewReader(body), key)
	if st1 != 200 || st2 != 200 || v1.ID == "" || v1.ID != v2.ID {
		t.Fatalf("two requests with one Idempotency-Key: %d %s / %d %s; want one set", st1, d1, st2, d2)
	}
	other := strings.Replace(body, "32x", "48x", 1)
	if st, _, data := s.postSet(t, "application/json", strings.NewReader(other), key); st != http.StatusUnprocessableEntity {
		t.Errorf("the key with other variants: %d %s; want 422", st, data)
	}
}

func TestVariantSetOfABrokenImageFailsWholeUncharged(t *testing.T) {
	if imaging.Available() != nil {
		t.Skip("libvips absent")
	}
	s := startSystem(t)
	photo := rotatedPhoto(t)
	broken := photo[:len(photo)/3]
	before := s.Credits()
	body := fmt.Sprintf(`{"image_base64": %q, "variants": %s}`, base64.StdEncoding.EncodeToString(broken), threeVariants)
	st, v, data := s.postSet(t, "application/json", strings.NewReader(body), nil)
	if st != http.StatusOK || v.Status != "finished" || v.Counts.Failed != 3 {
		t.Fatalf("broken set: %d %s; want finished with 3 failed", st, data)
	}
	for id, j := range v.Variants {
		if j.Error == nil || j.Error.Code != "unsupported_format" {
			t.Errorf("variant %s: %+v; want unsupported_format", id, j.Error)
		}
	}
	if v.Srcset != "" || v.Picture != "" {
		t.Errorf("a failed set has srcset %q, picture %q; want none", v.Srcset, v.Picture)
	}
	if spent := before - s.Credits(); spent != 0 {
		t.Errorf("a broken set cost %d credits; want 0", spent)
	}
}

func TestVariantSetRefusesMalformedVariants(t *testing.T) {
	s := startSystem(t)
	url := s.Samples + "/photo.jpg"
	for _, c := range []struct{ variants, field string }{
		{`[{"id": "sm", "resise": "320x"}]`, "variants[].resise"},
		{`[]`, "variants"},
		{`[{"id": "Sm", "resize": "320x"}]`, "variants[0].id"},
		{`[{"id": "a", "resize": "320x"}, {"id": "a", "resize": "640x"}]`, "variants[1].id"},
		{`[` + strings.Repeat(`{"id": "x"},`, 10) + `{"id": "y"}]`, "variants"},
	} {
		body := fmt.Sprintf(`{"image_url": %q, "variants": %s}`, url, c.variants)
		st, _, data := s.Request("POST", "/v1/jobs", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": s.Key})
		var e struct {
			Details []struct{ Field string }
		}
		json.Unmarshal(data, &e)
		if st != http.StatusBadRequest || len(e.Details) == 0 || e.Details[0].Field != c.field {
			t.Errorf("variants %s: %d %s; want 400 naming %s", c.variants, st, data, c.field)
		}
	}
	body := fmt.Sprintf(`{"image_url": %q, "resize": "320x", "variants": [{"id": "a"}]}`, url)
	if st, _, data := s.Request("POST", "/v1/jobs", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": s.Key}); st != http.StatusBadRequest {
		t.Errorf("resize beside variants: %d %s; want 400", st, data)
	}
}

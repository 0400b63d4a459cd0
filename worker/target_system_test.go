package worker_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image/png"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/fixtures/images/synth"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// A target (fit under N bytes) through the live API, on every way a job is
// made, with what it costs: one credit for a fit, none for a repeat or an
// unreachable target.

type targetJob struct {
	ID               string `json:"id"`
	Status           string `json:"status"`
	DeduplicatedFrom string `json:"deduplicated_from"`
	Result           *struct {
		CompressedSize int64  `json:"compressed_size"`
		Quality        int    `json:"quality"`
		FileURL        string `json:"file_url"`
	} `json:"result"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Details []struct{ Field, Message string }
	} `json:"error"`
}

func (s *system) targetRequest(path, contentType string, body []byte) targetJob {
	s.T.Helper()
	st, _, out := s.Request("POST", path, contentType, bytes.NewReader(body), map[string]string{"X-API-Key": s.Key})
	var j targetJob
	if err := json.Unmarshal(out, &j); err != nil || st != http.StatusOK || (j.Status != "completed" && j.Status != "failed") {
		s.T.Fatalf("got %d %s; want 200 and a finished job", st, out)
	}
	return j
}

// fitted checks a completed job's file is within max and uses most of it.
func (s *system) fitted(name string, j targetJob, max int64) {
	s.T.Helper()
	if j.Status != "completed" || j.Result == nil {
		s.T.Errorf("%s: %+v; want completed", name, j)
		return
	}
	res, err := http.Get(j.Result.FileURL)
	if err != nil {
		s.T.Fatal(err)
	}
	var file bytes.Buffer
	file.ReadFrom(res.Body)
	res.Body.Close()
	n := int64(file.Len())
	if n > max || n != j.Result.CompressedSize || n < max*3/4 {
		s.T.Errorf("%s: file of %d bytes (result says %d); want from %d to %d", name, n, j.Result.CompressedSize, max*3/4, max)
	}
	if j.Result.Quality == 0 && j.DeduplicatedFrom == "" {
		s.T.Errorf("%s: result.quality absent; want the quality chosen", name)
	}
}

func TestTargetFitsOnEveryWayAJobIsMadeForOneCredit(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	photo := fmt.Sprintf(`{"image_url":"%s/photo.jpg",`, s.Samples)

	before := s.Credits()
	j := s.targetRequest("/v1/jobs?wait=20", "application/json", []byte(photo+`"target":"10KB"}`))
	s.fitted("JSON, a size", j, 10_000)
	if got := before - s.Credits(); got != 1 {
		t.Errorf("charged %d credits for a fit, want 1", got)
	}
	// Same image and target (spelt otherwise): free. Another target: charged.
	before = s.Credits()
	again := s.targetRequest("/v1/jobs?wait=20", "application/json", []byte(photo+`"target":{"max_bytes":10000,"allow_resize":true}}`))
	if again.DeduplicatedFrom != j.ID {
		t.Errorf("the same target again: deduplicated_from %q, want %q", again.DeduplicatedFrom, j.ID)
	}
	other := s.targetRequest("/v1/jobs?wait=20", "application/json", []byte(photo+`"target_max_bytes":9000}`))
	s.fitted("JSON, a flat field", other, 9_000)
	if other.DeduplicatedFrom != "" {
		t.Errorf("another target: deduplicated from %q, want a new job", other.DeduplicatedFrom)
	}
	if got := before - s.Credits(); got != 1 {
		t.Errorf("charged %d credits for a repeat and a new target, want 1", got)
	}

	// Multipart, and the raw body's query.
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("target_max_bytes", "40KB")
	fw, _ := mw.CreateFormFile("file", "photo.png")
	fw.Write(images.Read(t, "photo.png"))
	mw.Close()
	s.fitted("multipart", s.targetRequest("/v1/jobs?wait=20", mw.FormDataContentType(), form.Bytes()), 40_000)
	s.fitted("raw body", s.targetRequest("/v1/jobs?wait=20&target_max_bytes=8000", "image/jpeg", images.Read(t, "photo.jpg")), 8_000)

	// The dry run: reachable would charge 1, unreachable 0.
	auth := map[string]string{"X-API-Key": s.Key}
	var dry struct {
		WouldCharge int `json:"would_charge"`
		Target      *struct {
			Reachable     bool  `json:"reachable"`
			SmallestBytes int64 `json:"smallest_bytes"`
		}
	}
	st, _, out := s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(photo+`"target":"7KB"}`), auth)
	if json.Unmarshal(out, &dry); st != http.StatusOK || dry.Target == nil || !dry.Target.Reachable || dry.WouldCharge != 1 {
		t.Errorf("dry run of a reachable target: %d %s; want reachable, would_charge 1", st, out)
	}
	unreachable := photo + `"target":{"max_bytes":500,"allow_resize":false}}`
	st, _, out = s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(unreachable), auth)
	if json.Unmarshal(out, &dry); st != http.StatusOK || dry.Target == nil || dry.Target.Reachable || dry.WouldCharge != 0 || dry.Target.SmallestBytes <= 500 {
		t.Errorf("dry run of an unreachable target: %d %s; want unreachable, would_charge 0, the smallest size", st, out)
	}

	// Unreachable: failed, uncharged, naming the smallest size.
	before = s.Credits()
	failed := s.targetRequest("/v1/jobs?wait=20", "application/json", []byte(unreachable))
	if failed.Status != "failed" || failed.Error == nil || failed.Error.Code != "target_unreachable" || len(failed.Error.Details) == 0 ||
		!strings.Contains(failed.Error.Message, "bytes") {
		t.Errorf("unreachable: %+v; want failed target_unreachable with the smallest size", failed)
	}
	// A broken image with a target: failed as any broken image, uncharged.
	broken := s.targetRequest("/v1/jobs?wait=20&target_max_bytes=5000", "image/jpeg", images.Read(t, "truncated.jpg"))
	if broken.Status != "failed" || broken.Error == nil || broken.Error.Code == "target_unreachable" {
		t.Errorf("broken input with a target: %+v; want failed for its image", broken)
	}
	if got := before - s.Credits(); got != 0 {
		t.Errorf("charged %d credits for an unreachable target and a broken image, want 0", got)
	}

	// A batch's target applies to its items.
	req, _ := json.Marshal(map[string]any{"target": "12KB", "dedupe": false, "items": []map[string]any{
		{"image_url": s.Samples + "/photo.jpg"}, {"image_url": s.Samples + "/screenshot.jpg"}}})
	st, _, out = s.Request("POST", "/v1/batches", "application/json", bytes.NewReader(req), auth)
	var created systemtest.BatchView
	if json.Unmarshal(out, &created); st != http.StatusAccepted {
		t.Fatalf("batch: %d %s", st, out)
	}
	s.WaitBatch(created.ID)
	st, _, out = s.Request("GET", "/v1/batches/"+created.ID+"/jobs", "", nil, auth)
	var page struct{ Jobs []targetJob }
	if json.Unmarshal(out, &page); st != http.StatusOK || len(page.Jobs) != 2 {
		t.Fatalf("batch jobs: %d %s", st, out)
	}
	for i, bj := range page.Jobs {
		s.fitted(fmt.Sprintf("batch item %d", i), bj, 12_000)
	}
}

// photoPNG is a photo-like PNG of about 804 KB (782×587, opaque RGBA:
// gradients, texture, noise), made here rather than committed.
func photoPNG(t *testing.T) []byte {
	var b bytes.Buffer
	if err := png.Encode(&b, synth.Photo(42, 782, 587)); err != nil {
		t.Fatal(err)
	}
	if n := b.Len(); n < 790_000 || n > 820_000 {
		t.Fatalf("the generated PNG is %d bytes; want about 804 KB", n)
	}
	return b.Bytes()
}

func TestAn804KBPNGFitsUnder120000BytesForOneCredit(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	mw.WriteField("target_max_bytes", "120000")
	fw, _ := mw.CreateFormFile("file", "photo.png")
	fw.Write(photoPNG(t))
	mw.Close()
	before := s.Credits()
	j := s.targetRequest("/v1/jobs?wait=25", mw.FormDataContentType(), form.Bytes())
	s.fitted("804 KB PNG", j, 120_000)
	if got := before - s.Credits(); got != 1 {
		t.Errorf("charged %d credits, want 1", got)
	}
	if j.Result != nil {
		t.Logf("804 KB PNG → %d bytes, quality %d", j.Result.CompressedSize, j.Result.Quality)
	}
}

func TestMinScoreIsKeptOrTheJobFailsUncharged(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	photo := fmt.Sprintf(`{"image_url":"%s/photo.jpg",`, s.Samples)
	auth := map[string]string{"X-API-Key": s.Key}

	before := s.Credits()
	st, _, out := s.Request("POST", "/v1/jobs?wait=25", "application/json",
		strings.NewReader(photo+`"target":{"max_bytes":"15KB","min_score":50}}`), auth)
	var j struct {
		Status string
		Result *struct {
			CompressedSize int64    `json:"compressed_size"`
			Score          *float64 `json:"score"`
		}
	}
	if json.Unmarshal(out, &j); st != http.StatusOK || j.Status != "completed" || j.Result == nil || j.Result.Score == nil ||
		*j.Result.Score < 50 || j.Result.CompressedSize > 15_000 {
		t.Fatalf("min_score 50 under 15KB: %d %s; want completed, ≤ 15000 bytes, result.score ≥ 50", st, out)
	}
	if got := before - s.Credits(); got != 1 {
		t.Errorf("charged %d credits, want 1", got)
	}
	// The raw body's query carries it too.
	st, _, out = s.Request("POST", "/v1/jobs?wait=25&target_max_bytes=14000&target_min_score=45", "image/jpeg",
		bytes.NewReader(images.Read(t, "photo.jpg")), auth)
	if json.Unmarshal(out, &j); st != http.StatusOK || j.Status != "completed" || j.Result == nil || j.Result.Score == nil || *j.Result.Score < 45 {
		t.Errorf("raw body with target_min_score: %d %s; want completed with result.score ≥ 45", st, out)
	}

	// A floor out of reach: the dry run says so (with the best score),
	// and the job fails target_unreachable, uncharged.
	unreachable := photo + `"target":{"max_bytes":4000,"allow_resize":false,"min_score":90}}`
	var dry struct {
		WouldCharge int `json:"would_charge"`
		Target      *struct {
			Reachable bool     `json:"reachable"`
			Score     *float64 `json:"score"`
		}
	}
	st, _, out = s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(unreachable), auth)
	if json.Unmarshal(out, &dry); st != http.StatusOK || dry.Target == nil || dry.Target.Reachable || dry.WouldCharge != 0 || dry.Target.Score == nil {
		t.Errorf("dry run of an unreachable score: %d %s; want unreachable, would_charge 0, the best score", st, out)
	}
	before = s.Credits()
	failed := s.targetRequest("/v1/jobs?wait=25", "application/json", []byte(unreachable))
	if failed.Status != "failed" || failed.Error == nil || failed.Error.Code != "target_unreachable" || len(failed.Error.Details) == 0 ||
		failed.Error.Details[0].Field != "target.min_score" {
		t.Errorf("unreachable score: %+v; want failed target_unreachable naming target.min_score", failed)
	}
	if got := before - s.Credits(); got != 0 {
		t.Errorf("charged %d credits for an unreachable score, want 0", got)
	}
}

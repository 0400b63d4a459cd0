package worker_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// TestTruncatedImagesWithTransformsFailUncharged: a cut JPEG or PNG asked
// to be resized or converted fails unsupported_format, uncharged, as it
// does without options: as a job, as batch items, and in the dry run.
func TestTruncatedImagesWithTransformsFailUncharged(t *testing.T) {
	needVips(t)
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.Key}
	before := s.Credits()
	var items []string
	for _, file := range []string{"truncated.jpg", "truncated.png"} {
		b64 := base64.StdEncoding.EncodeToString(images.Read(t, file))
		for _, opts := range []string{`"resize":"100x"`, `"convert":"webp"`} {
			body := `{"image_base64":"` + b64 + `","filename":"` + file + `",` + opts + `}`
			items = append(items, body)
			st, _, out := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), auth)
			var j transformedJob
			json.Unmarshal(out, &j)
			if j.Status != "failed" || j.Error == nil || j.Error.Code != "unsupported_format" {
				t.Errorf("%s with %s: %d %.300s; want a failed job with unsupported_format", file, opts, st, out)
			}
			st, _, out = s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(body), auth)
			if st < 400 || !bytes.Contains(out, []byte(`"code":"unsupported_format"`)) {
				t.Errorf("dry run of %s with %s: %d %.300s; want unsupported_format", file, opts, st, out)
			}
		}
	}
	st, _, out := s.Request("POST", "/v1/batches", "application/json", strings.NewReader(`{"items":[`+strings.Join(items, ",")+`]}`), auth)
	var b systemtest.BatchView
	if err := json.Unmarshal(out, &b); err != nil || st != http.StatusAccepted {
		t.Fatalf("batch: %d %.300s", st, out)
	}
	if b = s.WaitBatch(b.ID); b.Counts.Failed != len(items) {
		t.Errorf("batch of truncated images: %+v; want every item failed", b.Counts)
	}
	if got := s.Credits(); got != before {
		t.Errorf("charged %d credits for truncated images", before-got)
	}
}

// TestWithoutLibvipsABatchFailsOnlyItsHEIC: without libvips, a batch of a
// PNG, a HEIC and a JPEG is made; the HEIC fails alone with
// transform_unavailable, the others complete, for two credits.
func TestWithoutLibvipsABatchFailsOnlyItsHEIC(t *testing.T) {
	if os.Getenv(imaging.LibraryEnv) != "off" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestWithoutLibvipsABatchFailsOnlyItsHEIC$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), imaging.LibraryEnv+"=off")
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("--- PASS: TestWithoutLibvipsABatchFailsOnlyItsHEIC")) {
			t.Fatalf("without libvips: %v\n%s", err, out)
		}
		return
	}
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.Key}
	before := s.Credits()
	// The HEIC inline, so the API sees its type as the batch is made.
	heic := base64.StdEncoding.EncodeToString(images.Read(t, "photo.heic"))
	body := `{"items":[{"image_url":"` + s.Samples + `/photo.png"},{"image_base64":"` + heic + `","filename":"IMG_7.heic"},{"image_url":"` + s.Samples + `/photo.jpg"}]}`
	st, _, out := s.Request("POST", "/v1/batches", "application/json", strings.NewReader(body), auth)
	var b systemtest.BatchView
	if err := json.Unmarshal(out, &b); err != nil || st != http.StatusAccepted {
		t.Fatalf("batch: %d %.300s; want 202", st, out)
	}
	if b = s.WaitBatch(b.ID); b.Counts.Completed != 2 || b.Counts.Failed != 1 {
		t.Errorf("batch: %+v; want 2 completed, 1 failed", b.Counts)
	}
	st, _, out = s.Request("GET", "/v1/batches/"+b.ID+"/jobs", "", nil, auth)
	var page struct{ Jobs []transformedJob }
	if err := json.Unmarshal(out, &page); err != nil || st != http.StatusOK || len(page.Jobs) != 3 {
		t.Fatalf("batch jobs: %d %.300s; want 200 with 3 jobs", st, out)
	}
	for _, j := range page.Jobs {
		heic := j.Status == "failed"
		if heic && (j.Error == nil || j.Error.Code != "transform_unavailable") {
			t.Errorf("the failed item: %+v; want transform_unavailable", j.Error)
		}
	}
	if got := before - s.Credits(); got != 2 {
		t.Errorf("charged %d credits, want 2", got)
	}
}

package definitions_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// batchWithJobs is a batch answered with ?include=jobs.
type batchWithJobs struct {
	systemtest.BatchView
	Jobs []systemtest.BatchJobView `json:"jobs"`
}

func decodeBatchWithJobs(t *testing.T, st int, body []byte) batchWithJobs {
	t.Helper()
	var b batchWithJobs
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatalf("answer %d is not a batch: %v: %s", st, err, body)
	}
	return b
}

// Compress Many's request (wait=25&include=jobs) answers the finished batch
// with a job per item in item order: completed ones with a file_url that
// downloads a smaller image without the key, a broken image failed alone.
func TestBatchIncludeJobsAnswersEveryItemsResultInOrder(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	before := s.Credits()
	body := `{"items":[{"image_url":"` + s.Samples + `/photo.png","filename":"first.png","metadata":{"sku":"A1"}},` +
		`{"image_url":"` + s.Samples + `/not-an-image.png"},` +
		`{"image_url":"` + s.Samples + `/photo.jpg","filename":"third.jpg"}],"metadata":{"run":"cm"}}`
	st, _, raw := s.Request("POST", "/v1/batches?wait=25&include=jobs", "application/json", strings.NewReader(body), auth)
	b := decodeBatchWithJobs(t, st, raw)
	if st != http.StatusOK || b.Status != "finished" || b.Counts.Completed != 2 || b.Counts.Failed != 1 {
		t.Fatalf("POST ?wait=25&include=jobs: %d %s; want 200, finished, 2 completed and 1 failed", st, raw)
	}
	if len(b.Jobs) != 3 {
		t.Fatalf("%d jobs in the answer, want one per item (3): %s", len(b.Jobs), raw)
	}
	for i, j := range b.Jobs {
		if j.Index == nil || *j.Index != i || j.BatchID != b.ID {
			t.Errorf("jobs[%d] is index %v of batch %q; want index %d of %s", i, j.Index, j.BatchID, i, b.ID)
		}
	}
	if b.Jobs[1].Status != "failed" || b.Jobs[1].Error == nil || b.Jobs[1].Error.Code == "" {
		t.Errorf("jobs[1] (not an image) = %s with error %+v; want failed with a code", b.Jobs[1].Status, b.Jobs[1].Error)
	}
	for i, want := range map[int]struct{ name, mime string }{0: {"first.png", "image/png"}, 2: {"third.jpg", "image/jpeg"}} {
		j := b.Jobs[i]
		if j.Status != "completed" || j.Result == nil || j.Input.Filename != want.name || j.Result.MIMEType != want.mime {
			t.Errorf("jobs[%d] = %s %+v of %q; want completed %s as %s", i, j.Status, j.Result, j.Input.Filename, want.mime, want.name)
			continue
		}
		res, err := http.Get(j.Result.FileURL) // signed: no key
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK || int64(len(data)) != j.Result.CompressedSize || j.Result.CompressedSize >= j.Result.OriginalSize ||
			http.DetectContentType(data) != want.mime {
			t.Errorf("jobs[%d] file_url: %d, %d bytes of %s; want %d smaller bytes of %s", i, res.StatusCode, len(data),
				http.DetectContentType(data), j.Result.CompressedSize, want.mime)
		}
	}
	if spent := before - s.Credits(); spent != 2 {
		t.Errorf("charged %d credits, want 2 (the completed items)", spent)
	}

	// GET answers the same jobs; without include, none.
	st, _, raw = s.Request("GET", "/v1/batches/"+b.ID+"?include=jobs", "", nil, auth)
	if again := decodeBatchWithJobs(t, st, raw); st != http.StatusOK || len(again.Jobs) != 3 || again.Jobs[2].ID != b.Jobs[2].ID {
		t.Errorf("GET ?include=jobs: %d %s; want the 3 jobs again", st, raw)
	}
	st, _, raw = s.Request("GET", "/v1/batches/"+b.ID, "", nil, auth)
	if bytes.Contains(raw, []byte(`"jobs":[`)) || st != http.StatusOK {
		t.Errorf("GET without include: %d %s; want the batch alone", st, raw)
	}
	for _, bad := range []string{"data", "job", "jobs&include=jobs"} {
		st, _, raw = s.Request("GET", "/v1/batches/"+b.ID+"?include="+bad, "", nil, auth)
		if st != http.StatusBadRequest || !strings.Contains(string(raw), "include") {
			t.Errorf("GET ?include=%s: %d %s; want 400 naming include", bad, st, raw)
		}
	}
	st, _, raw = s.Request("POST", "/v1/batches?include=everything", "application/json", strings.NewReader(body), auth)
	if st != http.StatusBadRequest {
		t.Errorf("POST ?include=everything: %d %s; want 400", st, raw)
	}
}

// A batch still running answers 202 with a Location that keeps answering
// 202 (with the jobs as they stand) until the batch is finished, then 200
// with every job: what Power Automate's Compress Many polls.
func TestBatchPollLocationAnswers202UntilFinishedThenTheJobs(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	png := images.Read(t, "photo.png")
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "image/png")
		w.Write(png)
	}))
	defer slow.Close()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	body := `{"items":[{"image_url":"` + s.Samples + `/photo.png"},{"image_url":"` + slow.URL + `/held.png"}]}`
	st, h, raw := s.Request("POST", "/v1/batches?include=jobs", "application/json", strings.NewReader(body), auth)
	created := decodeBatchWithJobs(t, st, raw)
	loc, err := url.Parse(h.Get("Location"))
	if st != http.StatusAccepted || err != nil || loc.Query().Get("poll") != "1" || loc.Query().Get("include") != "jobs" {
		t.Fatalf("POST ?include=jobs: %d, Location %q: %s; want 202 and a Location with poll=1&include=jobs", st, h.Get("Location"), raw)
	}
	if len(created.Jobs) != 2 {
		t.Errorf("the 202 carries %d jobs, want both items' (queued)", len(created.Jobs))
	}
	st, h, raw = s.Request("GET", loc.RequestURI(), "", nil, auth)
	running := decodeBatchWithJobs(t, st, raw)
	if st != http.StatusAccepted || running.Status != "running" || len(running.Jobs) != 2 || h.Get("Retry-After") == "" {
		t.Fatalf("Location while an item is held: %d %s; want 202, running, 2 jobs, Retry-After", st, raw)
	}
	close(release)
	released = true
	for {
		st, _, raw = s.Request("GET", loc.RequestURI(), "", nil, auth)
		if st != http.StatusAccepted {
			break
		}
	}
	done := decodeBatchWithJobs(t, st, raw)
	if st != http.StatusOK || done.Status != "finished" || len(done.Jobs) != 2 || done.Jobs[1].Status != "completed" || done.Jobs[1].Result == nil {
		t.Fatalf("Location after the item was served: %d %s; want 200, finished, the held item completed", st, raw)
	}
}

// Make's Compress Many module sends its Images array (each bundle a
// record, a blank field left out) as one batch and outputs the batch with
// a job per image, which Make's Iterator turns into a bundle each.
func TestMakeCompressManyModuleSendsTheArrayAndOutputsEveryJob(t *testing.T) {
	s := systemtest.Start(t)
	before := s.Credits()
	out := makeModuleRun(t, s, "module-compressMany", map[string]any{
		"items": []any{
			map[string]any{"image_url": s.Samples + "/photo.png", "filename": "hero.png"},
			map[string]any{"image_url": s.Samples + "/photo.jpg", "metadata": map[string]any{"row": 2}},
		},
		"metadata": map[string]any{"scenario": "catalog"},
	})
	jobs, _ := out["jobs"].([]any)
	if out["status"] != "finished" || len(jobs) != 2 {
		t.Fatalf("output status %v with %d jobs; want finished with 2: %v", out["status"], len(jobs), out)
	}
	if m, _ := out["metadata"].(map[string]any); m["scenario"] != "catalog" {
		t.Errorf("batch metadata %v, want scenario=catalog", out["metadata"])
	}
	for i, want := range []string{"image/png", "image/jpeg"} {
		job := jobs[i].(map[string]any)
		result, _ := job["result"].(map[string]any)
		if job["status"] != "completed" || result == nil || result["mime_type"] != want {
			t.Errorf("jobs[%d] = %v %v; want a completed %s", i, job["status"], result, want)
		}
	}
	if m, _ := jobs[1].(map[string]any)["metadata"].(map[string]any); m["row"] != float64(2) {
		t.Errorf("jobs[1] metadata %v, want the item's own {row: 2}", jobs[1].(map[string]any)["metadata"])
	}
	if spent := before - s.Credits(); spent != 2 {
		t.Errorf("charged %d credits, want 2", spent)
	}
	// The interface describes what came: every output key of a job is in
	// the module's interface of jobs.
	iface := definitionFile(t, s, "make", "module-compressMany.interface.iml.json").([]any)
	var jobSpec []any
	for _, f := range iface {
		if f := f.(map[string]any); f["name"] == "jobs" && f["type"] == "array" {
			jobSpec, _ = f["spec"].([]any)
		}
	}
	names := map[string]bool{}
	for _, f := range jobSpec {
		names[f.(map[string]any)["name"].(string)] = true
	}
	for key := range jobs[0].(map[string]any) {
		if !names[key] {
			t.Errorf("the jobs' interface lacks %q, which the answer's jobs carry", key)
		}
	}
}

// Power Automate's Compress Many sends the Images array as the swagger
// describes it, with its internal query (wait, include=jobs); with no wait
// it answers 202 and polling Location ends in 200 with every image's job.
func TestPowerAutomateCompressManyPollsToTheBatchWithItsJobs(t *testing.T) {
	s := systemtest.Start(t)
	png := images.Read(t, "photo.png")
	body := map[string]any{"items": []any{
		map[string]any{"image_base64": base64.StdEncoding.EncodeToString(png), "filename": "from-sharepoint.png"},
		map[string]any{"image_url": s.Samples + "/photo.jpg"},
	}}
	st, h, batch := paRequest(t, s, "POST", "/v1/batches", map[string]string{"wait": "0"}, body)
	loc := h.Get("Location")
	if st != http.StatusAccepted || loc == "" || h.Get("Retry-After") == "" {
		t.Fatalf("answered %d, Location %q, Retry-After %q; want 202 with both", st, loc, h.Get("Retry-After"))
	}
	for i := 0; st == http.StatusAccepted && i < 400; i++ {
		var raw []byte
		st, _, raw = s.Request("GET", strings.TrimPrefix(loc, s.API), "", nil, map[string]string{"X-API-Key": s.Key})
		batch = map[string]any{}
		json.Unmarshal(raw, &batch)
		if st == http.StatusAccepted {
			time.Sleep(50 * time.Millisecond)
		}
	}
	jobs, _ := batch["jobs"].([]any)
	if st != http.StatusOK || batch["status"] != "finished" || len(jobs) != 2 {
		t.Fatalf("polling Location ended with %d, status %v, %d jobs; want 200, finished, 2 jobs", st, batch["status"], len(jobs))
	}
	first := jobs[0].(map[string]any)
	if first["status"] != "completed" || first["result"].(map[string]any)["filename"] != "from-sharepoint.png" {
		t.Errorf("jobs[0] = %v %v; want completed as from-sharepoint.png", first["status"], first["result"])
	}
}

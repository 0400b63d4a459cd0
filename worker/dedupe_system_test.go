package worker_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// Content dedupe and the dry run, through the live API against the
// reference upstream over real HTTP: what a flow that re-runs is charged.

// dedupeJob is the part of a job these tests read.
type dedupeJob struct {
	ID               string `json:"id"`
	Status           string `json:"status"`
	DeduplicatedFrom string `json:"deduplicated_from"`
	UpstreamCalls    int    `json:"upstream_calls"`
	Input            struct {
		SHA256 string `json:"sha256"`
	} `json:"input"`
	Result *struct {
		CompressedSize int64  `json:"compressed_size"`
		Filename       string `json:"filename"`
		FileURL        string `json:"file_url"`
	} `json:"result"`
	Error *struct {
		Code string `json:"code"`
	} `json:"error"`
}

// post sends a JSON job with key and waits for it.
func (s *system) post(key, body string) dedupeJob {
	s.T.Helper()
	st, _, data := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": key})
	var j dedupeJob
	if err := json.Unmarshal(data, &j); err != nil || st != http.StatusOK || j.Status != "completed" {
		s.T.Fatalf("POST %.80s: status %d, body %.300s; want 200 and a completed job", body, st, data)
	}
	return j
}

func (s *system) creditsOf(key string) int64 {
	s.T.Helper()
	acct, err := s.Ledger.Lookup(context.Background(), key)
	if err != nil {
		s.T.Fatal(err)
	}
	return acct.CreditsRemaining
}

func (s *system) fileOf(j dedupeJob) []byte {
	s.T.Helper()
	res, err := http.Get(j.Result.FileURL)
	if err != nil {
		s.T.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || int64(len(data)) != j.Result.CompressedSize {
		s.T.Fatalf("file of job %s: %d with %d bytes, want 200 with %d", j.ID, res.StatusCode, len(data), j.Result.CompressedSize)
	}
	return data
}

func TestTheSameImageTwiceIsChargedOnce(t *testing.T) {
	s := startSystem(t)
	png := images.Read(t, "photo.png")
	b64 := base64.StdEncoding.EncodeToString(png)

	first := s.post(s.Key, `{"image_url":"`+s.Samples+`/photo.png"}`)
	if first.DeduplicatedFrom != "" || first.UpstreamCalls != 1 || first.Input.SHA256 == "" {
		t.Fatalf("first job %+v; want a compressed job (one upstream call) with its input's sha256", first)
	}
	if got := s.Credits(); got != 499 {
		t.Fatalf("credits = %d after the first job, want 499", got)
	}

	// The same bytes as base64, then as an upload, then by URL again: free,
	// each naming the job that was charged, each with its own id and file.
	again := s.post(s.Key, `{"image_base64":"`+b64+`","filename":"again.png"}`)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", "upload.png")
	fw.Write(png)
	mw.Close()
	st, _, data := s.Request("POST", "/v1/jobs?wait=20", mw.FormDataContentType(), &form, map[string]string{"X-API-Key": s.Key})
	var upload dedupeJob
	if json.Unmarshal(data, &upload); st != http.StatusOK || upload.Status != "completed" {
		t.Fatalf("upload: %d %s", st, data)
	}
	byURL := s.post(s.Key, `{"image_url":"`+s.Samples+`/photo.png"}`)
	for _, j := range []dedupeJob{again, upload, byURL} {
		if j.ID == first.ID || j.DeduplicatedFrom != first.ID || j.UpstreamCalls != 0 || j.Input.SHA256 != first.Input.SHA256 {
			t.Errorf("repeat %+v; want its own id, deduplicated_from %s, no upstream call, the same sha256", j, first.ID)
		}
		if !bytes.Equal(s.fileOf(j), s.fileOf(first)) {
			t.Errorf("job %s's file differs from the first job's", j.ID)
		}
	}
	if again.Result.Filename != "again.png" {
		t.Errorf("repeat's filename = %q, want its own request's (again.png)", again.Result.Filename)
	}
	if got := s.Credits(); got != 499 {
		t.Errorf("credits = %d after three repeats, want 499 still", got)
	}

	// Another key pays for its own.
	other, _, err := s.Ledger.CreateAccount(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	theirs := s.post(other, `{"image_base64":"`+b64+`"}`)
	if theirs.DeduplicatedFrom != "" || s.creditsOf(other) != 499 {
		t.Errorf("another key's job %+v, its credits %d; want it compressed and charged (499)", theirs, s.creditsOf(other))
	}
	// dedupe:false compresses again, and is charged.
	forced := s.post(s.Key, `{"image_base64":"`+b64+`","dedupe":false}`)
	if forced.DeduplicatedFrom != "" || forced.UpstreamCalls != 1 || s.Credits() != 498 {
		t.Errorf("dedupe:false job %+v, credits %d; want it compressed and charged (498)", forced, s.Credits())
	}
	// A different image is not a repeat.
	if j := s.post(s.Key, `{"image_url":"`+s.Samples+`/photo.jpg"}`); j.DeduplicatedFrom != "" || s.Credits() != 497 {
		t.Errorf("another image's job %+v, credits %d; want it charged (497)", j, s.Credits())
	}

	_, scrape := s.OpsGet("/metrics")
	for _, line := range []string{`imgflow_jobs_deduplicated_total{waited="false"} 3`, `imgflow_credits_saved_total 3`} {
		if !strings.Contains(scrape, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
}

func TestTenConcurrentIdenticalJobsAreChargedOnce(t *testing.T) {
	s := startSystem(t)
	body := `{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(t, "screenshot.png")) + `"}`
	jobs := make([]dedupeJob, 10)
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			st, _, data := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": s.Key})
			if err := json.Unmarshal(data, &jobs[i]); err != nil || st != http.StatusOK {
				t.Errorf("POST %d: %d %s", i, st, data)
			}
		})
	}
	wg.Wait()
	var charged []string
	for _, j := range jobs {
		if j.Status != "completed" {
			t.Fatalf("job %+v not completed", j)
		}
		if j.DeduplicatedFrom == "" {
			charged = append(charged, j.ID)
		}
	}
	if len(charged) != 1 {
		t.Fatalf("%d of 10 identical jobs were compressed (%v), want 1", len(charged), charged)
	}
	for _, j := range jobs {
		if j.ID != charged[0] && j.DeduplicatedFrom != charged[0] {
			t.Errorf("job %s deduplicated from %s, want %s", j.ID, j.DeduplicatedFrom, charged[0])
		}
	}
	if got := s.Credits(); got != 499 {
		t.Errorf("credits = %d after 10 concurrent identical jobs, want 499", got)
	}
}

func TestDedupeOffChargesEveryJob(t *testing.T) {
	s := startSystem(t, func(o *systemtest.Options) { o.Dedupe = "off" })
	body := `{"image_url":"` + s.Samples + `/photo.webp"}`
	a, b := s.post(s.Key, body), s.post(s.Key, body)
	if a.DeduplicatedFrom != "" || b.DeduplicatedFrom != "" || s.Credits() != 498 {
		t.Errorf("with IMGFLOW_DEDUPE=off: jobs %+v, %+v, credits %d; want both charged (498)", a, b, s.Credits())
	}
	st, _, data := s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": s.Key})
	if st != http.StatusOK || !strings.Contains(string(data), `"would_charge":1`) {
		t.Errorf("dry run with dedupe off: %d %s; want would_charge 1", st, data)
	}
}

// dryRunAnswer is the dry run's body as a flow reads it.
type dryRunAnswer struct {
	WouldCharge      *int   `json:"would_charge"`
	DeduplicatedFrom string `json:"deduplicated_from"`
	CreditsRemaining *int64 `json:"credits_remaining"`
	Input            struct {
		Type   string `json:"type"`
		Size   int64  `json:"size"`
		Width  int    `json:"width"`
		Height int    `json:"height"`
	} `json:"input"`
}

func TestDryRunTellsTheCostAndCreatesNothing(t *testing.T) {
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.Key}
	jpg := images.Read(t, "photo.jpg")
	byURL := `{"image_url":"` + s.Samples + `/photo.jpg"}`
	dry := func(body string) dryRunAnswer {
		t.Helper()
		st, _, data := s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(body), auth)
		var a dryRunAnswer
		if err := json.Unmarshal(data, &a); err != nil || st != http.StatusOK || a.WouldCharge == nil || a.CreditsRemaining == nil {
			t.Fatalf("dry run: %d %s; want 200 with would_charge and credits_remaining", st, data)
		}
		return a
	}
	a := dry(byURL)
	if *a.WouldCharge != 1 || a.DeduplicatedFrom != "" || *a.CreditsRemaining != 500 ||
		a.Input.Type != "image/jpeg" || a.Input.Size != int64(len(jpg)) || a.Input.Width != 320 || a.Input.Height != 240 {
		t.Errorf("dry run before any job: %+v; want would_charge 1, 500 credits, a 320×240 image/jpeg of %d bytes", a, len(jpg))
	}
	_, _, list := s.Request("GET", "/v1/jobs", "", nil, auth)
	if !strings.Contains(string(list), `"jobs":[]`) || s.Credits() != 500 {
		t.Fatalf("after a dry run: jobs %s, credits %d; want no job and 500 credits", list, s.Credits())
	}

	job := s.post(s.Key, byURL)
	b64 := `{"image_base64":"` + base64.StdEncoding.EncodeToString(jpg) + `"}`
	if a := dry(b64); *a.WouldCharge != 0 || a.DeduplicatedFrom != job.ID || *a.CreditsRemaining != 499 {
		t.Errorf("dry run of a repeat: %+v; want would_charge 0 from %s, 499 credits", a, job.ID)
	}
	if a := dry(`{"image_base64":"` + base64.StdEncoding.EncodeToString(jpg) + `","dedupe":false}`); *a.WouldCharge != 1 {
		t.Errorf("dry run with dedupe:false: %+v; want would_charge 1", a)
	}

	// A broken image gets, from the dry run, the code its job fails with.
	for _, body := range []string{
		`{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(t, "truncated.png")) + `"}`,
		`{"image_url":"` + s.Samples + `/truncated.jpg"}`,
		`{"image_url":"` + s.Samples + `/bomb.png"}`,
	} {
		st, _, data := s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(body), auth)
		var dryErr struct {
			Code string `json:"code"`
		}
		json.Unmarshal(data, &dryErr)
		_, _, jobData := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), auth)
		var failed dedupeJob
		json.Unmarshal(jobData, &failed)
		if failed.Status != "failed" || failed.Error == nil {
			t.Fatalf("job of %.60s: %s; want it failed", body, jobData)
		}
		if st != http.StatusBadRequest || dryErr.Code != failed.Error.Code {
			t.Errorf("dry run of %.60s: %d %s; want 400 with the job's code %q", body, st, data, failed.Error.Code)
		}
	}
	// And a refused request the error a job gets.
	st, _, data := s.Request("POST", "/v1/jobs?dry_run=1", "application/json", strings.NewReader(byURL), map[string]string{"X-API-Key": "sk_not_a_key_000000"})
	if st != http.StatusUnauthorized || !strings.Contains(string(data), `"invalid_key"`) {
		t.Errorf("dry run with an unknown key: %d %s; want 401 invalid_key", st, data)
	}
	if got := s.Credits(); got != 499 {
		t.Errorf("credits = %d at the end, want 499 (one job charged)", got)
	}
}

// A claimant that fails frees the image: identical jobs waiting for it
// claim it in turn (and fail the same way here), none hangs, none is charged.
func TestConcurrentIdenticalJobsWhoseImageFailsAllFail(t *testing.T) {
	s := startSystem(t)
	body := `{"image_base64":"` + base64.StdEncoding.EncodeToString(images.Read(t, "truncated.webp")) + `"}`
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			st, _, data := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), map[string]string{"X-API-Key": s.Key})
			var j dedupeJob
			json.Unmarshal(data, &j)
			if st != http.StatusOK || j.Status != "failed" || j.Error == nil || j.Error.Code != "unsupported_format" || j.DeduplicatedFrom != "" {
				t.Errorf("POST %d: %d %s; want a job failed with unsupported_format", i, st, data)
			}
		})
	}
	wg.Wait()
	if got := s.Credits(); got != 500 {
		t.Errorf("credits = %d, want 500: failures cost nothing", got)
	}
}

// Twenty copies of one inline image in a batch are charged once: every
// item carries its content hash, so dedupe applies as for single jobs. An
// item that turns dedupe off is charged on its own, and a batch whose
// "dedupe" is false charges each item.
func TestIdenticalInlineBatchItemsAreChargedOnce(t *testing.T) {
	s := startSystem(t)
	auth := map[string]string{"X-API-Key": s.Key}
	b64 := base64.StdEncoding.EncodeToString(images.Read(t, "photo.png"))
	batch := func(body string) systemtest.BatchView {
		t.Helper()
		st, _, data := s.Request("POST", "/v1/batches", "application/json", strings.NewReader(body), auth)
		var b systemtest.BatchView
		if err := json.Unmarshal(data, &b); err != nil || st != http.StatusAccepted {
			t.Fatalf("POST batch: %d %.300s", st, data)
		}
		return s.WaitBatch(b.ID)
	}
	items := make([]string, 20)
	for i := range items {
		items[i] = `{"image_base64":"` + b64 + `"}`
	}
	before := s.Credits()
	if b := batch(`{"items":[` + strings.Join(items, ",") + `]}`); b.Counts.Completed != 20 {
		t.Fatalf("batch: %+v, want 20 completed", b.Counts)
	}
	if spent := before - s.Credits(); spent != 1 {
		t.Errorf("20 identical base64 items cost %d credits, want 1", spent)
	}
	before = s.Credits()
	one := `{"items":[{"image_base64":"` + b64 + `"},{"image_base64":"` + b64 + `","dedupe":false}]}`
	if b := batch(one); b.Counts.Completed != 2 {
		t.Fatalf("batch: %+v, want 2 completed", b.Counts)
	}
	if spent := before - s.Credits(); spent != 1 {
		t.Errorf("a repeat and an item with dedupe false cost %d credits, want 1 (the item that turned it off)", spent)
	}
	before = s.Credits()
	if b := batch(`{"dedupe":false,"items":[` + strings.Join(items[:3], ",") + `]}`); b.Counts.Completed != 3 {
		t.Fatalf("batch: %+v, want 3 completed", b.Counts)
	}
	if spent := before - s.Credits(); spent != 3 {
		t.Errorf("a batch with dedupe false cost %d credits for 3 items, want 3", spent)
	}
}

// A source whose file is gone (expired before its entry) cannot serve:
// the next identical job forgets it, entry and claim, compresses at once
// and serves the ones after it.
func TestAnIdenticalJobWhoseSourceFileIsGoneIsCompressedAtOnce(t *testing.T) {
	s := startSystem(t)
	ctx := context.Background()
	body := `{"image_url":"` + s.Samples + `/photo.png"}`
	first := s.post(s.Key, body)
	files, err := s.Redis.Client.Keys(ctx, s.Redis.Prefix+"*blob:out:{"+first.ID+"}*").Result()
	if err != nil || len(files) == 0 {
		t.Fatalf("the first job's file: keys %v (%v), want some", files, err)
	}
	s.Redis.Client.Del(ctx, files...)

	second := s.post(s.Key, body)
	if second.DeduplicatedFrom != "" || second.UpstreamCalls != 1 || s.Credits() != 498 {
		t.Fatalf("job after the source's file went: %+v, credits %d; want it compressed and charged (498)", second, s.Credits())
	}
	if strings.Contains(s.Logs.String(), "no reusable result after several rounds") {
		t.Errorf("the job looked for a reusable result round after round; want the gone source forgotten at once")
	}
	third := s.post(s.Key, body)
	if third.DeduplicatedFrom != second.ID || s.Credits() != 498 {
		t.Errorf("the next identical job %+v, credits %d; want it deduplicated from %s (498)", third, s.Credits(), second.ID)
	}
}

// A result kept for less than a claim's lease takes its job's claim with
// it when recorded: a claim must not name a job whose result is gone.
func TestAResultShorterThanTheLeaseLeavesNoClaim(t *testing.T) {
	for _, tc := range []struct {
		resultTTL  time.Duration
		wantClaims int
	}{{time.Minute, 0}, {time.Hour, 1}} {
		s := startSystem(t, func(o *systemtest.Options) { o.ResultTTL = tc.resultTTL })
		ctx := context.Background()
		s.post(s.Key, `{"image_url":"`+s.Samples+`/photo.png"}`)
		// The follow-up after the job's end records it: the entry, then
		// (or not) the claim's release.
		claims := func() []string { return s.Redis.Client.Keys(ctx, s.Redis.Prefix+"*dedupeclaim:{*").Val() }
		deadline := time.Now().Add(10 * time.Second)
		for len(s.Redis.Client.Keys(ctx, s.Redis.Prefix+"*dedupe:{*").Val()) == 0 || len(claims()) != tc.wantClaims {
			if time.Now().After(deadline) {
				t.Fatalf("result TTL %v: entries %v, claims %v; want an entry and %d claims (a claim beside its entry is left to expire)",
					tc.resultTTL, s.Redis.Client.Keys(ctx, s.Redis.Prefix+"*dedupe:{*").Val(), claims(), tc.wantClaims)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

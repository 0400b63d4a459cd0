package system_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

// The whole system as the commands assemble it: each input form, a failed
// fetch, an Idempotency-Key retry and signed deliveries, end to end.

func TestEveryInputFormComesBackCompressed(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	png := images.Read(t, "photo.png")

	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.Samples+`/photo.jpg"}`), auth)
	s.ExpectCompressed(st, body, "image/jpeg")

	st, _, body = s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_base64":"`+base64.StdEncoding.EncodeToString(png)+`"}`), auth)
	s.ExpectCompressed(st, body, "image/png")

	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("upload", "photo.webp")
	fw.Write(images.Read(t, "photo.webp"))
	mw.Close()
	st, _, body = s.Request("POST", "/v1/jobs?wait=20", mw.FormDataContentType(), &form, auth)
	s.ExpectCompressed(st, body, "image/webp")

	if got := s.Credits(); got != 497 {
		t.Errorf("credits = %d after three jobs, want 497 (one per job)", got)
	}

	// The operator sees it in /metrics. The worker counts a job just after
	// the update that wakes ?wait, so the last count may trail the answer
	// by a moment.
	_, scrape := s.OpsGet("/metrics")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(scrape, "imgflow_jobs_completed_total 3") && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		_, scrape = s.OpsGet("/metrics")
	}
	for _, line := range []string{
		`imgflow_jobs_created_total{input="url"} 1`,
		`imgflow_jobs_created_total{input="base64"} 1`,
		`imgflow_jobs_created_total{input="upload"} 1`,
		`imgflow_jobs_completed_total 3`,
		`imgflow_http_requests_total{method="POST",route="/v1/jobs",status="200"} 3`,
	} {
		if !strings.Contains(scrape, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}

	// Nothing in the logs of all that may reveal the key or the image.
	logs := s.Logs.String()
	if strings.Contains(logs, s.Key) {
		t.Error("the API key appears in the logs")
	}
	if strings.Contains(logs, base64.StdEncoding.EncodeToString(png[:48])) {
		t.Error("image bytes appear in the logs")
	}
	if !strings.Contains(logs, `"job_id"`) || !strings.Contains(logs, `"request_id"`) {
		t.Error("logs carry no job_id or request_id")
	}
}

func TestBadImageURLFailsTheJobWithAClearError(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	cases := []struct{ path, code string }{
		{"/missing.png", "fetch_failed"},
		{"/not-an-image.png", "unsupported_format"},
		{"/truncated.png", "unsupported_format"},
	}
	for _, tc := range cases {
		st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json",
			strings.NewReader(`{"image_url":"`+s.Samples+tc.path+`"}`), auth)
		job := systemtest.DecodeJob(t, st, body)
		if job.Status != "failed" || job.Error == nil || job.Error.Code != tc.code {
			t.Errorf("%s: job %s; want failed with %s", tc.path, body, tc.code)
		}
	}
	if got := s.Credits(); got != 500 {
		t.Errorf("credits = %d after failed jobs, want 500: failures are free", got)
	}
}

func TestRetriesWithOneIdempotencyKeyChargeOneCredit(t *testing.T) {
	s := systemtest.Start(t)
	hdr := map[string]string{"X-API-Key": s.Key, "Idempotency-Key": "zap-7f3a"}
	body := `{"image_url":"` + s.Samples + `/screenshot.png"}`
	var ids []string
	for i := 0; i < 3; i++ {
		st, _, out := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(body), hdr)
		ids = append(ids, s.ExpectCompressed(st, out, "image/png").ID)
	}
	if ids[0] != ids[1] || ids[1] != ids[2] {
		t.Errorf("job ids %v; want one job for one Idempotency-Key", ids)
	}
	if got := s.Credits(); got != 499 {
		t.Errorf("credits = %d, want 499: three retries, one charge", got)
	}
}

func TestCallbackAndHookDeliverSignedEvents(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	type delivery struct {
		path   string
		header http.Header
		body   []byte
	}
	got := make(chan delivery, 10)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- delivery{r.URL.RequestURI(), r.Header.Clone(), body}
	}))
	defer receiver.Close()

	_, _, acct := s.Request("GET", "/v1/account", "", nil, auth)
	var account struct {
		WebhookSecret string `json:"webhook_secret"`
	}
	json.Unmarshal(acct, &account)

	st, _, hookBody := s.Request("POST", "/v1/hooks", "application/json",
		strings.NewReader(`{"target_url":"`+receiver.URL+`/hook","event":"job.finished"}`), auth)
	var hook struct{ ID, Secret string }
	json.Unmarshal(hookBody, &hook)
	if st != http.StatusCreated {
		t.Fatalf("hook: %d %s", st, hookBody)
	}

	s.Request("POST", "/v1/jobs", "application/json",
		strings.NewReader(`{"image_url":"`+s.Samples+`/photo.png","callback_url":"`+receiver.URL+`/cb?sig=n8n-resume-1"}`), auth)
	secrets := map[string]string{"/cb?sig=n8n-resume-1": account.WebhookSecret, "/hook": hook.Secret}
	for i := 0; i < 2; i++ {
		select {
		case d := <-got:
			secret, ok := secrets[d.path]
			if !ok {
				t.Fatalf("delivery to %s; want /cb?sig=n8n-resume-1 (query kept) or /hook", d.path)
			}
			wh, err := standardwebhooks.NewWebhook(secret)
			if err != nil {
				t.Fatal(err)
			}
			if err := wh.Verify(d.body, d.header); err != nil {
				t.Errorf("delivery to %s does not verify: %v", d.path, err)
			}
			var event struct {
				Type string             `json:"type"`
				Data systemtest.JobView `json:"data"`
			}
			json.Unmarshal(d.body, &event)
			if event.Type != "job.completed" || event.Data.Result == nil || event.Data.Result.FileURL == "" {
				t.Errorf("event %s; want job.completed with a file_url", d.body)
			}
			if strings.Contains(string(d.body), "compressed_data") {
				t.Error("event carries the image bytes")
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no delivery within 20s")
		}
	}

	// A deleted hook gets nothing more.
	if st, _, _ := s.Request("DELETE", "/v1/hooks/"+hook.ID, "", nil, auth); st != http.StatusNoContent {
		t.Fatalf("delete hook: %d", st)
	}
	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json",
		strings.NewReader(`{"image_url":"`+s.Samples+`/screenshot.png"}`), auth)
	s.ExpectCompressed(st, body, "image/png")
	select {
	case d := <-got:
		t.Errorf("delivery to %s after the hook was deleted", d.path)
	case <-time.After(time.Second):
	}
}

// IMGFLOW_JOB_TTL bounds how long a job's record lives in Redis.
func TestJobTTLBoundsTheJobRecord(t *testing.T) {
	s := systemtest.Start(t, func(o *systemtest.Options) { o.JobTTL = time.Hour })
	auth := map[string]string{"X-API-Key": s.Key}
	st, _, body := s.Request("POST", "/v1/jobs?wait=20", "application/json", strings.NewReader(`{"image_url":"`+s.Samples+`/photo.png"}`), auth)
	job := s.ExpectCompressed(st, body, "image/png")
	ttl, err := s.Redis.Client.TTL(context.Background(), s.Redis.Prefix+"job:{"+job.ID+"}").Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 || ttl > time.Hour {
		t.Errorf("job record TTL %s with IMGFLOW_JOB_TTL=1h, want at most 1h (and set)", ttl)
	}
}

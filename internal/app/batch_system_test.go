package app_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/imgflow/imgflow/fixtures/images"
	"github.com/imgflow/imgflow/internal/systemtest"
)

func TestMixedBatchFinishesWithOneSignedEventAndAnArchive(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	rcv, got := systemtest.Receiver(t)
	_, _, acct := s.Request("GET", "/v1/account", "", nil, auth)
	var account struct {
		WebhookSecret string `json:"webhook_secret"`
	}
	json.Unmarshal(acct, &account)
	hookSecrets := map[string]string{}
	for _, event := range []string{"batch.finished", "job.finished"} {
		st, _, body := s.Request("POST", "/v1/hooks", "application/json",
			strings.NewReader(`{"target_url":"`+rcv+`/hook/`+event+`","event":"`+event+`"}`), auth)
		var hook struct{ Secret string }
		json.Unmarshal(body, &hook)
		if st != http.StatusCreated {
			t.Fatalf("hook %s: %d %s", event, st, body)
		}
		hookSecrets["/hook/"+event] = hook.Secret
	}
	before := s.Credits()
	webp, _ := os.ReadFile(images.Path("photo.webp"))
	notImage, _ := os.ReadFile(images.Path("not-an-image.png"))
	items := []map[string]any{
		{"image_url": s.Samples + "/photo.png", "metadata": map[string]any{"sku": "A1"}},
		{"image_url": s.Samples + "/screenshot.png"},
		{"image_base64": base64.StdEncoding.EncodeToString(webp), "filename": "../../etc/Photo.webp"},
		{"image_base64": base64.StdEncoding.EncodeToString(notImage), "filename": "broken.png"},
		{"image_url": s.Samples + "/photo.png"}, // the same name again
	}
	req, _ := json.Marshal(map[string]any{"items": items, "callback_url": rcv + "/cb?sig=1", "metadata": map[string]any{"run": 7}})
	st, h, body := s.Request("POST", "/v1/batches", "application/json", bytes.NewReader(req), auth)
	if st != http.StatusAccepted || h.Get("Location") == "" {
		t.Fatalf("POST /v1/batches: %d %s; want 202 with Location", st, body)
	}
	var created systemtest.BatchView
	json.Unmarshal(body, &created)
	if created.Counts.Total != 5 || created.Status != "running" || created.Metadata["run"] != float64(7) {
		t.Fatalf("created batch %s; want 5 items running with its metadata", body)
	}

	b := s.WaitBatch(created.ID)
	if b.Counts.Completed != 4 || b.Counts.Failed != 1 || b.Counts.Queued != 0 || b.Counts.Processing != 0 || b.FinishedAt == nil || b.SavedBytes <= 0 {
		t.Fatalf("finished batch %+v; want 4 completed, 1 failed, bytes saved", b)
	}

	// Each item is an ordinary job with its batch and index.
	st, _, body = s.Request("GET", "/v1/batches/"+b.ID+"/jobs?limit=2", "", nil, auth)
	var page struct {
		Jobs       []systemtest.BatchJobView `json:"jobs"`
		NextCursor string                    `json:"next_cursor"`
	}
	json.Unmarshal(body, &page)
	if st != http.StatusOK || len(page.Jobs) != 2 || page.NextCursor != "2" || *page.Jobs[1].Index != 1 || page.Jobs[0].BatchID != b.ID {
		t.Fatalf("first page of jobs: %d %s", st, body)
	}
	var all []systemtest.BatchJobView
	for cursor := ""; ; {
		_, _, body = s.Request("GET", "/v1/batches/"+b.ID+"/jobs?limit=2&cursor="+cursor, "", nil, auth)
		page.NextCursor, page.Jobs = "", nil // fields an answer omits must not keep the last page's values
		json.Unmarshal(body, &page)
		all = append(all, page.Jobs...)
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(all) != 5 || all[3].Status != "failed" || all[3].Error == nil {
		t.Fatalf("batch jobs: %+v; want 5, the fourth failed", all)
	}
	// Each item that completed is charged once; an item whose image another
	// of the key's jobs already compressed takes that result free.
	compressed := 0
	for _, j := range all {
		if j.Status == "completed" && j.DeduplicatedFrom == "" {
			compressed++
		}
	}
	if charged := before - s.Credits(); charged != int64(compressed) || compressed < 3 {
		t.Errorf("credits charged %d; want %d (one per item compressed)", charged, compressed)
	}
	if all[3].Error.Code != "unsupported_format" && all[3].Error.Code != "invalid_input" {
		t.Errorf("the broken image failed with %q; want unsupported_format", all[3].Error.Code)
	}
	st, _, body = s.Request("GET", "/v1/jobs/"+all[0].ID, "", nil, auth)
	if st != http.StatusOK || !strings.Contains(string(body), `"batch_id":"`+b.ID+`"`) || !strings.Contains(string(body), `"index":0`) {
		t.Errorf("GET /v1/jobs/{item}: %d %s; want batch_id and index 0", st, body)
	}

	// One batch.finished to the callback and to the batch hook; job events
	// only to the job hook, one per item.
	byPath := map[string]int{}
	timeout := time.After(20 * time.Second)
	for n := 0; n < 7; n++ {
		select {
		case d := <-got:
			p := d.Path
			byPath[p]++
			secret := hookSecrets[p]
			if p == "/cb?sig=1" {
				secret = account.WebhookSecret
			}
			wh, _ := standardwebhooks.NewWebhook(secret)
			if err := wh.Verify(d.Body, d.Header); err != nil {
				t.Errorf("delivery to %s does not verify: %v", p, err)
			}
			var event struct {
				Type string               `json:"type"`
				Data systemtest.BatchView `json:"data"`
			}
			json.Unmarshal(d.Body, &event)
			wantType := "batch.finished"
			if p == "/hook/job.finished" {
				wantType = event.Type // job.completed or job.failed
				if event.Type != "job.completed" && event.Type != "job.failed" {
					t.Errorf("job hook got %s", event.Type)
				}
			}
			if event.Type != wantType || (wantType == "batch.finished" && (event.Data.Counts.Completed != 4 || event.Data.Links.Archive == "")) {
				t.Errorf("delivery to %s: %s", p, d.Body)
			}
		case <-timeout:
			t.Fatalf("deliveries after 20s: %v; want the callback, the batch hook once each and 5 job events", byPath)
		}
	}
	select {
	case d := <-got:
		t.Errorf("an extra delivery to %s: %s", d.Path, d.Body)
	case <-time.After(500 * time.Millisecond):
	}
	if byPath["/cb?sig=1"] != 1 || byPath["/hook/batch.finished"] != 1 || byPath["/hook/job.finished"] != 5 {
		t.Errorf("deliveries %v", byPath)
	}

	// The archive, by its signed link and without the key.
	res, err := http.Get(b.Links.Archive)
	if err != nil {
		t.Fatal(err)
	}
	zipped, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "application/zip" {
		t.Fatalf("archive: %d %s", res.StatusCode, res.Header)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipped), int64(len(zipped)))
	if err != nil {
		t.Fatalf("archive is not a ZIP: %v", err)
	}
	var names []string
	var m struct {
		Items []struct {
			Index          int    `json:"index"`
			JobID          string `json:"job_id"`
			Status         string `json:"status"`
			File           string `json:"file"`
			ErrorCode      string `json:"error_code"`
			CompressedSize int64  `json:"compressed_size"`
		} `json:"items"`
	}
	sizes := map[string]int64{}
	for _, f := range zr.File {
		names = append(names, f.Name)
		sizes[f.Name] = int64(f.UncompressedSize64)
		if f.Name == "manifest.json" {
			r, _ := f.Open()
			json.NewDecoder(r).Decode(&m)
			r.Close()
		}
	}
	want := []string{"photo.png", "screenshot.png", "Photo.webp", "photo-2.png", "manifest.json"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("archive names %v; want %v", names, want)
	}
	if len(m.Items) != 5 || m.Items[3].Status != "failed" || m.Items[3].ErrorCode == "" || m.Items[3].File != "" ||
		m.Items[2].File != "Photo.webp" || m.Items[2].JobID != all[2].ID || sizes["Photo.webp"] != m.Items[2].CompressedSize {
		t.Errorf("manifest %+v", m)
	}
	for _, name := range names {
		if strings.ContainsAny(name, `/\`) || filepath.IsAbs(name) {
			t.Errorf("unsafe name %q", name)
		}
	}
	// Without the key or token: refused; another key: not found.
	if st, _, _ := s.Request("GET", "/v1/batches/"+b.ID+"/archive", "", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("archive without key: %d; want 401", st)
	}
	other, _, _ := s.Ledger.CreateAccount(context.Background(), 0)
	if st, _, _ := s.Request("GET", "/v1/batches/"+b.ID, "", nil, map[string]string{"X-API-Key": other}); st != http.StatusNotFound {
		t.Errorf("another key's batch: %d; want 404", st)
	}
	st, _, body = s.Request("GET", "/v1/batches", "", nil, auth)
	if st != http.StatusOK || !strings.Contains(string(body), b.ID) {
		t.Errorf("GET /v1/batches: %d %s", st, body)
	}
}

func TestBatchRefusesAMalformedItemByIndexAndMakesNothing(t *testing.T) {
	s := systemtest.Start(t)
	auth := map[string]string{"X-API-Key": s.Key}
	cases := map[string]struct {
		body  string
		field string
		code  string
	}{
		"no items":       {`{"items":[]}`, "items", "invalid_input"},
		"two sources":    {`{"items":[{"image_url":"` + s.Samples + `/photo.png"},{"image_url":"http://x.test/a.png","image_base64":"iVBORw0KGgo="}]}`, "items[1].image_url", "invalid_input"},
		"no source":      {`{"items":[{"image_url":"` + s.Samples + `/photo.png"},{"filename":"a.png"}]}`, "items[1].image_url", "invalid_input"},
		"bad url":        {`{"items":[{"image_url":"ftp://x/a.png"}]}`, "items[0].image_url", "invalid_input"},
		"bad base64":     {`{"items":[{"image_base64":"not base64!!"}]}`, "items[0].image_base64", "invalid_input"},
		"metadata":       {`{"items":[{"image_url":"` + s.Samples + `/photo.png","metadata":[1]}]}`, "items[0].metadata", "invalid_input"},
		"private url":    {`{"items":[{"image_url":"http://10.1.2.3/a.png"}]}`, "items[0].image_url", "url_not_allowed"},
		"too many":       {`{"items":[` + strings.Repeat(`{"image_url":"http://x.test/a.png"},`, 1000) + `{"image_url":"http://x.test/a.png"}]}`, "items", "invalid_input"},
		"batch callback": {`{"items":[{"image_url":"` + s.Samples + `/photo.png"}],"callback_url":"nope"}`, "CallbackURL", "invalid_input"},
		"batch metadata": {`{"items":[{"image_url":"` + s.Samples + `/photo.png"}],"metadata":"x"}`, "metadata", "invalid_input"},
		"not json":       {`{"items":`, "", "invalid_input"},
	}
	for name, tc := range cases {
		st, _, body := s.Request("POST", "/v1/batches", "application/json", strings.NewReader(tc.body), auth)
		var e struct {
			Code    string `json:"code"`
			Details []struct{ Field string }
		}
		json.Unmarshal(body, &e)
		if st != http.StatusBadRequest || e.Code != tc.code || (tc.field != "" && (len(e.Details) == 0 || e.Details[0].Field != tc.field)) {
			t.Errorf("%s: %d %s; want 400 %s naming %s", name, st, body, tc.code, tc.field)
		}
	}
	_, _, body := s.Request("GET", "/v1/batches", "", nil, auth)
	if !strings.Contains(string(body), `"batches":[]`) {
		t.Errorf("batches after refused requests: %s; want none", body)
	}
	_, _, body = s.Request("GET", "/v1/jobs", "", nil, auth)
	if !strings.Contains(string(body), `"jobs":[]`) {
		t.Errorf("jobs after refused requests: %s; want none", body)
	}
}

// The decision for a key with fewer credits than items: the batch is
// accepted (the balance is above zero); items are charged as they
// complete, and those the compression API refuses once the balance is
// spent fail with insufficient_credits, uncharged.
func TestBatchBeyondTheBalanceFailsTheRestWithInsufficientCredits(t *testing.T) {
	s := systemtest.Start(t)
	ctx := context.Background()
	for s.Credits() > 2 {
		if _, err := s.Ledger.Charge(ctx, s.Key); err != nil {
			t.Fatal(err)
		}
	}
	auth := map[string]string{"X-API-Key": s.Key}
	var list []string // five distinct images: none is a repeat another job's result serves free
	for _, name := range []string{"photo.png", "screenshot.png", "photo.jpg", "screenshot.jpg", "photo.webp"} {
		list = append(list, `{"image_url":"`+s.Samples+`/`+name+`"}`)
	}
	items := strings.Join(list, ",")
	st, _, body := s.Request("POST", "/v1/batches?wait=20", "application/json", strings.NewReader(`{"items":[`+items+`]}`), auth)
	var b systemtest.BatchView
	json.Unmarshal(body, &b)
	if st != http.StatusOK || b.Status != "finished" {
		t.Fatalf("POST ?wait=20: %d %s; want 200 and a finished batch", st, body)
	}
	if b.Counts.Completed != 2 || b.Counts.Failed != 3 || s.Credits() != 0 {
		t.Fatalf("batch %+v, credits left %d; want 2 completed, 3 failed, 0 left", b.Counts, s.Credits())
	}
	_, _, body = s.Request("GET", "/v1/batches/"+b.ID+"/jobs?status=failed", "", nil, auth)
	if strings.Count(string(body), `"code":"insufficient_credits"`) != 3 {
		t.Errorf("failed items %s; want 3 with insufficient_credits", body)
	}
	// A key with no credit left (as the key check says; it is cached for
	// PreflightTTL) has a new batch refused whole.
	broke, _, _ := s.Ledger.CreateAccount(ctx, 0)
	for {
		acct, _ := s.Ledger.Lookup(ctx, broke)
		if acct.CreditsRemaining == 0 {
			break
		}
		if _, err := s.Ledger.Charge(ctx, broke); err != nil {
			t.Fatal(err)
		}
	}
	st, _, body = s.Request("POST", "/v1/batches", "application/json", strings.NewReader(`{"items":[`+items+`]}`), map[string]string{"X-API-Key": broke})
	if st != http.StatusTooManyRequests || !strings.Contains(string(body), "insufficient_credits") {
		t.Errorf("a batch at zero balance: %d %s; want 429", st, body)
	}
}

func TestBatchUploadsAndIdempotencyKeyMakeOneBatch(t *testing.T) {
	s := systemtest.Start(t)
	png, _ := os.ReadFile(images.Path("photo.png"))
	jpg, _ := os.ReadFile(images.Path("photo.jpg"))
	form := func() (string, *bytes.Buffer) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range []struct {
			name string
			data []byte
		}{{"a/one.png", png}, {"two.jpg", jpg}} {
			fw, _ := mw.CreateFormFile("file", f.name)
			fw.Write(f.data)
		}
		mw.WriteField("metadata", `{"from":"form"}`)
		mw.Close()
		return mw.FormDataContentType(), &buf
	}
	before := s.Credits()
	hdr := map[string]string{"X-API-Key": s.Key, "Idempotency-Key": "upload-1"}
	ct, buf := form()
	st, _, body := s.Request("POST", "/v1/batches", ct, buf, hdr)
	var first systemtest.BatchView
	json.Unmarshal(body, &first)
	if st != http.StatusAccepted || first.Counts.Total != 2 {
		t.Fatalf("multipart batch: %d %s", st, body)
	}
	ct, buf = form()
	st, _, body = s.Request("POST", "/v1/batches", ct, buf, hdr)
	var again systemtest.BatchView
	json.Unmarshal(body, &again)
	if again.ID != first.ID {
		t.Fatalf("same Idempotency-Key: %d %s; want batch %s again", st, body, first.ID)
	}
	b := s.WaitBatch(first.ID)
	if b.Counts.Completed != 2 || before-s.Credits() != 2 {
		t.Errorf("batch %+v, charged %d; want 2 completed and 2 credits", b.Counts, before-s.Credits())
	}
	st, _, body = s.Request("POST", "/v1/batches", "application/json",
		strings.NewReader(`{"items":[{"image_url":"`+s.Samples+`/photo.png"}]}`), hdr)
	if st != http.StatusUnprocessableEntity {
		t.Errorf("the key with another body: %d %s; want 422", st, body)
	}
}

package worker

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/fetch"
	"github.com/imgflow/imgflow/connector/guard"
	"github.com/imgflow/imgflow/connector/upstream"
	"github.com/imgflow/imgflow/fixtures/images"
	reference "github.com/imgflow/imgflow/fixtures/upstream"
)

// withReferenceUpstream points the harness at the reference compression API
// (over real HTTP) through the real client and fetcher, with a fresh
// account whose key becomes the test key. It returns the ledger and the
// image server's base URL.
func withReferenceUpstream(t *testing.T, h *harness, failRate float64) (*reference.Ledger, string) {
	t.Helper()
	return withReferenceUpstreamConfig(t, h, reference.Config{FailRate: failRate})
}

// withReferenceUpstreamConfig is withReferenceUpstream with the upstream's
// configuration (its Ledger and Logger are filled in).
func withReferenceUpstreamConfig(t *testing.T, h *harness, cfg reference.Config) (*reference.Ledger, string) {
	t.Helper()
	ledger := reference.NewLedger(h.redis.Client, h.redis.Prefix+"upstream:", time.Now)
	key, _, err := ledger.CreateAccount(context.Background(), 0)
	if err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	cfg.Ledger, cfg.Logger = ledger, testLogger()
	api := httptest.NewServer(reference.NewServer(cfg))
	t.Cleanup(api.Close)
	imgs := httptest.NewServer(http.FileServer(http.Dir(images.Path("."))))
	t.Cleanup(imgs.Close)

	h.cfg.Compressor = upstream.New(api.URL + "/api")
	h.cfg.Fetcher = fetch.New(fetch.Options{Allow: guard.Loopback()})
	h.apiKey = key
	h.owner = h.keyring.KeyHash(key)
	return ledger, imgs.URL
}

func TestJobsCompressThroughTheReferenceUpstreamForOneCreditEach(t *testing.T) {
	h := newHarness(t)
	ledger, imgURL := withReferenceUpstream(t, h, 0)
	h.start()
	ids := map[string]string{}
	for _, name := range []string{"photo.png", "photo.jpg", "screenshot.webp"} {
		job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: imgURL + "/" + name}, "")
		h.enqueue(job.ID)
		ids[name] = job.ID
	}
	for name, id := range ids {
		got := h.waitJob(id, "finished", finished)
		if got.Status != connector.StatusCompleted {
			t.Fatalf("%s: expected completed, got %s %+v", name, got.Status, got.Error)
		}
		r := got.Result
		if r.Filename != name || r.CompressedSize <= 0 || r.CompressedSize > r.OriginalSize || r.CreditsRemaining == nil {
			t.Errorf("%s: expected a result named %s no larger than the input with credits_remaining, got %+v", name, name, r)
		}
		out, err := connector.ReadBlob(context.Background(), h.store.Blobs, connector.OutputBlobKey(id))
		if err != nil || int64(len(out)) != r.CompressedSize || connector.SniffImageType(out) != r.MIMEType {
			t.Errorf("%s: expected a stored %s of %d bytes, got %d bytes (%s), err %v", name, r.MIMEType, r.CompressedSize, len(out), connector.SniffImageType(out), err)
		}
	}
	acct, err := ledger.Lookup(context.Background(), h.apiKey)
	if err != nil {
		t.Fatal(err)
	}
	if acct.CreditsRemaining != 500-3 {
		t.Errorf("credits: expected 497 after 3 jobs, got %d", acct.CreditsRemaining)
	}
}

func TestFlakyReferenceUpstreamStillChargesOneCreditPerJob(t *testing.T) {
	h := newHarness(t)
	ledger, imgURL := withReferenceUpstream(t, h, 0.5)
	h.cfg.MaxCompressRetries = 30 // on fair dispatch the workers decide retries, 2^-31 to fail
	h.queue = NewQueue(h.queue.client, h.redis.Queue(), h.queueOptions(WithMaxCompressRetries(30))...)
	h.start()
	var ids []string
	for range 4 {
		job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: imgURL + "/photo.png"}, "")
		h.enqueue(job.ID)
		ids = append(ids, job.ID)
	}
	attempts := 0
	for _, id := range ids {
		got := h.waitJob(id, "finished", finished)
		if got.Status != connector.StatusCompleted {
			t.Fatalf("expected completed despite 500s, got %s %+v", got.Status, got.Error)
		}
		attempts += got.Runs
	}
	acct, err := ledger.Lookup(context.Background(), h.apiKey)
	if err != nil {
		t.Fatal(err)
	}
	if acct.CreditsRemaining != 500-4 {
		t.Errorf("credits: expected 496 after 4 jobs (%d attempts), got %d", attempts, acct.CreditsRemaining)
	}
}

func TestUnknownKeyFailsAtTheReferenceUpstreamWithItsText(t *testing.T) {
	h := newHarness(t)
	_, imgURL := withReferenceUpstream(t, h, 0)
	h.apiKey = "not-a-key-of-the-ledger"
	h.start()
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: imgURL + "/photo.png"}, "")
	h.enqueue(job.ID)

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusFailed || got.Error == nil || got.Error.Code != connector.EUNAUTHORIZED ||
		got.Error.UpstreamStatus != 401 || got.Error.Message != "Invalid API key" || got.Runs != 1 {
		t.Fatalf("expected failed invalid_key 401 \"Invalid API key\" after 1 attempt, got %s %+v (%d attempts)", got.Status, got.Error, got.Runs)
	}
}

// A worker killed after the upstream charged and before the answer was kept
// (the window in which a run could be charged twice): the re-run calls again with
// the job's Idempotency-Key, the upstream replays its first answer, and the
// job costs exactly one credit, with no doubt left on it.
func TestKilledMidCallCostsOneCreditWithAnIdempotentUpstream(t *testing.T) {
	for name, c := range map[string]struct {
		ignore    bool
		credits   int64
		uncertain bool
	}{
		"honoured": {ignore: false, credits: 500 - 1, uncertain: false},
		"ignored":  {ignore: true, credits: 500 - 2, uncertain: true},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			ledger, imgURL := withReferenceUpstreamConfig(t, h, reference.Config{IgnoreIdempotencyKey: c.ignore})
			crashed := crashOnce(h, "answered")
			h.start()
			job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: imgURL + "/photo.png"}, "")
			h.enqueue(job.ID)

			got := h.waitJob(job.ID, "finished", finished)
			if got.Status != connector.StatusCompleted || !crashed.Load() {
				t.Fatalf("expected completed after a crash, got %s %+v (crashed %v)", got.Status, got.Error, crashed.Load())
			}
			acct, err := ledger.Lookup(context.Background(), h.apiKey)
			if err != nil {
				t.Fatal(err)
			}
			if acct.CreditsRemaining != c.credits || got.UpstreamCalls != 2 || got.ChargeUncertain != c.uncertain {
				t.Errorf("credits %d, upstream_calls %d, charge_uncertain %v; want %d, 2, %v",
					acct.CreditsRemaining, got.UpstreamCalls, got.ChargeUncertain, c.credits, c.uncertain)
			}
		})
	}
}

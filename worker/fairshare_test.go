package worker

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// gatedFetcher holds every fetch of a URL containing "slow" until opened,
// counting those in flight, and serves photo.png.
type gatedFetcher struct {
	png      []byte
	open     chan struct{}
	once     sync.Once
	inFlight atomic.Int64
	most     atomic.Int64
}

func (f *gatedFetcher) release() { f.once.Do(func() { close(f.open) }) }

func (f *gatedFetcher) FetchImage(ctx context.Context, url string) (*connector.Image, error) {
	if strings.Contains(url, "slow") {
		n := f.inFlight.Add(1)
		defer f.inFlight.Add(-1)
		for m := f.most.Load(); n > m && !f.most.CompareAndSwap(m, n); m = f.most.Load() {
		}
		select {
		case <-f.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &connector.Image{Data: bytes.NewReader(f.png), MIMEType: "image/png", Filename: "photo.png"}, nil
}

// TestAKeysFloodWaitsWhileAnotherKeysJobRuns: with a share of 1 (of 4
// workers), a key's eight stalled jobs hold one worker, never more; another
// key's job runs to completion meanwhile. The worker is then stopped with
// the flood parked; a new worker, once the fetches are released, runs
// every flooding job, each compressed (charged) once, none lost.
func TestAKeysFloodWaitsWhileAnotherKeysJobRuns(t *testing.T) {
	h := newHarness(t)
	f := &gatedFetcher{png: images.Read(t, "photo.png"), open: make(chan struct{})}
	t.Cleanup(f.release)
	h.cfg.Fetcher, h.cfg.KeyShare = f, 1
	// On fair dispatch, the job still running at the stop is left to its
	// run, its lease to lapse (dispatch_run.go): a short one here.
	h.tweak = func(w *Worker) { w.share.parkBase, w.fairLease = 20*time.Millisecond, 3*time.Second }
	_, stop := h.start()

	var flood []string
	for i := range 8 {
		j := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: "https://images.test/slow/" + string(rune('a'+i)) + ".png"}, "")
		h.enqueueOf(j.ID, h.owner)
		flood = append(flood, j.ID)
	}
	waitFor(t, "the flooding key's first fetch", func() bool { return f.inFlight.Load() == 1 })

	// Another key's job, queued behind all eight.
	other := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued,
		Input: connector.JobInput{Kind: connector.InputURL, URL: "https://images.test/fast.png"},
		Owner: h.keyring.KeyHash("another-key-0123456789"), SealedKey: h.keyring.Seal("another-key-0123456789")}
	if err := h.store.Jobs.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	h.enqueueOf(other.ID, other.Owner)
	done := h.waitJob(other.ID, "the other key's job to complete while the flood stalls", finished)
	if done.Status != connector.StatusCompleted {
		t.Fatalf("other key's job: %s %+v", done.Status, done.Error)
	}
	if n := f.most.Load(); n != 1 {
		t.Errorf("the flooding key held %d workers at once; its share is 1", n)
	}
	for _, id := range flood {
		if j, _ := h.store.Jobs.Get(context.Background(), id); j.Status.Finished() {
			t.Errorf("flooding job %s finished while its fetches were held", id)
		}
	}

	stop() // a restart with the flood parked
	f.release()
	h.start()
	for _, id := range flood {
		if j := h.waitJob(id, "a parked job to run once its key's share frees", finished); j.Status != connector.StatusCompleted {
			t.Errorf("flooding job %s: %s %+v", id, j.Status, j.Error)
		}
	}
	if n := h.comp.Calls(); n != 9 {
		t.Errorf("%d compressions for 9 jobs; want each once", n)
	}
	if n := f.most.Load(); n != 1 {
		t.Errorf("the flooding key held %d workers at once; its share is 1", n)
	}
}

// TestASharePlaceIsHeldOncePerJob: the admission is decided in Redis per
// job id: a job admitted again (a re-run after its worker died) keeps its
// one place, a second job waits, and a released place admits it.
func TestASharePlaceIsHeldOncePerJob(t *testing.T) {
	h := newHarness(t)
	f := &fairShare{rdb: h.redis.Client, prefix: "imgflow:share:{" + h.redis.Queue() + "}:", share: 1, lease: shareLease, parkBase: parkBase}
	keys := f.keys("owner")
	ctx := context.Background()
	admit := func(id string) (admitted, waiting int64) {
		t.Helper()
		r, err := admitScript.Run(ctx, h.redis.Client, keys, id, 1, shareLease.Milliseconds()).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		return r[0], r[1]
	}
	if a, _ := admit("job-1"); a != 1 {
		t.Fatal("the first job of a key was not admitted")
	}
	if a, _ := admit("job-1"); a != 1 {
		t.Error("a re-run of an admitted job was refused: its place was counted twice")
	}
	if a, w := admit("job-2"); a != 0 || w != 1 {
		t.Errorf("a second job over a share of 1: admitted %d, waiting %d; want 0 and 1", a, w)
	}
	h.redis.Client.ZRem(ctx, keys[0], "job-1")
	if a, w := admit("job-2"); a != 1 || w != 0 {
		t.Errorf("after the place was released: admitted %d, waiting %d; want 1 and 0", a, w)
	}
	if d := f.parkDelay(1); d < f.parkBase || d > f.parkBase*6/5 {
		t.Errorf("parkDelay(1) = %v", d)
	}
}

// TestAKeysSlowDeliveriesLeaveTheOthersTheirCallbacks: with 2 delivery
// workers and a delivery share of 1, a key's callbacks to a receiver that
// does not answer hold one delivery worker, never both; another key's
// callback is delivered meanwhile, and the held ones after.
func TestAKeysSlowDeliveriesLeaveTheOthersTheirCallbacks(t *testing.T) {
	h := newHarness(t)
	h.cfg.DeliveryConcurrency, h.cfg.DeliveryKeyShare = 2, 1
	h.tweak = func(w *Worker) { w.deliveryShare.parkBase = 20 * time.Millisecond }
	open := make(chan struct{})
	var once sync.Once
	release := func() { once.Do(func() { close(open) }) }
	var inFlight, most, slowDone atomic.Int64
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		select {
		case <-open:
			slowDone.Add(1)
		case <-r.Context().Done(): // the sender gave up (its time-out): no longer held
		}
	}))
	t.Cleanup(slow.Close)
	t.Cleanup(release)
	fast := newReceiver(t)
	h.start()

	for range 4 {
		h.submitURLJob(slow.URL + "/cb")
	}
	waitFor(t, "the slow key's first callback", func() bool { return inFlight.Load() == 1 })
	url := "https://images.test/other.png"
	h.fetcher.set(url, &connector.Image{Data: bytes.NewReader(images.Read(t, "photo.png")), MIMEType: "image/png", Filename: "other.png"})
	other := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued,
		Input: connector.JobInput{Kind: connector.InputURL, URL: url}, CallbackURL: fast.URL,
		Owner: h.keyring.KeyHash("another-key-0123456789"), SealedKey: h.keyring.Seal("another-key-0123456789")}
	if err := h.store.Jobs.Create(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	h.enqueue(other.ID)
	waitFor(t, "the other key's callback while the slow key's hang", func() bool { return fast.count() == 1 })
	if n := most.Load(); n != 1 {
		t.Errorf("the slow key held %d delivery workers at once; its share is 1", n)
	}
	release()
	waitFor(t, "every held callback delivered once released", func() bool { return slowDone.Load() >= 4 })
	if n := most.Load(); n != 1 {
		t.Errorf("the slow key held %d delivery workers at once; its share is 1", n)
	}
}

package app_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/app"
	"github.com/imgflow/imgflow/internal/redistest"
)

// queue records what was queued, and fails while down.
type queue struct {
	mu     sync.Mutex
	queued []string
	down   bool
}

func (q *queue) EnqueueCompress(_ context.Context, id, _ string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.down {
		return &connector.Error{Code: connector.EUNAVAILABLE, Message: "queue down"}
	}
	q.queued = append(q.queued, id)
	return nil
}

func (q *queue) EnqueueDelivery(context.Context, connector.Delivery) error { return nil }

func (q *queue) ids() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.queued)
}

// failingStage is the store with item number failAt's staging failing
// (Redis lost mid-request), or calling onStage before each item.
type failingStage struct {
	*redisstore.Jobs
	mu      sync.Mutex
	staged  int
	failAt  int
	onStage func(n int)
}

func (f *failingStage) Stage(ctx context.Context, job *connector.Job, input connector.Bytes, ttl time.Duration) error {
	f.mu.Lock()
	f.staged++
	n := f.staged
	f.mu.Unlock()
	if f.onStage != nil {
		f.onStage(n)
	}
	if n == f.failAt {
		return &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage unavailable"}
	}
	return f.Jobs.Stage(ctx, job, input, ttl)
}

type fixture struct {
	t     *testing.T
	r     *redistest.Redis
	store *redisstore.Store
	queue *queue
	kr    *keyring.Keyring
}

func newFixture(t *testing.T) *fixture {
	r := redistest.New(t)
	kr, err := keyring.New("app-test-secret-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, r: r, store: redisstore.New(r.Client, redisstore.Options{Prefix: r.Prefix}), queue: &queue{}, kr: kr}
}

// service is the creation service on the fixture's store; mod may swap
// in a store that fails a step.
func (f *fixture) service(mod func(*app.Config)) *app.Maker {
	cfg := app.Config{Jobs: f.store.Jobs, Batches: f.store.Batches, Idempotency: f.store.Idempotency,
		Queue: f.queue, Keyring: f.kr, IdempotencyWait: 3 * time.Second}
	if mod != nil {
		mod(&cfg)
	}
	s := app.New(cfg)
	f.t.Cleanup(s.Close)
	return s
}

func urlItems(n int) []app.Input {
	items := make([]app.Input, n)
	for i := range items {
		items[i] = app.Input{Kind: connector.InputURL, URL: "https://images.example/" + strconv.Itoa(i) + ".png"}
	}
	return items
}

// nothingLeft fails unless no record of the batch or its items is left,
// hidden or visible, and no place of the key is held.
func (f *fixture) nothingLeft(owner string) {
	f.t.Helper()
	ctx := context.Background()
	keys, err := f.r.Client.Keys(ctx, f.r.Prefix+"*").Result()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, k := range keys {
		for _, kind := range []string{"job:", "jobmaking:", "batch:", "batchn:", "blob:", "inflight:"} {
			if len(k) > len(f.r.Prefix)+len(kind) && k[len(f.r.Prefix):len(f.r.Prefix)+len(kind)] == kind {
				f.t.Errorf("left behind: %s", k)
			}
		}
	}
	page, err := f.store.Batches.List(ctx, owner, connector.BatchFilter{})
	if err != nil || len(page.Batches) != 0 {
		f.t.Errorf("batches listed: %v %v", page, err)
	}
}

// leasesLapsed ends every making request's lease on its batch, as when
// those requests died (killed requests never let theirs go).
func (f *fixture) leasesLapsed() {
	f.t.Helper()
	ctx := context.Background()
	keys, err := f.r.Client.Keys(ctx, f.r.Prefix+"batchlease:*").Result()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, k := range keys {
		f.r.Client.Del(ctx, k)
	}
}

// A batch whose making fails on one item (Redis lost mid-request) is
// removed whole: no batch, no item record (hidden or not), no input, no
// place under the key's cap, and nothing queued.
func TestBatchWhoseItemFailsLeavesNothing(t *testing.T) {
	f := newFixture(t)
	store := &failingStage{Jobs: f.store.Jobs, failAt: 150}
	s := f.service(func(c *app.Config) { c.Jobs, c.MaxJobsPerKey = store, 1000 })
	_, _, err := s.CreateBatch(context.Background(), &app.BatchRequest{Owner: "o1", Key: "k", Items: urlItems(200)})
	if connector.ErrorCodeOf(err) != connector.EUNAVAILABLE {
		t.Fatalf("err %v, want unavailable", err)
	}
	if q := f.queue.ids(); len(q) != 0 {
		t.Errorf("%d items queued, want none", len(q))
	}
	f.nothingLeft("o1")
}

// A client that goes away while its batch is stored (Ctrl-C) leaves
// nothing: no item was queued, so none runs or is charged.
func TestBatchWhoseClientGoesAwayLeavesNothing(t *testing.T) {
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	store := &failingStage{Jobs: f.store.Jobs, onStage: func(n int) {
		if n == 100 {
			cancel()
		}
	}}
	s := f.service(func(c *app.Config) { c.Jobs = store })
	_, _, err := s.CreateBatch(ctx, &app.BatchRequest{Owner: "o1", Key: "k", Items: urlItems(200)})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want the request's cancellation", err)
	}
	if q := f.queue.ids(); len(q) != 0 {
		t.Errorf("%d items queued, want none", len(q))
	}
	f.nothingLeft("o1")
}

// A batch made while its queue is down is made all the same (decided
// made: answered 2xx): every item exists, listed, and noted for the
// worker's sweeper, which queues them.
func TestBatchMadeWhileTheQueueIsDownIsWholeAndNoted(t *testing.T) {
	f := newFixture(t)
	f.queue.down = true
	s := f.service(nil)
	ctx := context.Background()
	b, _, err := s.CreateBatch(ctx, &app.BatchRequest{Owner: "o1", Key: "k", Items: urlItems(30)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Batches.Get(ctx, b.ID)
	if err != nil || got.Counts.Total != 30 {
		t.Fatalf("batch %+v %v, want published with 30 items", got, err)
	}
	jobs, err := f.store.Batches.GetJobs(ctx, b.JobIDs)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := range jobs {
		if j == nil || j.BatchID != b.ID || *j.BatchIndex != i {
			t.Fatalf("item %d: %+v, want made", i, j)
		}
	}
	noted, err := f.store.Jobs.Unqueued(ctx, time.Now().Add(time.Minute), 100)
	if err != nil || len(noted) != 30 {
		t.Fatalf("%d items noted for the sweeper (%v), want 30", len(noted), err)
	}
}

// killedAt makes the service's stores those of a request killed after its
// items were stored: before deciding, or (stopAfterDecide) decided made
// but not finished.
func (f *fixture) killedAt(stopAfterDecide bool) func(*app.Config) {
	return func(c *app.Config) {
		c.Jobs = &commitFails{Jobs: f.store.Jobs}
		c.Batches = &decideOnly{Batches: f.store.Batches, stopAfterDecide: stopAfterDecide}
	}
}

// decideOnly is the batch store of a request killed before its batch was
// decided, or (stopAfterDecide) right after.
type decideOnly struct {
	*redisstore.Batches
	stopAfterDecide bool
}

func (b *decideOnly) Decide(ctx context.Context, id string, to connector.MakingState) (connector.MakingState, error) {
	if !b.stopAfterDecide {
		return "", errors.New("killed before deciding")
	}
	return b.Batches.Decide(ctx, id, to)
}

// commitFails is the job store of a request killed before its items were
// made visible.
type commitFails struct {
	*redisstore.Jobs
}

func (commitFails) CommitStaged(context.Context, string, []string) error {
	return errors.New("killed after deciding")
}

// A batch left creating by a dead request is removed by the sweep; one
// left made is finished: published, every item visible and queued.
func TestSweepRemovesABatchLeftCreatingAndFinishesOneLeftMade(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()

	killed := f.service(f.killedAt(false))
	if _, _, err := killed.CreateBatch(ctx, &app.BatchRequest{Owner: "o1", Key: "k", Items: urlItems(20)}); err == nil {
		t.Fatal("the killed request answered")
	}
	sweeper := f.service(nil)
	f.leasesLapsed()
	if n, more, err := sweeper.SweepBatches(ctx, time.Now().Add(time.Second)); err != nil || n != 1 || more {
		t.Fatalf("swept %d (%v), want 1", n, err)
	}
	f.nothingLeft("o1")

	made := f.service(f.killedAt(true))
	b, _, err := made.CreateBatch(ctx, &app.BatchRequest{Owner: "o2", Key: "k", Items: urlItems(20)})
	if err != nil {
		t.Fatalf("a batch decided made is the answer: %v", err)
	}
	if q := f.queue.ids(); len(q) != 0 {
		t.Fatalf("%d items queued before the batch was finished", len(q))
	}
	if n, more, err := sweeper.SweepBatches(ctx, time.Now().Add(time.Second)); err != nil || n != 1 || more {
		t.Fatalf("swept %d (%v), want 1", n, err)
	}
	got, err := f.store.Batches.Get(ctx, b.ID)
	if err != nil || got.Counts.Total != 20 {
		t.Fatalf("made batch after the sweep: %+v %v, want published", got, err)
	}
	if q := f.queue.ids(); len(q) != 20 {
		t.Errorf("%d items queued, want 20", len(q))
	}
	if n, more, err := sweeper.SweepBatches(ctx, time.Now().Add(time.Second)); err != nil || n != 0 || more {
		t.Errorf("second sweep looked at %d (%v), want none left", n, err)
	}
}

// A batch retry whose Idempotency-Key is in flight waits, as a job's
// does, and gets the batch the first request made: not 409 at once.
func TestBatchRetryWithAKeyInFlightWaitsForIt(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.service(nil)
	req := &app.BatchRequest{Owner: "o1", Key: "k", IdempotencyKey: "abc", Fingerprint: "fp", Items: urlItems(3)}
	// The first request holds the key (in flight).
	rec, reserved, err := f.store.Idempotency.Reserve(ctx, "o1", "batch:abc", "fp", "first")
	if err != nil || !reserved {
		t.Fatalf("reserve: %v %v", rec, err)
	}
	type answer struct {
		b      *connector.Batch
		replay bool
		err    error
	}
	done := make(chan answer, 1)
	go func() {
		b, replay, err := s.CreateBatch(ctx, req)
		done <- answer{b, replay, err}
	}()
	select {
	case a := <-done:
		t.Fatalf("answered while the key was in flight: %+v", a)
	case <-time.After(300 * time.Millisecond):
	}
	// The first request ends having made a batch.
	first, _, err := f.service(nil).CreateBatch(ctx, &app.BatchRequest{Owner: "o1", Key: "k", Items: urlItems(3)})
	if err != nil {
		t.Fatal(err)
	}
	if held, err := f.store.Idempotency.Complete(ctx, "o1", "batch:abc", "first", first.ID); err != nil || !held {
		t.Fatal(held, err)
	}
	a := <-done
	if a.err != nil || !a.replay || a.b.ID != first.ID {
		t.Fatalf("retry: %+v, want the first request's batch %s replayed", a, first.ID)
	}
}

// A retry that takes over the key of a request killed after its batch was
// decided made finishes that batch and answers it; one killed before the
// decision leaves a batch that the retry removes and makes anew.
func TestBatchTakeoverFinishesAMadeBatchOrRemakesACreatingOne(t *testing.T) {
	for _, madeBefore := range []bool{true, false} {
		t.Run("made="+strconv.FormatBool(madeBefore), func(t *testing.T) {
			f := newFixture(t)
			ctx := context.Background()
			req := func() *app.BatchRequest {
				return &app.BatchRequest{Owner: "o1", Key: "k", IdempotencyKey: "abc", Fingerprint: "fp", Items: urlItems(5)}
			}
			killed := f.service(f.killedAt(madeBefore))
			first, _, firstErr := killed.CreateBatch(ctx, req())
			// The killed request never completed nor released its key:
			// put the reservation back as it would have stayed.
			planned := ""
			if first != nil {
				planned = first.ID
			}
			if firstErr == nil {
				f.r.Client.Del(ctx, f.r.Prefix+"idem:{o1}:batch:abc")
			}
			if planned == "" {
				ids, _ := f.store.Batches.MakingBefore(ctx, time.Now().Add(time.Second), 10)
				if len(ids) != 1 {
					t.Fatalf("making batches %v, want the killed one", ids)
				}
				planned = ids[0]
			}
			if _, reserved, err := f.store.Idempotency.Reserve(ctx, "o1", "batch:abc", "fp", planned); err != nil || !reserved {
				t.Fatalf("re-reserve: %v", err)
			}
			f.r.Client.Del(ctx, f.r.Prefix+"idemlease:{o1}:batch:abc") // its lease lapsed
			f.leasesLapsed()                                           // and its batch's

			b, _, err := f.service(nil).CreateBatch(ctx, req())
			if err != nil {
				t.Fatal(err)
			}
			if madeBefore != (b.ID == planned) {
				t.Errorf("answer %s, planned %s: want the made batch itself, or a new one for a creating one", b.ID, planned)
			}
			if q := f.queue.ids(); len(q) != 5 {
				t.Errorf("%d items queued, want 5 (one batch)", len(q))
			}
			page, _ := f.store.Batches.List(ctx, "o1", connector.BatchFilter{})
			if len(page.Batches) != 1 {
				t.Errorf("%d batches listed, want 1", len(page.Batches))
			}
		})
	}
}

// A batch's items count against the key's cap of unfinished jobs: a batch
// is admitted while the key is under it, and its items then hold places,
// so a key with a batch running makes nothing more until it drains.
func TestBatchItemsCountAgainstTheKeysCap(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.service(func(c *app.Config) { c.MaxJobsPerKey = 5 })
	if _, _, err := s.CreateBatch(ctx, &app.BatchRequest{Owner: "o1", Key: "k", Items: urlItems(8)}); err != nil {
		t.Fatalf("a batch of a key under its cap: %v", err)
	}
	_, _, err := s.CreateJob(ctx, &app.JobRequest{Owner: "o1", Key: "k", Input: urlItems(1)[0]})
	if connector.ErrorCodeOf(err) != connector.ETOOMANY {
		t.Errorf("a job behind 8 batch items with a cap of 5: %v, want too many jobs", err)
	}
	_, _, err = s.CreateBatch(ctx, &app.BatchRequest{Owner: "o1", Key: "k", Items: urlItems(1)})
	if connector.ErrorCodeOf(err) != connector.ETOOMANY {
		t.Errorf("a second batch: %v, want too many jobs", err)
	}
	if _, _, err := s.CreateJob(ctx, &app.JobRequest{Owner: "o2", Key: "k2", Input: urlItems(1)[0]}); err != nil {
		t.Errorf("another key: %v", err)
	}
}

// An item's dedupe wins over the batch's, which is the default of the
// others; inline items carry their content hash.
func TestBatchItemsCarryDedupeAndTheirHash(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.service(nil)
	off, on := false, true
	items := urlItems(3)
	items[0].Dedupe = &on
	items[2] = app.Input{Kind: connector.InputBase64, Image: bytesOf("png bytes"), SHA256: "abc123"}
	b, _, err := s.CreateBatch(ctx, &app.BatchRequest{Owner: "o1", Key: "k", Items: items, Dedupe: &off})
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := f.store.Batches.GetJobs(ctx, b.JobIDs)
	if err != nil {
		t.Fatal(err)
	}
	if d := jobs[0].Dedupe; d == nil || !*d {
		t.Errorf("item 0 dedupe %v, want its own true", d)
	}
	if d := jobs[1].Dedupe; d == nil || *d {
		t.Errorf("item 1 dedupe %v, want the batch's false", d)
	}
	if jobs[2].Input.SHA256 != "abc123" || jobs[2].Input.Size != 9 {
		t.Errorf("inline item input %+v, want its hash and size", jobs[2].Input)
	}
}

type bytesOf string

func (b bytesOf) ReadAt(p []byte, off int64) (int, error) {
	n := copy(p, b[off:])
	if n < len(p) {
		return n, errors.New("EOF")
	}
	return n, nil
}
func (b bytesOf) Size() int64 { return int64(len(b)) }

// A request that takes a key over and finds the dead request's batch
// removed makes its own, and names it in the key's record first: should
// it die too, the next retry finds that batch, not a second one.
func TestBatchTakeoverNamesItsOwnBatchInTheKey(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := &app.BatchRequest{Owner: "o1", Key: "k", IdempotencyKey: "abc", Fingerprint: "fp", Items: urlItems(3)}
	if _, reserved, err := f.store.Idempotency.Reserve(ctx, "o1", "batch:abc", "fp", "dead-request-batch"); err != nil || !reserved {
		t.Fatalf("reserve: %v", err)
	}
	f.r.Client.Del(ctx, f.r.Prefix+"idemlease:{o1}:batch:abc") // the dead request's lease lapsed
	seen := make(chan string, 1)
	store := &failingStage{Jobs: f.store.Jobs, onStage: func(n int) {
		if n == 1 {
			rec, _, err := f.store.Idempotency.Reserve(ctx, "o1", "batch:abc", "fp", "probe")
			if err == nil {
				seen <- rec.PlannedID
			}
		}
	}}
	b, _, err := f.service(func(c *app.Config) { c.Jobs = store }).CreateBatch(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if planned := <-seen; planned != b.ID {
		t.Errorf("while the taker made batch %s its key named %s", b.ID, planned)
	}
}

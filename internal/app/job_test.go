package app_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/app"
)

// gatedJobs holds the first making of a job until release is closed,
// telling entered when it is there: a request stalled mid-making.
type gatedJobs struct {
	*redisstore.Jobs
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func newGatedJobs(j *redisstore.Jobs) *gatedJobs {
	return &gatedJobs{Jobs: j, entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gatedJobs) CreateWithInput(ctx context.Context, job *connector.Job, input connector.Bytes, ttl time.Duration, limit int) error {
	first := false
	g.once.Do(func() { first = true })
	if first {
		close(g.entered)
		<-g.release
	}
	return g.Jobs.CreateWithInput(ctx, job, input, ttl, limit)
}

// jobAnswer is what CreateJob answered.
type jobAnswer struct {
	job    *connector.Job
	replay bool
	err    error
}

func keyedJob(key string) *app.JobRequest {
	return &app.JobRequest{Owner: "o1", Key: "k", IdempotencyKey: key, Fingerprint: "fp", Input: urlItems(1)[0]}
}

// lapse drops owner's lease on key, as when its request's renewals
// failed for a whole lease (a Redis restart).
func (f *fixture) lapse(owner, key string) {
	f.t.Helper()
	if err := f.r.Client.Del(context.Background(), f.r.Prefix+"idemlease:{"+owner+"}:"+key).Err(); err != nil {
		f.t.Fatal(err)
	}
}

// A request that only stalled (its lease lapsed mid-making) and the retry
// that took its key over: the retry's job, answered, stays and is the
// key's; the stalled request neither makes the same id nor takes it back,
// and the job it made after all is taken back (one job for one key): it
// answers 409, sending its client to the retry's job.
func TestJobTakeoverFromAStalledRequestKeepsTheTakersJob(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	jobs := newGatedJobs(f.store.Jobs)
	s := f.service(func(c *app.Config) { c.Jobs = jobs })
	stalled := make(chan jobAnswer, 1)
	go func() {
		j, replay, err := s.CreateJob(ctx, keyedJob("key"))
		stalled <- jobAnswer{j, replay, err}
	}()
	<-jobs.entered
	f.lapse("o1", "key")
	taker, replay, err := s.CreateJob(ctx, keyedJob("key"))
	if err != nil || replay {
		t.Fatalf("takeover = %v, %v; want a job made", replay, err)
	}
	close(jobs.release)
	first := <-stalled
	if got, err := f.store.Jobs.Get(ctx, taker.ID); err != nil || got.Status != connector.StatusQueued {
		t.Fatalf("the taker's answered job = %+v, %v; want it kept, queued", got, err)
	}
	if first.err == nil && first.job.ID == taker.ID && !first.replay {
		t.Errorf("the stalled request made the taker's job id %s as its own", taker.ID)
	}
	if connector.ErrorCodeOf(first.err) != connector.ECONFLICT {
		t.Errorf("the stalled request's answer = %+v, %v; want 409 conflict (its job taken back)", first.job, first.err)
	}
	if page, err := f.store.Jobs.List(ctx, "o1", connector.JobFilter{Limit: 10}); err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != taker.ID {
		t.Errorf("the key's owner's jobs = %+v, %v; want only the taker's %s", page, err, taker.ID)
	}
	again, replay, err := s.CreateJob(ctx, keyedJob("key"))
	if err != nil || !replay || again.ID != taker.ID {
		t.Fatalf("retry after both = %+v, %v, %v; want the taker's job %s replayed", again, replay, err, taker.ID)
	}
}

// madeMeanwhile makes each job under its id once more first, as another
// request with the same planned id would have.
type madeMeanwhile struct{ *redisstore.Jobs }

func (m madeMeanwhile) CreateWithInput(ctx context.Context, job *connector.Job, input connector.Bytes, ttl time.Duration, limit int) error {
	other := *job
	if err := m.Jobs.CreateWithInput(ctx, &other, input, ttl, limit); err != nil {
		return err
	}
	return m.Jobs.CreateWithInput(ctx, job, input, ttl, limit)
}

// A making whose id is another request's job already answers that job
// (a replay) and never takes it back.
func TestJobWhoseIDExistsIsAdoptedNotTakenBack(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	s := f.service(func(c *app.Config) { c.Jobs = madeMeanwhile{f.store.Jobs} })
	job, replay, err := s.CreateJob(ctx, keyedJob("key"))
	if err != nil || !replay {
		t.Fatalf("CreateJob = %v, %v; want the existing job adopted", replay, err)
	}
	if got, err := f.store.Jobs.Get(ctx, job.ID); err != nil || got.Status != connector.StatusQueued {
		t.Fatalf("the existing job = %+v, %v; want it kept, queued", got, err)
	}
	if q := f.queue.ids(); len(q) == 0 || q[len(q)-1] != job.ID {
		t.Errorf("queued %v, want %s queued", q, job.ID)
	}
}

// undoDown is the store with Undo failing (Redis unreachable).
type undoDown struct{ *redisstore.Jobs }

func (undoDown) Undo(context.Context, string, string) (bool, error) {
	return false, &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage unavailable"}
}

// lyingQueue queues each task but, while lie is set, reports a failure.
type lyingQueue struct {
	*queue
	lie atomic.Bool
}

func (q *lyingQueue) EnqueueCompress(ctx context.Context, id, owner string) error {
	if err := q.queue.EnqueueCompress(ctx, id, owner); err != nil || !q.lie.Load() {
		return err
	}
	return &connector.Error{Code: connector.EUNAVAILABLE, Message: "queue unavailable"}
}

// logs is a log sink for a test's service.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// A job whose queueing failed (but queued it) and whose taking back failed
// may run: its request answers 503 and keeps the key, so the retry takes
// it over after its lease and adopts that job, not a second one; no
// background undo is left to take back the job the retry answered.
func TestJobWhoseUndoIsUnknownKeepsTheKeyForTheRetry(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	q := &lyingQueue{queue: f.queue}
	q.lie.Store(true)
	var log logs
	s := f.service(func(c *app.Config) {
		c.Jobs, c.Queue, c.Logger = undoDown{f.store.Jobs}, q, slog.New(slog.NewTextHandler(&log, nil))
	})
	_, _, err := s.CreateJob(ctx, keyedJob("key"))
	if connector.ErrorCodeOf(err) != connector.EUNAVAILABLE {
		t.Fatalf("CreateJob = %v, want unavailable (503)", err)
	}
	queued := f.queue.ids()
	if len(queued) != 1 {
		t.Fatalf("queued %v, want the one job", queued)
	}
	if n := f.r.Client.Exists(ctx, f.r.Prefix+"idem:{o1}:key").Val(); n != 1 {
		t.Fatal("the key was released though its job may run")
	}
	q.lie.Store(false)
	f.lapse("o1", "key")
	job, replay, err := s.CreateJob(ctx, keyedJob("key"))
	if err != nil || !replay || job.ID != queued[0] {
		t.Fatalf("retry = %+v, %v, %v; want the first request's job %s adopted", job, replay, err, queued[0])
	}
	s.Close()
	if strings.Contains(log.String(), "given up at shutdown") {
		t.Errorf("a background retry was left running:\n%s", log.String())
	}
}

// Without an idempotency store (the worker's service) a request's key is
// ignored: the job is made, nothing panics.
func TestJobWithAKeyAndNoIdempotencyStoreIsMade(t *testing.T) {
	f := newFixture(t)
	s := f.service(func(c *app.Config) { c.Idempotency = nil })
	job, replay, err := s.CreateJob(context.Background(), keyedJob("key"))
	if err != nil || replay || job == nil {
		t.Fatalf("CreateJob = %+v, %v, %v; want a job made", job, replay, err)
	}
}

// shortLease is the idempotency store with a lease of lease, telling
// renewed of each renewal.
type shortLease struct {
	*redisstore.Idempotency
	lease   time.Duration
	renewed chan struct{}
}

func (s shortLease) Lease() time.Duration { return s.lease }

func (s shortLease) Renew(ctx context.Context, owner, key, token string) (bool, error) {
	select {
	case s.renewed <- struct{}{}:
	default:
	}
	return s.Idempotency.Renew(ctx, owner, key, token)
}

// The service's timers follow the store's lease: a request renews well
// inside it.
func TestRenewalsFollowTheStoresLease(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	jobs := newGatedJobs(f.store.Jobs)
	idem := shortLease{Idempotency: f.store.Idempotency, lease: 100 * time.Millisecond, renewed: make(chan struct{})}
	s := f.service(func(c *app.Config) { c.Jobs, c.Idempotency = jobs, idem })
	done := make(chan error, 1)
	go func() { _, _, err := s.CreateJob(ctx, keyedJob("key")); done <- err }()
	<-jobs.entered
	timeout := time.After(time.Second) // 50 lease/5 periods
	for range 2 {
		select {
		case <-idem.renewed:
		case <-timeout:
			t.Fatal("no renewal within ten leases")
		}
	}
	close(jobs.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A request waits for a key in flight past the store's lease, not a fixed
// time: a longer lease must not turn takeovers into 409s, nor a shorter
// one make requests wait the old 12 s.
func TestWaitForAKeyInFlightFollowsTheStoresLease(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	idem := shortLease{Idempotency: f.store.Idempotency, lease: 100 * time.Millisecond, renewed: make(chan struct{})}
	s := f.service(func(c *app.Config) { c.Idempotency, c.IdempotencyWait = idem, 0 })
	// Another request holds the key (the store's own 10 s lease keeps it).
	if _, ok, err := f.store.Idempotency.Reserve(ctx, "o1", "key", "fp", "other"); err != nil || !ok {
		t.Fatal(ok, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 6*time.Second)
	defer cancel()
	_, _, err := s.CreateJob(ctx, keyedJob("key"))
	if connector.ErrorCodeOf(err) != connector.ECONFLICT {
		t.Fatalf("CreateJob = %v; want 409 after the lease and 2 s", err)
	}
}

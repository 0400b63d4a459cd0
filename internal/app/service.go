// Package app is imgflow's creation service: the one place where jobs and
// batches are made, whoever asks (POST /v1/jobs and POST /v1/batches, which
// the CLI and the MCP tools use too, and the dry run's admission). HTTP
// handlers only bind a request, call Maker and render its answer.
//
// What it does, in the order a request meets it (job.go and batch.go
// read as those stories):
//
//   - admission: URLs outside private networks, the key's preflight (valid,
//     credits left), the key's cap of unfinished jobs (batch items count);
//   - the Idempotency-Key lease, the same for jobs and batches (making.go,
//     idempotency.go): a key in flight is waited for (its request finishes,
//     or dies and its lease lapses and this request takes it over); 409
//     only when neither comes;
//   - storing and queueing, and taking back what a failed request made.
//
// Every decision between processes is a compare-and-set in the store, never
// a timer held by one of them: a single job is one record, queued, and taken
// back (JobStore.Undo) only while no run started it; a batch is decided
// made or removed once (connector.MakingState), its items stored hidden
// until then and queued only after, so a client gone mid-request leaves
// nothing charged or the whole batch for its retry. What is left behind by
// a dead request is finished or removed by the retry that takes its key
// over, or by the worker's sweeper (SweepBatches).
//
// Tests: go test ./internal/app ./server -run 'Batch|Idempot|Job' (miniredis;
// REDIS_URL for a real Redis).
package app

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/keyring"
)

// The service's stores, shaped by its use: redisstore's Jobs, Batches and
// Idempotency aggregates, whose making writes are one round trip each.
// Tests wrap them to fail a step.

// IdempotencyStore keeps Idempotency-Keys per owner for 24 hours. A
// request holds a key it reserved through a lease of a few seconds that it
// renews while it lives, so a key whose request died (a server killed) is
// free again within seconds.
type IdempotencyStore interface {
	// Reserve claims key for a request with this fingerprint
	// that would make job jobID (a fresh id, also the lease's token).
	// reserved is true when the caller holds it now: rec.PlannedID is the
	// job to make, jobID unless the caller took over the key from a request
	// that died, whose job it must then find, or else replan to its own
	// (Replan). Otherwise rec is the
	// earlier request's record (in flight while JobID is "").
	Reserve(ctx context.Context, owner, key, fingerprint, jobID string) (rec *connector.IdempotencyRecord, reserved bool, err error)
	// Renew extends the lease of the request that reserved key
	// with jobID; held is false when the lease was lost (another request
	// took over).
	Renew(ctx context.Context, owner, key, jobID string) (held bool, err error)
	// Complete records the job the request holding key (its
	// lease token) created; held false, and nothing written, when another
	// request holds the key now or completed it.
	Complete(ctx context.Context, owner, key, token, jobID string) (held bool, err error)
	// Release forgets a reservation whose request failed, so a
	// retry can go through, while the request's lease (token) holds it.
	Release(ctx context.Context, owner, key, token string) error
	// Replan names planned as what the request holding key
	// (its lease token) makes now; held false when it lost the lease.
	Replan(ctx context.Context, owner, key, token, planned string) (held bool, err error)
	// Lease is how long a reservation stays held unrenewed: the service
	// renews well inside it and waits for a key in flight past it.
	Lease() time.Duration
}

// JobStore makes and takes back jobs: single ones, and batch items stored
// hidden until their batch is decided made.
type JobStore interface {
	Get(ctx context.Context, id string) (*connector.Job, error)
	// CreateWithInput takes one of owner's limit places (0: no cap),
	// stores the input (nil: none) and the record, listed, in one round trip.
	CreateWithInput(ctx context.Context, job *connector.Job, input connector.Bytes, inputTTL time.Duration, limit int) error
	// QueuesAtMaking is true when CreateWithInput also queues the job it
	// makes, in the same step (fair dispatch on the store's one Redis):
	// the service does not queue it again.
	QueuesAtMaking() bool
	// Undo deletes a job no run started; removed false when one did.
	Undo(ctx context.Context, owner, id string) (removed bool, err error)
	// EnsureListed lists a job a dead request may have left unlisted.
	EnsureListed(ctx context.Context, owner, id string) error
	// AdmitAll takes places for a batch's items under owner's limit.
	AdmitAll(ctx context.Context, owner string, ids []string, limit int) error
	// Stage stores a batch item hidden; CommitStaged makes staged
	// items visible, RemoveStaged deletes them.
	Stage(ctx context.Context, job *connector.Job, input connector.Bytes, inputTTL time.Duration) error
	CommitStaged(ctx context.Context, owner string, ids []string) error
	RemoveStaged(ctx context.Context, owner string, ids []string) error
}

// BatchStore keeps batches and the one decision of their making
// (connector.MakingState).
type BatchStore interface {
	Begin(ctx context.Context, b *connector.Batch) error
	Decide(ctx context.Context, id string, to connector.MakingState) (connector.MakingState, error)
	// MakingLease is how long that lease lasts unrenewed.
	MakingLease() time.Duration
	RenewMakingLease(ctx context.Context, id string) (bool, error)
	RemoveLapsed(ctx context.Context, id string) (connector.MakingState, error)
	Making(ctx context.Context, id string) (*connector.Batch, connector.MakingState, error)
	EndMaking(ctx context.Context, id string, state connector.MakingState) error
	MakingBefore(ctx context.Context, before time.Time, limit int) ([]string, error)
	// Create publishes a batch whose items exist (its record, counts and
	// listing); again is a no-op.
	Create(ctx context.Context, b *connector.Batch) error
	Get(ctx context.Context, id string) (*connector.Batch, error)
}

// Config is what the service needs; Jobs, Batches and Queue are
// required, Idempotency to honour Idempotency-Keys: without it (the
// worker's sweeper, which makes nothing) a request's key is ignored.
type Config struct {
	Jobs        JobStore
	Batches     BatchStore
	Idempotency IdempotencyStore
	// Inputs is where inputs live when not in Jobs (S3); nil: Jobs keeps
	// them, in the round trip that makes the job.
	Inputs connector.BlobStore
	Queue  connector.Queue
	// Keyring seals the caller's key into each job (the worker calls the
	// compression API with it). Required to make jobs.
	Keyring *keyring.Keyring
	// CheckURL refuses image and callback URLs into private networks,
	// naming the field; nil accepts every URL.
	CheckURL func(ctx context.Context, field, rawURL string) error
	// Keys checks the caller's key (valid, credits left) before work is
	// made; nil skips it (the worker's sweeper, which makes nothing).
	Keys KeyChecker
	// MaxJobsPerKey caps a key's unfinished jobs; 0: no cap. A batch is
	// admitted while its key is under the cap, and its items count.
	MaxJobsPerKey int
	// InputTTL bounds the life of an input whose job never runs. Default 24h.
	InputTTL time.Duration
	// IdempotencyWait is how long a request whose Idempotency-Key is in
	// flight waits (for it to finish, or to die and lose its lease) before
	// 409. Default the store's lease and 2 s (12 s on redisstore's 10 s
	// lease): past the lease, so a dead request's key is taken over, not
	// refused.
	IdempotencyWait time.Duration
	Now             func() time.Time
	Logger          *slog.Logger
}

// Maker makes jobs, batches and sets, and settles what dead requests left
// (see the package comment).
type Maker struct {
	cfg Config
	log *slog.Logger
	// renewEvery is how often a request renews its key's lease: a fifth
	// of the store's lease, so four renewals in a row may fail (a Redis
	// hiccup) before the key is lost.
	renewEvery time.Duration
	// batchRenewEvery is how often a request renews its lease on the batch
	// it makes: a fifth of the store's MakingLease.
	batchRenewEvery time.Duration

	// Background retries (a Redis hiccup at the end of a request) live as
	// long as the service: Close ends them.
	bg     context.Context
	stopBg context.CancelFunc
	wg     sync.WaitGroup
}

// idempotencyWaitPastLease is how much longer than the store's lease a
// request waits for a key in flight: enough for a few polls after a dead
// request's lease lapsed.
const idempotencyWaitPastLease = 2 * time.Second

// renewalOf is how often a lease of this length is renewed: a fifth of it,
// so that four renewals can fail before it lapses.
func renewalOf(lease time.Duration, what string) time.Duration {
	if lease <= 0 {
		panic("app: the " + what + " must be positive")
	}
	return lease / 5
}

// New returns the service with defaults filled in.
func New(cfg Config) *Maker {
	if cfg.InputTTL <= 0 {
		cfg.InputTTL = connector.DefaultResultTTL
	}
	var renewEvery time.Duration
	if cfg.Idempotency != nil {
		lease := cfg.Idempotency.Lease()
		renewEvery = renewalOf(lease, "idempotency store's lease")
		if cfg.IdempotencyWait <= 0 {
			cfg.IdempotencyWait = lease + idempotencyWaitPastLease
		}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CheckURL == nil {
		cfg.CheckURL = func(context.Context, string, string) error { return nil }
	}
	if cfg.Keys == nil {
		cfg.Keys = admitAll{}
	}
	var batchRenewEvery time.Duration
	if cfg.Batches != nil {
		batchRenewEvery = renewalOf(cfg.Batches.MakingLease(), "batch store's making lease")
	}
	bg, stop := context.WithCancel(context.Background())
	return &Maker{cfg: cfg, log: cfg.Logger, renewEvery: renewEvery, batchRenewEvery: batchRenewEvery, bg: bg, stopBg: stop}
}

// Close ends the service's background retries and waits for them.
func (s *Maker) Close() {
	s.stopBg()
	s.wg.Wait()
}

// retryLater tries fn again in the background, with backoff, for up to
// within or until the service closes.
func (s *Maker) retryLater(within time.Duration, what string, fn func(ctx context.Context) error, attrs ...any) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		deadline := time.NewTimer(within)
		defer deadline.Stop()
		for wait := 250 * time.Millisecond; ; wait = min(2*wait, 2*time.Second) {
			t := time.NewTimer(wait)
			select {
			case <-s.bg.Done():
				t.Stop()
				s.log.Warn(what+": given up at shutdown", attrs...)
				return
			case <-deadline.C:
				t.Stop()
				s.log.Error(what+": given up", attrs...)
				return
			case <-t.C:
			}
			if fn(s.bg) == nil {
				return
			}
		}
	}()
}

// newID is a fresh job or batch id: UUIDv7, time-ordered, which listings
// and their cursors rely on.
func newID() (string, error) {
	id, err := uuid.NewV7()
	if err != nil {
		return "", err
	}
	return id.String(), nil
}

// Admit runs the checks new work must pass: each URL outside private
// networks (field names the input, as "image_url" or "callback_url"; an
// empty URL is skipped) and the key's preflight. The dry run calls it
// alone.
func (s *Maker) Admit(ctx context.Context, key string, urls ...FieldURL) error {
	for _, u := range urls {
		if u.URL == "" {
			continue
		}
		if err := s.cfg.CheckURL(ctx, u.Field, u.URL); err != nil {
			return err
		}
	}
	return s.cfg.Keys.Check(ctx, key)
}

// KeyChecker admits a key for new work: EUNAUTHORIZED for a key the
// compression API does not know, ENOCREDITS for a zero balance
// (keycheck.Checker).
type KeyChecker interface {
	Check(ctx context.Context, key string) error
}

// admitAll is the KeyChecker of a service that checks no key.
type admitAll struct{}

func (admitAll) Check(context.Context, string) error { return nil }

// FieldURL is a URL of a request and the field it came in.
type FieldURL struct{ Field, URL string }

// enqueue queues a made job's compression: the one place the service
// queues work.
func (s *Maker) enqueue(ctx context.Context, job *connector.Job) error {
	return s.cfg.Queue.EnqueueCompress(ctx, job.ID, job.Owner)
}

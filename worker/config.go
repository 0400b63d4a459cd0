package worker

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/connector/webhook"
)

// Config configures a Worker. Fields marked required make New fail when
// unset; the others have the defaults given.
type Config struct {
	// RedisConnOpt names the Redis that holds the queue (required), e.g.
	// asynq.RedisClientOpt{Addr: ...} or the result of asynq.ParseRedisURI.
	RedisConnOpt asynq.RedisConnOpt

	// Queue is the asynq queue to serve and to enqueue deliveries on; it must
	// be the one the server enqueues compress tasks on. Default "imgflow".
	Queue string

	// Concurrency is how many tasks run at once (IMGFLOW_CONCURRENCY).
	// Default 10. Compress tasks mostly wait on the network (fetch, upstream),
	// so this may well exceed the number of CPUs.
	Concurrency int

	// KeyShare (IMGFLOW_KEY_SHARE) on fair dispatch (the default) is a
	// key's limit of jobs running at once across every worker; when not set
	// above 0 there is none, as the keys' turns alone keep one key's flood
	// from holding the workers, and a lone key then runs on all of them.
	//
	// On asynq dispatch it is how many compress tasks of one API key run at
	// once in this worker process: a key's further tasks (its
	// jobs and batch items alike) are parked, asynq retries that do not
	// count, while other keys' tasks run (fairshare.go), so that one key's
	// flood cannot hold every worker. Decided in-process: the admission
	// costs a job no Redis command. Default: all but one of Concurrency (at
	// least 1), so one worker of every process is always free for other
	// keys and a lone key loses one worker at most. It is the most: with k
	// keys running or waiting, a key's share is
	// max(1, min(KeyShare, (Concurrency-1)/k)). Negative: no share.
	KeyShare int

	// Dispatch chooses how compress jobs reach the workers
	// (IMGFLOW_DISPATCH): DispatchFair (the default, also ""), imgflow's
	// dispatcher (dispatch.go), which hands out jobs by the keys' turns
	// across the deployment; there KeyShare, when set above 0, is a key's
	// limit of jobs running at once across every worker, and no job is
	// parked. Or DispatchAsynq, asynq's queue with KeyShare in each
	// process. The Queue that feeds the worker must match
	// (WithFairDispatch; Worker.Queue does).
	Dispatch string

	// DeliveryConcurrency is how many deliveries (callbacks, hook events)
	// run at once, in a pool apart from Concurrency on their own queue
	// (DeliveryQueue), so that slow receivers never hold a compress worker
	// (IMGFLOW_DELIVERY_CONCURRENCY). Default: Concurrency. Deliveries
	// mostly wait on receivers, so this may well exceed the CPUs.
	DeliveryConcurrency int

	// DeliveryKeyShare is how many deliveries of one API key's jobs and
	// batches run at once across the workers (IMGFLOW_DELIVERY_KEY_SHARE):
	// a key whose receivers are slow, or who has thousands of deliveries
	// queued, leaves the rest of the delivery pool to other keys'
	// callbacks. Default: half of DeliveryConcurrency, at least 1;
	// negative: no share. Events of no job or batch (tests, credits low)
	// are not counted.
	DeliveryKeyShare int

	// Fetchers is how many asynq servers share Concurrency, each taking
	// tasks with its own dequeue loop. asynq dequeues one task at a time
	// per server, a Redis round trip each, and under load that loop, not
	// the handlers, set how fast tasks start (BENCHMARK.md, fourth round).
	// Default: one per 16 slots of Concurrency, from 1 to 4 (the default
	// Concurrency of 10 has 1). Each adds asynq's heartbeat and an idle
	// dequeue per IdleWait to an idle worker's Redis load.
	Fetchers int

	// Jobs and Blobs are the stores of jobs and their bytes (required).
	Jobs  JobStore
	Blobs connector.BlobStore
	// Hooks keeps what deliveries need (required): hook subscriptions,
	// endpoint pauses, rates and failures, events that are not a job's,
	// every delivery's log, and secret versions (redisstore.Hooks).
	Hooks HookStore
	// Runs is the compress executor's store (required): a job's run, its
	// call record (written before every call, it is what keeps a re-run
	// from paying twice), and its end under the run guard.
	// redisstore.Store.Runs fits (Runs.WithBlobs(Blobs) when they are not
	// in Redis).
	Runs connector.JobRuns
	// RecordKeyPrefix and RecordKeySuffix, when the prefix is set, are what
	// a job's record key is around its id in the queue's Redis
	// (redisstore.Jobs.RecordKeyAround): fair dispatch hands out each job
	// with its record, and a Runs that is a connector.RecordOpener starts
	// the job from it, its input opened beside the start (load). Unset on
	// a cluster, where the records are not in the queue's hash slot.
	RecordKeyPrefix, RecordKeySuffix string
	// Batches counts the items of batches as they start and end, and
	// holds the batch a batch.finished delivery sends (batch.go); the
	// sweeper finishes batches left half made and counts missed ends with
	// it (redisstore.Batches). Nil: the worker serves no batches (their
	// items run, uncounted).
	Batches BatchStore
	// Sweeper settles batches whose making a request left unended: the
	// creation service (app.Maker), built once by the caller. Nil
	// with Batches set: no batch is swept.
	Sweeper BatchSweeper

	// Compressor is the compression API client (required).
	Compressor connector.Compressor

	// Fetcher gets image_url inputs through the SSRF guard (required).
	Fetcher connector.ImageFetcher

	// Sender posts signed deliveries (required); *webhook.Sender fits.
	Sender Sender

	// Keyring opens sealed API keys, derives webhook secrets and signs file
	// URLs (required; built from IMGFLOW_SECRET, which must be the server's).
	Keyring *keyring.Keyring

	// PublicURL is the server's public base URL without a trailing slash
	// (IMGFLOW_PUBLIC_URL, required): deliveries carry file_url under it.
	PublicURL string

	// FileURL makes the file_url of a delivered job, valid until exp; nil
	// gives the Keyring's signed link under PublicURL.
	FileURL func(j *connector.Job, exp time.Time) string

	// ResultTTL is how long compressed files are kept and how long the
	// file_url in a delivery stays valid (IMGFLOW_RESULT_TTL). Default 24h.
	ResultTTL time.Duration

	// DeliverySchedule is the delay before each delivery attempt, the first
	// usually 0 (immediately); len(DeliverySchedule) attempts in all. A
	// receiver's Retry-After stretches a delay, never shortens it. Default
	// DefaultDeliverySchedule (Standard Webhooks: 0, 5s, 5m, 30m, 2h, 5h,
	// 10h, 14h, 20h, 24h). Delays shorter than DelayedTaskCheckInterval are
	// rounded up to it.
	DeliverySchedule []time.Duration

	// MaxCompressRetries is how many times a compress task whose error may
	// pass (upstream 5xx, timeouts, network, Redis) is retried, with
	// exponential backoff from 1s capped at 1 min, before the job fails.
	// Default 8. Each task carries the count it was enqueued with, so this
	// applies to tasks enqueued through Worker.Queue (as `imgflow dev`
	// does); a server with its own Queue sets WithMaxCompressRetries.
	MaxCompressRetries int

	// IdleWait is how long an idle worker's empty dequeue waits for a
	// wake-up, published by Queue on every enqueue, before it polls again
	// (see wake.go). Default DefaultIdleWait (1s): an idle worker process
	// runs about one dequeue script a second, and a task that becomes due
	// without a wake-up (a retry, a delayed delivery, one enqueued by
	// another program) starts within IdleWait. Every idle worker wakes on
	// every enqueue, so hundreds of idle workers on one queue each run a
	// dequeue per job.
	IdleWait time.Duration

	// TaskCheckInterval is how long asynq sleeps after a dequeue that found
	// nothing, i.e. after each IdleWait: between half and one and a half of
	// it. Default 5ms, so that a wake-up landing in that sleep is late by
	// little; it costs Redis nothing more while the dequeue waits.
	TaskCheckInterval time.Duration

	// DelayedTaskCheckInterval is how often retries and delayed tasks due
	// are moved back to the queue: the granularity of every retry delay.
	// Default 1s (asynq's is 5s). Tests with short schedules set it lower.
	DelayedTaskCheckInterval time.Duration

	// ShutdownTimeout is how long Run waits for running tasks to finish once
	// its context ends; tasks still running then are put back on the queue
	// for another worker. Default 30s.
	ShutdownTimeout time.Duration

	// Logger receives the worker's logs (job_id on every line, never keys or
	// image bytes). Default slog.Default().
	Logger *slog.Logger

	// Dedupe is the content dedupe index (dedupe.go): a job whose key,
	// image bytes and options match a completed job's completes from its
	// stored result, uncharged. Nil turns dedupe off (IMGFLOW_DEDUPE=off).
	// redisstore.Dedupe fits.
	Dedupe DedupeIndex
	// DedupeWait is how long a job waits for an identical job that is
	// being compressed right now, to complete from its result, before it
	// calls the compression API itself (charged). Default 30s.
	DedupeWait time.Duration
	// DedupeLease is how long a job's claim to be the one compressing an
	// image holds without its finish (a worker killed mid-call); a
	// completed job's claim is left to live it out, its index entry
	// outranking it. Default 2m, longer than a call's time-outs.
	DedupeLease time.Duration

	// Endpoint is the policy of delivery endpoints (hooks, and callback
	// URLs per key): DisableAfter (IMGFLOW_HOOK_DISABLE_AFTER, default 5
	// days) of nothing but failures disables one; Rate
	// (IMGFLOW_DELIVERY_RATE, default 20, negative for none) caps the
	// deliveries per second one gets, bursts of Rate passing at once.
	Endpoint connector.EndpointPolicy

	// MaxHooksPerKey caps how many hooks one event goes to
	// (IMGFLOW_MAX_HOOKS_PER_KEY, which caps how many a key may make); 0:
	// no cap.
	MaxHooksPerKey int

	// FreeDeliveriesPerMinute is each key's outbound budget for the
	// deliveries of free jobs, deduplicated repeats that cost it nothing
	// (IMGFLOW_FREE_DELIVERIES_PER_MINUTE): a burst of this many, then
	// this many a minute, evenly; a delivery beyond it waits its turn,
	// never dropped. So one key's free jobs make at most twice this many
	// POSTs in any minute, and this many a minute sustained. Default
	// connector.DefaultFreeDeliveriesPerMinute (120); negative: no budget.
	FreeDeliveriesPerMinute int

	// Budget keeps the keys' outbound budgets of free deliveries
	// (required; redisstore.Accounts).
	Budget OutboundBudget

	// Observer, when set, is told about jobs, upstream calls and deliveries
	// (for metrics).
	Observer Observer

	// fairLimit is fair dispatch's default limit of one key's running jobs
	// (KeyShare as set: <= 0 is none).
	fairLimit int
}

// The ways compress jobs are dispatched (Config.Dispatch).
const (
	DispatchAsynq = "asynq"
	DispatchFair  = "fair"
)

// Observer is told what the worker does, e.g. to feed Prometheus. Methods
// must be quick and safe for concurrent use.
type Observer interface {
	// JobStarted: a compress run began, queued after the job's creation.
	JobStarted(queued time.Duration)
	// JobFinished: a job reached status "completed" or "failed"; code is the
	// error code of a failed job, "" otherwise.
	JobFinished(status, code string)
	// UpstreamCall: one call of the compression API; status 0 when it did
	// not answer (network, timeout).
	UpstreamCall(status int, d time.Duration)
	// ChargeUncertain: a call of the compression API is being made for a
	// job whose earlier call never got an answer and may have been charged
	// (a worker died mid-call, or the call timed out): possibly one credit
	// charged twice.
	ChargeUncertain()
	// DeliveryDone: one delivery attempt ended: "delivered", "retry",
	// "failed" (last attempt), "gone" (410), "dropped" (job or hook gone,
	// endpoint disabled) or "deferred" (put off by its endpoint's pause or
	// rate, no attempt made).
	DeliveryDone(outcome string)
}

// Sender posts one signed webhook: webhook-id msgID, signed with each of
// secrets (whsec_...); only a 2xx is a success. *webhook.Sender implements it.
type Sender interface {
	Send(ctx context.Context, targetURL string, secrets []string, msgID string, body []byte) webhook.Result
}

// withDefaults returns cfg with defaults filled in, or why it is unusable.
func (cfg Config) withDefaults() (Config, error) {
	switch {
	case cfg.RedisConnOpt == nil:
		return cfg, errors.New("worker: RedisConnOpt is required")
	case cfg.Jobs == nil, cfg.Blobs == nil, cfg.Hooks == nil:
		return cfg, errors.New("worker: Jobs, Blobs and Hooks are required")
	case cfg.Runs == nil:
		return cfg, errors.New("worker: Runs is required")
	case cfg.Budget == nil:
		return cfg, errors.New("worker: Budget is required")
	case cfg.Compressor == nil:
		return cfg, errors.New("worker: Compressor is required")
	case cfg.Fetcher == nil:
		return cfg, errors.New("worker: Fetcher is required")
	case cfg.Sender == nil:
		return cfg, errors.New("worker: Sender is required")
	case cfg.Keyring == nil:
		return cfg, errors.New("worker: Keyring is required")
	case cfg.PublicURL == "":
		return cfg, errors.New("worker: PublicURL is required (IMGFLOW_PUBLIC_URL)")
	}
	cfg.Endpoint = cfg.Endpoint.WithDefaults()
	if cfg.Queue == "" {
		cfg.Queue = DefaultQueue
	}
	if cfg.FreeDeliveriesPerMinute == 0 {
		cfg.FreeDeliveriesPerMinute = connector.DefaultFreeDeliveriesPerMinute
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 10
	}
	if cfg.Fetchers <= 0 {
		cfg.Fetchers = min(max(cfg.Concurrency/16, 1), 4)
	}
	cfg.Fetchers = min(cfg.Fetchers, cfg.Concurrency)
	switch cfg.Dispatch {
	case DispatchAsynq:
	case "", DispatchFair:
		cfg.Dispatch = DispatchFair
		cfg.fairLimit = cfg.KeyShare
	default:
		return cfg, errors.New("worker: Dispatch must be fair or asynq")
	}
	if cfg.KeyShare == 0 {
		cfg.KeyShare = max(1, cfg.Concurrency-1)
	}
	if cfg.DeliveryConcurrency <= 0 {
		cfg.DeliveryConcurrency = cfg.Concurrency
	}
	if cfg.DeliveryKeyShare == 0 {
		cfg.DeliveryKeyShare = max(1, cfg.DeliveryConcurrency/2)
	}
	if cfg.ResultTTL <= 0 {
		cfg.ResultTTL = connector.DefaultResultTTL
	}
	if cfg.DedupeWait <= 0 {
		cfg.DedupeWait = 30 * time.Second
	}
	if cfg.DedupeLease <= 0 {
		cfg.DedupeLease = 2 * time.Minute
	}
	if len(cfg.DeliverySchedule) == 0 {
		cfg.DeliverySchedule = DefaultDeliverySchedule
	}
	if cfg.MaxCompressRetries <= 0 {
		cfg.MaxCompressRetries = DefaultMaxCompressRetries
	}
	if cfg.IdleWait <= 0 {
		cfg.IdleWait = DefaultIdleWait
	}
	if cfg.TaskCheckInterval <= 0 {
		cfg.TaskCheckInterval = 5 * time.Millisecond
	}
	if cfg.DelayedTaskCheckInterval <= 0 {
		cfg.DelayedTaskCheckInterval = time.Second
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	return cfg, nil
}

type nopObserver struct{}

func (nopObserver) JobStarted(time.Duration)        {}
func (nopObserver) JobFinished(string, string)      {}
func (nopObserver) UpstreamCall(int, time.Duration) {}
func (nopObserver) ChargeUncertain()                {}
func (nopObserver) DeliveryDone(string)             {}

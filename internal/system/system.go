// Package system assembles one imgflow from Options: the Redis store, the
// blob store, the keyring, the upstream client, the queue, and from them the
// HTTP API server and the worker. The commands (serve, work, dev) build
// theirs with it after parsing their flags, and the system tests
// (internal/systemtest) build the same one in-process.
//
// Tests: go test ./internal/system (the whole system end to end, secrets
// kept out of logs, Redis and URLs, Redis URLs of every kind, the switch to
// S3); the commands' own tests are in the root package.
package system

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/fetch"
	"github.com/imgflow/imgflow/connector/guard"
	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/connector/s3blob"
	"github.com/imgflow/imgflow/connector/upstream"
	"github.com/imgflow/imgflow/connector/webhook"
	"github.com/imgflow/imgflow/definitions"
	"github.com/imgflow/imgflow/internal/app"
	"github.com/imgflow/imgflow/internal/keycheck"
	"github.com/imgflow/imgflow/mcp"
	"github.com/imgflow/imgflow/metrics"
	"github.com/imgflow/imgflow/oauth"
	"github.com/imgflow/imgflow/server"
	"github.com/imgflow/imgflow/worker"
)

// Options are the settings serve, work and dev share. Each field names
// its flag and environment variable; the commands' addAppFlags registers them.
type Options struct {
	// RedisURL (--redis, REDIS_URL): redis://, rediss:// or
	// redis-sentinel:// URL. Required by serve and work; dev embeds
	// miniredis when empty.
	RedisURL string
	// RedisCluster (--redis-cluster, IMGFLOW_REDIS_CLUSTER): RedisURL names
	// a Redis Cluster (redis://h1:p1?addr=h2:p2&addr=h3:p3). Default false.
	RedisCluster bool
	// UpstreamURL (--upstream-url, UPSTREAM_URL): the compression API's
	// base, ending in /api.
	UpstreamURL string
	// PublicURL (--public-url, IMGFLOW_PUBLIC_URL): how flows reach the
	// API; file_url, Location and definitions use it.
	PublicURL string
	// Secret (--secret, IMGFLOW_SECRET): signs file URLs, derives webhook
	// secrets, encrypts keys at rest. At least 16 characters; every serve
	// and work process of one deployment must share it.
	Secret string
	// AllowHosts (--allow-host, repeatable; IMGFLOW_ALLOW_HOSTS,
	// comma-separated): the non-public destinations image URLs, callbacks
	// and hooks may reach, as CIDR ranges, addresses, host names, each
	// optionally with :port (guard.ParseAllowList). Empty by default: only
	// public addresses. dev adds loopback (127.0.0.0/8, ::1).
	AllowHosts []string
	// AllowLoopback adds loopback to AllowHosts; dev and the system tests
	// set it.
	AllowLoopback bool
	// ResultTTL (--result-ttl, IMGFLOW_RESULT_TTL): how long compressed
	// files and their links live. Default 24h.
	ResultTTL time.Duration
	// JobTTL (--job-ttl, IMGFLOW_JOB_TTL): how long job records, their
	// listing entries and their call records live, counted from the job's
	// creation. Default 7 days (redisstore.DefaultJobTTL); what Redis
	// holds grows with it (docs/capacity.md).
	JobTTL time.Duration
	// Queue (--queue, IMGFLOW_QUEUE): the asynq queue name. Default imgflow.
	Queue string
	// BlobStore (--blob-store, IMGFLOW_BLOB_STORE): where image bytes live:
	// "redis" (the default) or s3://BUCKET?endpoint=URL&region=R&path_style=true
	// with AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY set.
	BlobStore string
	// Presign (--presign, IMGFLOW_PRESIGN): with S3, file_url is a presigned
	// URL of the object (downloads skip imgflow); the object store must be
	// reachable by the flows. Default false.
	Presign bool

	// MaxLargeBodies (--max-large-bodies, IMGFLOW_MAX_LARGE_BODIES): request
	// bodies over 256 KiB read and decoded at once by the API; beyond it
	// 503 server_busy with Retry-After. 0 sizes it from GOMEMLIMIT or the
	// cgroup memory limit (server.DefaultLargeBodies).
	MaxLargeBodies int

	// MaxJobsPerKey (--max-jobs-per-key, IMGFLOW_MAX_JOBS_PER_KEY): a key's
	// unfinished jobs; beyond it 429 too_many_jobs with Retry-After, so one
	// tenant cannot starve the others. 0: no cap.
	MaxJobsPerKey int
	// HookTestsPerMinute (--hook-tests-per-minute,
	// IMGFLOW_HOOK_TESTS_PER_MINUTE) and HookRecoversPerHour
	// (--hook-recovers-per-hour, IMGFLOW_HOOK_RECOVERS_PER_HOUR): per-key
	// rate limits of POST /v1/hooks/{id}/test and /recover; beyond them
	// 429 rate_limited. Defaults 10 and 6; negative: no limit.
	HookTestsPerMinute, HookRecoversPerHour int
	// KeyShare (--key-share, IMGFLOW_KEY_SHARE): on fair dispatch, the
	// compress jobs one API key runs at once across the workers (0, the
	// default, or negative: no limit; the keys still take turns, so a lone
	// key uses every worker). On asynq, per worker process: its others are
	// parked while other keys' run (0: all but one of the concurrency;
	// negative: no share). work and dev only (addWorkerFlags).
	KeyShare int
	// Dispatch (--dispatch, IMGFLOW_DISPATCH): "fair" (default; "" too)
	// or "asynq", worker.Config.Dispatch; serve and work must agree.
	Dispatch string
	// DeliveryConcurrency (--delivery-concurrency,
	// IMGFLOW_DELIVERY_CONCURRENCY): deliveries one worker runs at once,
	// apart from compress tasks. Default 0: the worker's concurrency.
	DeliveryConcurrency int
	// DeliveryKeyShare (--delivery-key-share, IMGFLOW_DELIVERY_KEY_SHARE):
	// deliveries of one key's jobs and batches run at once. Default 0:
	// half of the delivery concurrency; negative: no share.
	DeliveryKeyShare int

	// MaxHooksPerKey (--max-hooks-per-key, IMGFLOW_MAX_HOOKS_PER_KEY): a
	// key's hook subscriptions; one more is 409 too_many_hooks, and one
	// event goes to at most this many hooks. Default 25; 0: no cap.
	MaxHooksPerKey int
	// HookDisableAfter (--hook-disable-after, IMGFLOW_HOOK_DISABLE_AFTER):
	// how long an endpoint (a hook, or a key's callback URL) may fail every
	// attempt before it is disabled. Default 120h (5 days, as Svix).
	HookDisableAfter time.Duration
	// DeliveryRate (--delivery-rate, IMGFLOW_DELIVERY_RATE): deliveries per
	// second one endpoint gets at most, evenly spaced.
	// Default 20; 0: no limit.
	DeliveryRate int
	// FreeDeliveriesPerMinute (--free-deliveries-per-minute,
	// IMGFLOW_FREE_DELIVERIES_PER_MINUTE): each key's outbound budget for
	// the deliveries of free jobs (deduplicated repeats): a burst of this
	// many, then this many a minute; beyond it they wait, never dropped.
	// Default 120; 0: no budget.
	FreeDeliveriesPerMinute int
	// FreeFailuresPerHour (--free-failures-per-hour,
	// IMGFLOW_FREE_FAILURES_PER_HOUR): each key's budget of jobs that fail
	// uncharged: a burst of this many, then this many an hour, one back per
	// paid job; past it a new job is 429 too_many_failures with
	// Retry-After. Default 60; 0: no budget.
	FreeFailuresPerHour int
	// SecretOverlap (--secret-overlap, IMGFLOW_SECRET_OVERLAP): how long a
	// rotated webhook secret still signs deliveries beside the new one.
	// Default 24h. serve and dev only (addAPIFlags).
	SecretOverlap time.Duration
	// KeyGrace (--key-grace, IMGFLOW_KEY_GRACE): while the compression API
	// cannot check keys, the API serves only keys it confirmed within this
	// long; any other gets 503 upstream_unavailable. Default 24h. serve and
	// dev only, like MaxJobsPerKey and MaxLargeBodies (addAPIFlags).
	KeyGrace time.Duration

	// Dedupe (--dedupe, IMGFLOW_DEDUPE): "on" (the default) completes a
	// job whose key, image bytes and options match a completed job's from
	// its stored result, uncharged (worker/dedupe.go); "off" compresses
	// every job. A request turns it off for one job with "dedupe": false.
	Dedupe string

	// AdminToken (--admin-token, IMGFLOW_ADMIN_TOKEN) guards /admin/queues;
	// empty leaves the dashboard out. serve and dev only (dev makes a
	// random one).
	AdminToken string
	// ShutdownTimeout (--shutdown-timeout, IMGFLOW_SHUTDOWN_TIMEOUT): how
	// long a stopping worker lets running tasks finish before putting them
	// back on the queue. Default 30s; the Helm chart sets 2m, the job
	// deadline, with a termination grace period above it. work only (0
	// keeps the worker's default).
	ShutdownTimeout time.Duration
	// Version is the build's version, which the MCP server announces; the
	// commands set it.
	Version string

	// KeyPrefix starts every Redis key of the stores ("imgflow:"); tests
	// set their own to share a Redis.
	KeyPrefix string
}

// ValidateAPI checks the settings only the HTTP API reads (the commands' addAPIFlags).
func (o *Options) ValidateAPI() error {
	if o.KeyGrace <= 0 {
		return fmt.Errorf("bad configuration:\n  - IMGFLOW_KEY_GRACE (--key-grace) must be positive, e.g. 24h")
	}
	return nil
}

// RedisTarget is where RedisURL and RedisCluster point.
func (o *Options) RedisTarget() RedisTarget {
	return RedisTarget{URL: o.RedisURL, Cluster: o.RedisCluster}
}

// Validate names the variable to set for each missing or wrong value.
func (o *Options) Validate(needPublicURL bool) error {
	var problems []string
	if o.RedisURL == "" {
		problems = append(problems, "REDIS_URL (--redis) is required, e.g. redis://127.0.0.1:6379/0")
	} else if err := o.RedisTarget().Check(); err != nil {
		problems = append(problems, err.Error())
	}
	if o.UpstreamURL == "" {
		problems = append(problems, "UPSTREAM_URL (--upstream-url) is required: the compression API base, ending in /api")
	} else if !strings.HasPrefix(o.UpstreamURL, "http://") && !strings.HasPrefix(o.UpstreamURL, "https://") {
		problems = append(problems, fmt.Sprintf("UPSTREAM_URL (--upstream-url) %q must be an http(s) URL ending in /api", o.UpstreamURL))
	}
	if len(o.Secret) < 16 {
		problems = append(problems, "IMGFLOW_SECRET (--secret) is required: at least 16 random characters, the same for every serve and work process")
	}
	if needPublicURL && o.PublicURL == "" {
		problems = append(problems, "IMGFLOW_PUBLIC_URL (--public-url) is required: the URL flows reach this API at, e.g. https://imgflow.example.com")
	} else if o.PublicURL != "" && !strings.HasPrefix(o.PublicURL, "http://") && !strings.HasPrefix(o.PublicURL, "https://") {
		problems = append(problems, fmt.Sprintf("IMGFLOW_PUBLIC_URL (--public-url) %q must start with http:// or https://", o.PublicURL))
	}
	if _, err := guard.ParseAllowList(o.AllowHosts...); err != nil {
		problems = append(problems, fmt.Sprintf("IMGFLOW_ALLOW_HOSTS (--allow-host): %v", err))
	}
	if _, err := o.s3Config(); err != nil {
		problems = append(problems, err.Error())
	} else if o.Presign && (o.BlobStore == "" || o.BlobStore == "redis") {
		problems = append(problems, "IMGFLOW_PRESIGN (--presign) needs an S3 IMGFLOW_BLOB_STORE")
	}
	if o.Dedupe != "" && o.Dedupe != "on" && o.Dedupe != "off" {
		problems = append(problems, fmt.Sprintf("IMGFLOW_DEDUPE (--dedupe) %q must be on or off", o.Dedupe))
	}
	if o.MaxHooksPerKey < 0 {
		problems = append(problems, "IMGFLOW_MAX_HOOKS_PER_KEY (--max-hooks-per-key) must be 0 (no cap) or more")
	}
	if o.DeliveryRate < 0 {
		problems = append(problems, "IMGFLOW_DELIVERY_RATE (--delivery-rate) must be 0 (no limit) or more")
	}
	if o.FreeFailuresPerHour < 0 {
		problems = append(problems, "IMGFLOW_FREE_FAILURES_PER_HOUR (--free-failures-per-hour) must be 0 (no budget) or more")
	}
	if o.FreeDeliveriesPerMinute < 0 {
		problems = append(problems, "IMGFLOW_FREE_DELIVERIES_PER_MINUTE (--free-deliveries-per-minute) must be 0 (no budget) or more")
	}
	if o.HookDisableAfter < 0 || o.SecretOverlap < 0 {
		problems = append(problems, "IMGFLOW_HOOK_DISABLE_AFTER and IMGFLOW_SECRET_OVERLAP must not be negative")
	}
	if o.JobTTL != 0 && o.JobTTL < time.Minute {
		problems = append(problems, "IMGFLOW_JOB_TTL (--job-ttl) must be at least 1m")
	}
	if o.ResultTTL < time.Minute {
		problems = append(problems, "IMGFLOW_RESULT_TTL (--result-ttl) must be at least 1m")
	}
	if len(problems) > 0 {
		return fmt.Errorf("bad configuration:\n  - %s", strings.Join(problems, "\n  - "))
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	return nil
}

// AllowPolicy is the guard's allow-list: AllowHosts, plus loopback in dev.
func (o *Options) AllowPolicy() (guard.Policy, error) {
	p, err := guard.ParseAllowList(o.AllowHosts...)
	if err != nil {
		return guard.Policy{}, err
	}
	if o.AllowLoopback {
		p = guard.Loopback().With(p)
	}
	return p, nil
}

// App is what serve, work and dev build from Options.
type App struct {
	opts        Options
	rdb         redis.UniversalClient
	redisOpt    asynq.RedisConnOpt
	store       *redisstore.Store
	blobs       connector.BlobStore // store, or S3 (s3 set) reading older blobs from store
	s3          *s3blob.Store
	keys        *keyring.Keyring
	allow       guard.Policy         // where flows' URLs may lead besides public addresses
	compressor  connector.Compressor // the upstream client, counted by metrics
	asynqClient *asynq.Client
	queue       *worker.Queue
	metrics     *metrics.Metrics
	// keyCheck and service are built once and shared by the HTTP API, the
	// worker's sweeper and the MCP server.
	keyCheck *keycheck.Checker
	maker    *app.Maker
	closers  []func() error
}

// New builds the App on rdb, an open client of opts' Redis.
func New(opts Options, rdb redis.UniversalClient) (*App, error) {
	switch opts.Dispatch {
	case worker.DispatchFair, worker.DispatchAsynq:
	case "":
		opts.Dispatch = worker.DispatchFair
	default:
		return nil, fmt.Errorf("IMGFLOW_DISPATCH: %q is neither fair nor asynq", opts.Dispatch)
	}
	redisOpt, err := opts.RedisTarget().connOpt()
	if err != nil {
		return nil, scrubError(fmt.Errorf("REDIS_URL: %w", err), opts.RedisURL)
	}
	keys, err := keyring.New(opts.Secret)
	if err != nil {
		return nil, fmt.Errorf("IMGFLOW_SECRET: %w", err)
	}
	allow, err := opts.AllowPolicy()
	if err != nil {
		return nil, fmt.Errorf("IMGFLOW_ALLOW_HOSTS: %w", err)
	}
	a := &App{
		opts:     opts,
		rdb:      rdb,
		redisOpt: redisOpt,
		store: redisstore.New(rdb, redisstore.Options{Prefix: opts.KeyPrefix, JobTTL: opts.JobTTL,
			FreeFailuresPerHour: opts.FreeFailuresPerHour}),
		keys:    keys,
		allow:   allow,
		metrics: metrics.New(slog.Default()),
	}
	if err := a.openBlobs(); err != nil {
		return nil, err
	}
	a.compressor = a.metrics.Compressor(upstream.New(opts.UpstreamURL))
	// Share the fail-fast Redis client (OpenRedis): with Redis down an
	// enqueue answers 503 at once, not after go-redis's dial retries. Its
	// autopipeliner, shared with the store, sends the enqueue in the same
	// writes as other requests' commands, and the wake-up after it.
	batched := redisstore.Batched(rdb)
	a.asynqClient = asynq.NewClientFromRedisClient(batched)
	// Wake-ups on the same client let idle workers start a job at once.
	qopts := []worker.QueueOption{worker.WithWakeUps(batched)}
	if opts.Dispatch == worker.DispatchFair {
		// The key limit here only spares a dispatch of a key at its
		// limit; the dispatcher enforces the workers' own.
		qopts = append(qopts, worker.WithFairDispatch(batched, opts.KeyShare))
	}
	a.queue = worker.NewQueue(a.asynqClient, opts.Queue, qopts...)
	if lua, keys, args, ok := a.queue.FairEnqueueStep(); ok {
		// A job is queued in the script that makes it (one round trip);
		// refused on a cluster, where the service queues after the making.
		a.store.Jobs.QueueAtMaking(redisstore.MakingQueue{Lua: lua, Keys: keys, Args: args})
	}
	a.keyCheck = keycheck.New(keycheck.Config{Accounts: a.store.Accounts, Validator: a.compressor, Owner: keys.KeyHash,
		Grace: opts.KeyGrace, Logger: slog.Default()})
	a.maker = a.newMaker()
	return a, nil
}

// jobService is the creation service on the App's stores: the one that
// makes every job and batch, whoever asks.
func (a *App) newMaker() *app.Maker {
	var inputs connector.BlobStore // nil: inputs go in the job's own round trip to Redis
	if a.s3 != nil {
		inputs = a.blobs
	}
	return app.New(app.Config{
		Jobs:          a.store.Jobs,
		Batches:       a.store.Batches,
		Idempotency:   a.store.Idempotency,
		Inputs:        inputs,
		Queue:         a.queue,
		Keyring:       a.keys,
		CheckURL:      a.checkURL,
		Keys:          a.keyCheck,
		MaxJobsPerKey: a.opts.MaxJobsPerKey,
		InputTTL:      a.opts.ResultTTL,
		Logger:        slog.Default(),
	})
}

// Connect opens REDIS_URL and builds the App on it, for serve and work;
// closeFn releases both.
func Connect(ctx context.Context, opts Options) (a *App, closeFn func(), err error) {
	rdb, _, closeRedis, err := OpenRedis(ctx, opts.RedisTarget())
	if err != nil {
		return nil, nil, err
	}
	if a, err = New(opts, rdb); err != nil {
		closeRedis()
		return nil, nil, err
	}
	return a, func() { a.Close(); closeRedis() }, nil
}

// Close stops what the App and its servers started.
func (a *App) Close() {
	for _, c := range a.closers {
		c()
	}
	a.maker.Close()
	a.asynqClient.Close()
}

// checkURL is the early URL check of the API; the dial-time guard in the
// fetcher and sender is the one that cannot be fooled by DNS rebinding.
func (a *App) checkURL(ctx context.Context, field, raw string) error {
	return guard.ForField(guard.CheckURL(ctx, raw, a.allow, nil), field)
}

// APIServer is the HTTP API; mount adds routes of the caller's (dev's
// sample images).
func (a *App) APIServer(logger *slog.Logger, mount func(*echo.Echo)) *server.Server {
	// Queue sizes are read from Redis at each scrape of serve's /metrics
	// (OpsHandler).
	inspector := asynq.NewInspector(a.redisOpt)
	a.closers = append(a.closers, inspector.Close)
	var sizes map[string]metrics.QueueSizes
	if a.opts.Dispatch == worker.DispatchFair {
		// Compress jobs are fair dispatch's: their backlog is read there.
		sizes = map[string]metrics.QueueSizes{a.opts.Queue: func() (asynq.QueueInfo, error) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s, err := a.queue.FairSizes(ctx)
			if err != nil {
				return asynq.QueueInfo{}, err
			}
			// The oldest waiting job's age feeds ImgflowQueueBackingUp.
			oldest, err := a.queue.FairOldest(ctx)
			return asynq.QueueInfo{Pending: int(s.Ready), Active: int(s.Running), Retry: int(s.Retrying), Latency: oldest}, err
		}}
	}
	a.metrics.WatchQueuesWith(inspector, sizes, a.opts.Queue, worker.DeliveryQueue(a.opts.Queue))
	api := server.New(server.Config{
		Maker:               a.maker,
		Keys:                a.keyCheck,
		Jobs:                a.store.Jobs,
		Blobs:               a.blobs,
		FileURL:             a.fileURL,
		Hooks:               a.store.Hooks,
		OpLimiter:           a.store.Hooks,
		Batches:             a.store.Batches,
		Queue:               a.queue,
		Fetcher:             fetch.New(fetch.Options{Allow: a.allow}),
		Dedupe:              a.dedupeIndex(),
		Keyring:             a.keys,
		PublicURL:           a.opts.PublicURL,
		CheckURL:            a.checkURL,
		ResultTTL:           a.opts.ResultTTL,
		MaxLargeBodies:      a.opts.MaxLargeBodies,
		HookTestsPerMinute:  a.opts.HookTestsPerMinute,
		HookRecoversPerHour: a.opts.HookRecoversPerHour,
		MaxHooksPerKey:      a.opts.MaxHooksPerKey,
		SecretOverlap:       a.opts.SecretOverlap,
		Sender:              webhook.NewSender(webhook.SenderOptions{Allow: a.allow}),
		Definitions:         renderDefinitions,
		OnJobCreated:        func(kind connector.InputKind) { a.metrics.JobCreated(string(kind)) },
		Middleware:          []echo.MiddlewareFunc{a.metrics.Echo()},
		Mount: func(e *echo.Echo) {
			if mount != nil {
				mount(e)
			}
		},
		MCP:    a.mcpServer(logger),
		OAuth:  a.oauthServer(logger, a.keyCheck.Check),
		Logger: logger,
	})
	return api
}

// mcpServer is the MCP server at /mcp, its tools on the API's operations
// (package mcp).
func (a *App) mcpServer(logger *slog.Logger) func(ops *server.Operations) http.Handler {
	return func(ops *server.Operations) http.Handler {
		return mcp.New(mcp.Options{
			Backend: ops,
			Uploads: &mcp.Uploads{Blobs: a.blobs, Keys: a.keys, PublicURL: a.opts.PublicURL, Claims: a.store.Blobs},
			Version: a.opts.Version,
			Logger:  logger.With("component", "mcp"),
		})
	}
}

// oauthServer is the authorization server for MCP clients (package oauth),
// its state in the App's Redis and its consent page checking keys with
// checkKey (the API's key check); nil without a public URL, which is its
// issuer. Client ID metadata documents are fetched from public addresses
// only (loopback too in dev), whatever IMGFLOW_ALLOW_HOSTS lets flows reach.
func (a *App) oauthServer(logger *slog.Logger, checkKey func(ctx context.Context, key string) error) *oauth.Server {
	if a.opts.PublicURL == "" {
		return nil
	}
	docs := guard.Policy{}
	if a.opts.AllowLoopback {
		docs = guard.Loopback()
	}
	return oauth.New(oauth.Config{
		Store:          oauth.NewStore(a.rdb, a.opts.KeyPrefix),
		Keyring:        a.keys,
		PublicURL:      a.opts.PublicURL,
		CheckKey:       checkKey,
		DocumentClient: oauth.DocumentClient(docs),
		Logger:         logger.With("component", "oauth"),
	})
}

// Worker is the asynq worker running concurrency tasks at once.
func (a *App) Worker(logger *slog.Logger, concurrency int) (*worker.Worker, error) {
	// On one Redis with the blobs in it, fair dispatch hands out each job
	// with its record: its run starts without reading it.
	var recordPrefix, recordSuffix string
	if prefix, suffix, ok := a.store.Jobs.RecordKeyAround(); ok && a.s3 == nil {
		recordPrefix, recordSuffix = prefix, suffix
	}
	return worker.New(worker.Config{
		RedisConnOpt:    a.redisOpt,
		Queue:           a.opts.Queue,
		Concurrency:     concurrency,
		KeyShare:        a.opts.KeyShare,
		Dispatch:        a.opts.Dispatch,
		Jobs:            a.store.Jobs,
		Blobs:           a.blobs,
		FileURL:         a.fileURL,
		Hooks:           a.store.Hooks,
		Budget:          a.store.Accounts,
		Runs:            a.runs(),
		RecordKeyPrefix: recordPrefix,
		RecordKeySuffix: recordSuffix,
		Batches:         a.store.Batches,
		Sweeper:         a.maker,
		Compressor:      a.compressor,
		Fetcher:         fetch.New(fetch.Options{Allow: a.allow}),
		Dedupe:          a.dedupeIndex(),
		Sender:          webhook.NewSender(webhook.SenderOptions{Allow: a.allow}),
		Keyring:         a.keys,
		PublicURL:       a.opts.PublicURL,
		ResultTTL:       a.opts.ResultTTL,
		Endpoint:        a.endpointPolicy(),
		MaxHooksPerKey:  a.opts.MaxHooksPerKey,
		Logger:          logger,
		Observer:        a.metrics,

		DeliveryConcurrency:     a.opts.DeliveryConcurrency,
		DeliveryKeyShare:        a.opts.DeliveryKeyShare,
		FreeDeliveriesPerMinute: a.freeDeliveriesPerMinute(),
		// ShutdownTimeout: 0 is the worker's default (30 s).
		ShutdownTimeout: a.opts.ShutdownTimeout,
	})
}

// endpointPolicy is the delivery endpoints' policy from the options: a
// rate of 0 means no limit, which the policy spells negative.
func (a *App) endpointPolicy() connector.EndpointPolicy {
	rate := float64(a.opts.DeliveryRate)
	if rate == 0 {
		rate = -1
	}
	return connector.EndpointPolicy{DisableAfter: a.opts.HookDisableAfter, Rate: rate}
}

// freeDeliveriesPerMinute is the outbound budget from the options: 0
// means none, which the worker spells negative.
func (a *App) freeDeliveriesPerMinute() int {
	if a.opts.FreeDeliveriesPerMinute == 0 {
		return -1
	}
	return a.opts.FreeDeliveriesPerMinute
}

// dedupeStore is the content dedupe index as the API and the worker use
// it (redisstore.Dedupe).
type dedupeStore interface {
	server.DedupeIndex
	worker.DedupeIndex
}

// dedupeIndex is the content dedupe index, nil when IMGFLOW_DEDUPE=off.
func (a *App) dedupeIndex() dedupeStore {
	if a.opts.Dedupe == "off" {
		return nil
	}
	return a.store.Dedupe
}

// renderDefinitions adapts the definitions package to the server's needs.
func renderDefinitions(baseURL string) ([]server.DefinitionFile, []byte, error) {
	files, err := definitions.Render(baseURL)
	if err != nil {
		return nil, nil, err
	}
	doc, err := definitions.OpenAPI(baseURL)
	if err != nil {
		return nil, nil, err
	}
	out := make([]server.DefinitionFile, len(files))
	for i, f := range files {
		out[i] = server.DefinitionFile{Platform: f.Platform, Name: f.Name, Data: f.Data}
	}
	return out, doc, nil
}

var _ connector.Queue = (*worker.Queue)(nil)

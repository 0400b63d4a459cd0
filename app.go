package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hibiken/asynq"
	"github.com/labstack/echo/v4"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/admin"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/fetch"
	"github.com/imgflow/imgflow/connector/guard"
	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/connector/upstream"
	"github.com/imgflow/imgflow/connector/webhook"
	"github.com/imgflow/imgflow/definitions"
	"github.com/imgflow/imgflow/metrics"
	"github.com/imgflow/imgflow/server"
	"github.com/imgflow/imgflow/worker"
)

// appOptions are the settings serve, work and dev share. Each field names
// its flag and environment variable; see addAppFlags.
type appOptions struct {
	// RedisURL (--redis, REDIS_URL): redis://, rediss:// or
	// redis-sentinel:// URL. Required by serve and work; dev embeds
	// miniredis when empty.
	RedisURL string
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
	// AllowPrivateURLs (--allow-private-urls, IMGFLOW_ALLOW_PRIVATE_URLS):
	// let image URLs, callbacks and hooks reach loopback and private
	// networks. Off in production; on in dev.
	AllowPrivateURLs bool
	// ResultTTL (--result-ttl, IMGFLOW_RESULT_TTL): how long compressed
	// files and their links live. Default 24h.
	ResultTTL time.Duration
	// Queue (--queue, IMGFLOW_QUEUE): the asynq queue name. Default imgflow.
	Queue string

	// keyPrefix starts every Redis key of the stores ("imgflow:"); tests
	// set their own to share a Redis.
	keyPrefix string
}

func addAppFlags(fs *flagSet, o *appOptions) {
	fs.String(&o.RedisURL, "redis", "REDIS_URL", "", "Redis URL (redis://host:6379/0, rediss://, redis-sentinel://)")
	fs.String(&o.UpstreamURL, "upstream-url", "UPSTREAM_URL", "", "compression API base URL, ending in /api")
	fs.String(&o.PublicURL, "public-url", "IMGFLOW_PUBLIC_URL", "", "public base URL of the API, for file_url and definitions")
	fs.String(&o.Secret, "secret", "IMGFLOW_SECRET", "", "secret (16+ chars) that signs file URLs, derives webhook secrets and encrypts keys at rest")
	fs.Bool(&o.AllowPrivateURLs, "allow-private-urls", "IMGFLOW_ALLOW_PRIVATE_URLS", false, "allow image, callback and hook URLs on loopback and private networks")
	fs.Duration(&o.ResultTTL, "result-ttl", "IMGFLOW_RESULT_TTL", 24*time.Hour, "how long compressed files and their links live")
	fs.String(&o.Queue, "queue", "IMGFLOW_QUEUE", "imgflow", "asynq queue name")
}

// validate names the variable to set for each missing or wrong value.
func (o *appOptions) validate(needPublicURL bool) error {
	var problems []string
	if o.RedisURL == "" {
		problems = append(problems, "REDIS_URL (--redis) is required, e.g. redis://127.0.0.1:6379/0")
	} else if _, err := asynq.ParseRedisURI(o.RedisURL); err != nil {
		problems = append(problems, fmt.Sprintf("REDIS_URL (--redis) %q is not a Redis URL: %v", o.RedisURL, err))
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
	if o.ResultTTL < time.Minute {
		problems = append(problems, "IMGFLOW_RESULT_TTL (--result-ttl) must be at least 1m")
	}
	if len(problems) > 0 {
		return fmt.Errorf("bad configuration:\n  - %s", strings.Join(problems, "\n  - "))
	}
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	return nil
}

// app is what serve, work and dev build from appOptions.
type app struct {
	opts        appOptions
	rdb         redis.UniversalClient
	redisOpt    asynq.RedisConnOpt
	store       *redisstore.Store
	keys        *keyring.Keyring
	compressor  connector.Compressor // the upstream client, counted by metrics
	asynqClient *asynq.Client
	queue       *worker.Queue
	metrics     *metrics.Metrics
	// adminToken (--admin-token, IMGFLOW_ADMIN_TOKEN) guards /admin/queues;
	// empty leaves the dashboard out. serve and dev set it.
	adminToken string
	closers    []func() error
}

func newApp(opts appOptions, rdb redis.UniversalClient) (*app, error) {
	redisOpt, err := asynq.ParseRedisURI(opts.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("REDIS_URL: %w", err)
	}
	keys, err := keyring.New(opts.Secret)
	if err != nil {
		return nil, fmt.Errorf("IMGFLOW_SECRET: %w", err)
	}
	a := &app{
		opts:     opts,
		rdb:      rdb,
		redisOpt: redisOpt,
		store:    redisstore.New(rdb, redisstore.Options{Prefix: opts.keyPrefix}),
		keys:     keys,
		metrics:  metrics.New(slog.Default()),
	}
	a.compressor = a.metrics.Compressor(upstream.New(opts.UpstreamURL))
	// Share the fail-fast Redis client (openRedis): with Redis down an
	// enqueue answers 503 at once, not after go-redis's dial retries.
	a.asynqClient = asynq.NewClientFromRedisClient(rdb)
	a.queue = worker.NewQueue(a.asynqClient, opts.Queue)
	return a, nil
}

// connectApp opens REDIS_URL and builds the app on it, for serve and work;
// closeFn releases both.
func connectApp(ctx context.Context, opts appOptions) (a *app, closeFn func(), err error) {
	rdb, _, closeRedis, err := openRedis(ctx, opts.RedisURL)
	if err != nil {
		return nil, nil, err
	}
	if a, err = newApp(opts, rdb); err != nil {
		closeRedis()
		return nil, nil, err
	}
	return a, func() { a.Close(); closeRedis() }, nil
}

func (a *app) Close() {
	for _, c := range a.closers {
		c()
	}
	a.asynqClient.Close()
}

// checkURL is the early URL check of the API; the dial-time guard in the
// fetcher and sender is the one that cannot be fooled by DNS rebinding.
func (a *app) checkURL(ctx context.Context, field, raw string) error {
	return guard.ForField(guard.CheckURL(ctx, raw, a.opts.AllowPrivateURLs, nil), field)
}

func (a *app) apiServer(logger *slog.Logger, mount func(*echo.Echo)) *server.Server {
	// Queue sizes are read from Redis at each scrape of the API's /metrics.
	inspector := asynq.NewInspector(a.redisOpt)
	a.closers = append(a.closers, inspector.Close)
	a.metrics.WatchQueues(inspector, a.opts.Queue)
	return server.New(server.Config{
		Jobs:        a.store,
		Blobs:       a.store,
		Idempotency: a.store,
		Accounts:    a.store,
		Hooks:       a.store,
		Queue:       a.queue,
		Compressor:  a.compressor,
		Keyring:     a.keys,
		PublicURL:   a.opts.PublicURL,
		CheckURL:    a.checkURL,
		ResultTTL:   a.opts.ResultTTL,
		Ready: map[string]func(context.Context) error{
			"redis":    a.store.Ping,
			"upstream": a.compressor.Health,
		},
		Definitions:  renderDefinitions,
		OnJobCreated: func(kind connector.InputKind) { a.metrics.JobCreated(string(kind)) },
		Middleware:   []echo.MiddlewareFunc{a.metrics.Echo()},
		Mount: func(e *echo.Echo) {
			e.GET("/metrics", echo.WrapHandler(a.metrics.Handler()))
			a.closers = append(a.closers, admin.Mount(e, a.redisOpt, a.adminToken))
			if mount != nil {
				mount(e)
			}
		},
		Logger: logger,
	})
}

func (a *app) worker(logger *slog.Logger, concurrency int) (*worker.Worker, error) {
	return worker.New(worker.Config{
		RedisConnOpt: a.redisOpt,
		Queue:        a.opts.Queue,
		Concurrency:  concurrency,
		Jobs:         a.store,
		Blobs:        a.store,
		Hooks:        a.store,
		Compressor:   a.compressor,
		Fetcher:      fetch.New(fetch.Options{AllowPrivate: a.opts.AllowPrivateURLs}),
		Sender:       webhook.NewSender(webhook.SenderOptions{AllowPrivate: a.opts.AllowPrivateURLs}),
		Keyring:      a.keys,
		PublicURL:    a.opts.PublicURL,
		ResultTTL:    a.opts.ResultTTL,
		Logger:       logger,
		Observer:     a.metrics,
	})
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

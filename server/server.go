// Package server is imgflow's HTTP API (Echo): routes, binding and
// validation of flow inputs, API keys and their account check, hooks and
// the delivery log, the console, the one table that maps domain error codes
// to HTTP statuses (errors.go), and the definitions and OpenAPI downloads.
// Jobs and batches are made by internal/app's Maker: a handler binds
// the request, calls it and renders its answer.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/go-playground/validator/v10"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/keyring"
	"github.com/imgflow/imgflow/connector/webhook"
	"github.com/imgflow/imgflow/internal/app"
	"github.com/imgflow/imgflow/internal/keycheck"
	"github.com/imgflow/imgflow/oauth"
	"github.com/imgflow/imgflow/server/console"
)

// Config is everything the API needs. The stores are the interfaces of
// stores.go, shaped by the routes' calls (redisstore's aggregates fit
// them), and connector's BlobStore; queue and compressor are connector's
// interfaces; main wires the real ones.
type Config struct {
	// Maker makes jobs, batches and sets (internal/app), built once by the
	// caller and shared with the worker's sweeper and the MCP server.
	// Required.
	Maker *app.Maker
	// Keys checks API keys (internal/keycheck), shared with Maker.
	// Required.
	Keys *keycheck.Checker
	// Jobs is the job store the read routes use.
	Jobs  JobStore
	Blobs connector.BlobStore
	// Hooks keeps hook subscriptions and what operating them needs: the
	// cap, enabling, secret rotation (the hooks' and the callbacks'), test
	// events and their delivery log, each job's delivery log, and the
	// owner's deliveries across jobs.
	Hooks HookStore
	// Batches keeps batches (POST /v1/batches and the routes under it);
	// nil leaves them out (404).
	Batches BatchStore
	// Sender sends test events (POST /v1/hooks/{id}/test) through the SSRF
	// guard. Default: a *webhook.Sender that reaches public addresses only.
	Sender HookSender
	// MaxHooksPerKey caps a key's hooks: one more gets 409
	// too_many_hooks. 0: no cap. Flag --max-hooks-per-key, env
	// IMGFLOW_MAX_HOOKS_PER_KEY (default 25).
	MaxHooksPerKey int
	// HookTestsPerMinute and HookRecoversPerHour rate-limit, per key,
	// POST /v1/hooks/{id}/test and /recover (the POSTs they make are
	// free): beyond them 429 rate_limited with Retry-After. 0 takes the
	// defaults (10 a minute, 6 an hour), negative means no limit. Env
	// IMGFLOW_HOOK_TESTS_PER_MINUTE, IMGFLOW_HOOK_RECOVERS_PER_HOUR.
	HookTestsPerMinute  int
	HookRecoversPerHour int
	// OpLimiter keeps those limits' state, shared by every process
	// (redisstore.Hooks' endpoint rates); nil: no limit applies.
	OpLimiter SlotTaker
	// SecretOverlap is how long a rotated secret still signs deliveries
	// beside the new one. Default 24h; env IMGFLOW_SECRET_OVERLAP.
	SecretOverlap time.Duration
	Queue         connector.Queue
	// Fetcher gets image_url inputs for dry runs (?dry_run=1), through the
	// same SSRF guard as the worker's; nil refuses dry runs of URLs.
	Fetcher connector.ImageFetcher
	// Dedupe is the content dedupe index, read by dry runs to tell whether
	// a job would be charged; nil when dedupe is off (IMGFLOW_DEDUPE=off).
	Dedupe  DedupeIndex
	Keyring *keyring.Keyring

	// PublicURL is the address flows reach this server at, without a
	// trailing slash; file_url and Location use it. Flag --public-url,
	// env IMGFLOW_PUBLIC_URL.
	PublicURL string
	// CheckURL refuses image, callback and hook URLs that point into a
	// private network (unless allowed), naming the input field in its
	// error; nil accepts every http(s) URL.
	CheckURL func(ctx context.Context, field, rawURL string) error
	// FileURL makes a finished job's file_url, valid until exp; nil gives
	// the Keyring's signed link to GET /v1/jobs/{id}/file under PublicURL
	// (main passes presigned S3 URLs with IMGFLOW_PRESIGN).
	FileURL func(j *connector.Job, exp time.Time) string
	// ResultTTL is how long compressed files and their file_url live.
	// Default 24h; env IMGFLOW_RESULT_TTL.
	ResultTTL time.Duration
	// MaxWait caps ?wait=N. Default connector.DefaultMaxWait (25s).
	MaxWait time.Duration
	// MaxLargeBodies caps how many request bodies over 256 KiB (or of
	// undeclared length) are read and decoded at once; beyond it a request
	// waits up to LargeBodyWait, then gets 503 server_busy with
	// Retry-After. Default DefaultLargeBodies(), sized from the memory limit.
	// Flag --max-large-bodies, env IMGFLOW_MAX_LARGE_BODIES.
	MaxLargeBodies int
	// LargeBodyWait is how long a large body waits for a slot. Default 2s.
	LargeBodyWait time.Duration
	// Definitions renders the connector definitions for a base URL; nil
	// leaves /v1/definitions and /openapi.json out.
	Definitions DefinitionsRenderer
	// OnJobCreated is told of every new job (not of Idempotency-Key
	// replays), by input kind; metrics count them. May be nil.
	OnJobCreated func(kind connector.InputKind)
	// Middleware runs around every route (metrics, for one).
	Middleware []echo.MiddlewareFunc
	// Mount adds routes owned elsewhere (metrics, admin UI).
	Mount func(e *echo.Echo)
	// MCP builds the MCP server (package mcp) on the API's operations
	// (Operations: the creation service and the read paths, no HTTP in
	// between); nil leaves /mcp out. Every /mcp
	// request needs a known key, checked before its body is read
	// (mcpauth.go); upload URLs under /mcp/uploads/ carry a signed token.
	MCP func(ops *Operations) http.Handler
	// OAuth is the authorization server for MCP clients (package oauth):
	// its routes and /v1/connected-apps are mounted, and /mcp takes its
	// access tokens beside API keys (mcpauth.go); nil: keys only.
	OAuth  *oauth.Server
	Logger *slog.Logger
	// Now is the clock; tests move it.
	Now func() time.Time
}

// Server is the HTTP API.
type Server struct {
	cfg      Config
	echo     *echo.Echo
	validate *validator.Validate
	log      *slog.Logger
	defs     renderedDefinitions
	bodies   *bodySlots
}

// New builds the API with defaults filled in.
func New(cfg Config) *Server {
	if cfg.ResultTTL <= 0 {
		cfg.ResultTTL = connector.DefaultResultTTL
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = connector.DefaultMaxWait
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.OnJobCreated == nil {
		cfg.OnJobCreated = func(connector.InputKind) {}
	}
	if cfg.CheckURL == nil {
		cfg.CheckURL = func(context.Context, string, string) error { return nil }
	}
	if cfg.SecretOverlap <= 0 {
		cfg.SecretOverlap = connector.DefaultSecretOverlap
	}
	if cfg.Sender == nil {
		cfg.Sender = webhook.NewSender(webhook.SenderOptions{})
	}
	if cfg.HookTestsPerMinute == 0 {
		cfg.HookTestsPerMinute = DefaultHookTestsPerMinute
	}
	if cfg.HookRecoversPerHour == 0 {
		cfg.HookRecoversPerHour = DefaultHookRecoversPerHour
	}
	if cfg.LargeBodyWait <= 0 {
		cfg.LargeBodyWait = 2 * time.Second
	}
	s := &Server{cfg: cfg, validate: newValidator(), log: cfg.Logger, bodies: newBodySlots(cfg.MaxLargeBodies, cfg.LargeBodyWait)}
	s.echo = s.routes()
	return s
}

// Routes lists every route (method and Echo path, :param form), for the
// contract test that holds each to the OpenAPI document.
func (s *Server) Routes() []*echo.Route { return s.echo.Routes() }

// Handler is the API as an http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

// Run serves on addr until ctx ends; see Serve.
func (s *Server) Run(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends, then drains in-flight requests for up
// to 30 s (waiting requests hold at most MaxWait).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return ServeHTTP(ctx, ln, s.echo)
}

// NewHTTPServer is the http.Server every imgflow listener runs h with. The
// timeouts fit a 10 MiB upload on a slow line and a 25 s wait, and close
// connections of clients too slow to send their headers (10 s) or their
// whole request (2 min). Headers are capped at 64 KiB (Go's default is
// 1 MiB): no request of this API needs more, and Go answers 431 before
// imgflow reads anything.
func NewHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       2 * time.Minute,
		WriteTimeout:      2 * time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}
}

// ServeHTTP runs h on ln (with NewHTTPServer) until ctx ends, then shuts
// down gracefully: new connections stop and requests in flight get up to
// 30 s to finish.
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler) error {
	srv := NewHTTPServer(h)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.Use(middleware.RequestIDWithConfig(middleware.RequestIDConfig{
		RequestIDHandler: func(c echo.Context, id string) { c.Set("request_id", id) },
	}))
	e.Use(s.logRequests)
	e.Use(middleware.Recover())
	for _, m := range s.cfg.Middleware {
		e.Use(m)
	}

	// The web console: a page and its assets, calling the routes below.
	page := echo.WrapHandler(console.Handler())
	methods := []string{http.MethodGet, http.MethodHead}
	e.Match(methods, "/", page)
	e.Match(methods, console.Prefix+"*", page)

	// Liveness for scripts and load balancers; readiness, metrics and the
	// queue dashboard are on the ops listener (system.OpsHandler), which
	// an Ingress to this port never publishes.
	e.GET("/health", s.health)

	v1 := e.Group("/v1")
	v1.POST("/jobs", s.createJob)
	v1.POST("/jobs/dry-run", s.dryRun)     // = POST /v1/jobs?dry_run=1, for formats that key operations by path (dryrun.go)
	v1.POST("/jobs/variants", s.createSet) // = POST /v1/jobs with variants required, likewise (sets.go)
	v1.GET("/jobs", s.listJobs, s.requireKey)
	v1.GET("/jobs/:id", s.getJob, s.requireKey)
	v1.GET("/jobs/:id/file", s.getJobFile) // key or signed token
	v1.GET("/jobs/:id/deliveries", s.listDeliveries, s.requireKey)
	v1.POST("/jobs/:id/deliveries/:delivery_id/redeliver", s.redeliver, s.requireKey)
	v1.POST("/batches", s.createBatch, s.requireHeaderKeyFirst) // no body is read without a key
	v1.GET("/batches", s.listBatches, s.requireKey)
	v1.GET("/batches/:id", s.getBatch, s.requireKey)
	v1.GET("/batches/:id/jobs", s.listBatchJobs, s.requireKey)
	v1.GET("/batches/:id/archive", s.getBatchArchive) // key or signed token
	v1.GET("/account", s.getAccount, s.headerKeyOnly)
	v1.POST("/account/rotate-secret", s.rotateCallbackSecret, s.requireKey)
	v1.GET("/deliveries", s.listAllDeliveries, s.requireKey)
	v1.POST("/hooks", s.createHook) // key may be in the body
	v1.GET("/hooks", s.listHooks, s.requireKey)
	v1.GET("/hooks/:id", s.getHook, s.requireKey)
	v1.DELETE("/hooks/:id", s.deleteHook, s.requireKey)
	v1.POST("/hooks/:id/enable", s.enableHook, s.requireKey)
	v1.POST("/hooks/:id/test", s.testHook, s.requireKey)
	v1.POST("/hooks/:id/recover", s.recoverHook, s.requireKey)
	v1.POST("/hooks/:id/rotate-secret", s.rotateHookSecret, s.requireKey)

	if s.cfg.Definitions != nil {
		e.GET("/openapi.json", s.openAPI)
		v1.GET("/event-types", s.listEventTypes)
		v1.GET("/definitions", s.definitionsIndex)
		v1.GET("/definitions/:platform", s.definitionsPlatform)
		v1.GET("/definitions/:platform/:file", s.definitionsFile)
	}
	if s.cfg.MCP != nil {
		mcp := s.cfg.MCP(s.Operations())
		// A tool call's log lines (the key check's, the creation
		// service's) carry the /mcp request's id.
		h := func(c echo.Context) error {
			mcp.ServeHTTP(c.Response(), c.Request().WithContext(s.requestContext(c)))
			return nil
		}
		e.Match([]string{http.MethodPost, http.MethodGet, http.MethodDelete}, "/mcp", h, s.requireMCPKey)
		e.PUT("/mcp/uploads/:slot", h, s.largeBodySlot)
	}
	if s.cfg.OAuth != nil {
		s.mountOAuth(e)
	}
	if s.cfg.Mount != nil {
		s.cfg.Mount(e)
	}
	return e
}

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector/guard"
	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/fixtures/images"
	refupstream "github.com/imgflow/imgflow/fixtures/upstream"
	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/internal/version"
	"github.com/imgflow/imgflow/server"
)

// devOptions configure `imgflow dev`.
type devOptions struct {
	system.Options
	// Addr (--addr, IMGFLOW_ADDR): where the API listens. Default 127.0.0.1:8080.
	Addr string
	// UpstreamAddr (--upstream-addr, IMGFLOW_UPSTREAM_ADDR): where the
	// reference compression API listens. Default 127.0.0.1:8081. Unused
	// when UPSTREAM_URL names another one.
	UpstreamAddr string
	// OpsAddr (--ops-addr, IMGFLOW_OPS_ADDR): where /metrics, /health,
	// /ready and /admin/queues listen. Default a free loopback port, printed.
	OpsAddr string
	// Concurrency (--concurrency, IMGFLOW_CONCURRENCY). Default 4.
	Concurrency int
	// DemoKey (--demo-key, IMGFLOW_DEMO_KEY): the API key to create in the
	// reference upstream; a new random one when empty.
	DemoKey string
}

// runDev runs everything in one process: Redis (embedded unless --redis),
// the reference compression API, the HTTP API and the worker.
func runDev(ctx context.Context, args []string) error {
	var o devOptions
	fs := newFlagSet("dev", "Runs everything in one process: embedded Redis (unless --redis), the reference compression API, the API and the worker.\nImage, callback and hook URLs may reach loopback (127.0.0.0/8, ::1) and the hosts named by --allow-host;\nevery other private, link-local or reserved address is refused, as in production. Stop it with Ctrl-C.")
	fs.String(&o.Addr, "addr", "IMGFLOW_ADDR", "127.0.0.1:8080", "listen address of the API")
	fs.String(&o.UpstreamAddr, "upstream-addr", "IMGFLOW_UPSTREAM_ADDR", "127.0.0.1:8081", "listen address of the reference compression API")
	fs.String(&o.OpsAddr, "ops-addr", "IMGFLOW_OPS_ADDR", devOpsAddr, "listen address of /metrics, /health, /ready and /admin/queues, apart from the API")
	fs.Int(&o.Concurrency, "concurrency", "IMGFLOW_CONCURRENCY", 4, "jobs and deliveries run at once")
	fs.String(&o.DemoKey, "demo-key", "IMGFLOW_DEMO_KEY", "", "API key to create in the reference upstream (random when empty)")
	fs.String(&o.AdminToken, "admin-token", "IMGFLOW_ADMIN_TOKEN", "", "token for the queue dashboard at /admin/queues (random and printed when empty)")
	addAppFlags(fs, &o.Options)
	addWorkerFlags(fs, &o.Options)
	addAPIFlags(fs, &o.Options)
	if err := fs.parse(args); err != nil {
		return err
	}
	ctx = stopWithGoRun(ctx)
	o.AllowLoopback = true // flows on this machine call back to localhost
	if o.Secret == "" {
		o.Secret = randomSecret()
	}
	if o.AdminToken == "" {
		o.AdminToken = randomSecret()
	}

	opsLn, err := listenOps(o.OpsAddr)
	if err != nil {
		return err
	}
	defer opsLn.Close()
	ops := serveOps(ctx, opsLn)
	o.OpsAddr = opsLn.Addr().String()
	rdb, redisURL, closeRedis, err := system.OpenRedis(ctx, o.RedisTarget())
	if stoppedWhileWaiting(ctx, err) {
		return nil
	}
	if err != nil {
		return err
	}
	defer closeRedis()
	o.RedisURL = redisURL

	apiLn, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return fmt.Errorf("IMGFLOW_ADDR (--addr) %s: %w", o.Addr, err)
	}
	if o.PublicURL == "" {
		o.PublicURL = "http://" + apiLn.Addr().String()
	}

	errc := make(chan error, 3)
	running := 0
	ledger := refupstream.NewLedger(rdb, "", nil)
	if o.UpstreamURL == "" {
		upLn, err := net.Listen("tcp", o.UpstreamAddr)
		if err != nil {
			apiLn.Close()
			return fmt.Errorf("IMGFLOW_UPSTREAM_ADDR (--upstream-addr) %s: %w", o.UpstreamAddr, err)
		}
		o.UpstreamURL = "http://" + upLn.Addr().String() + "/api"
		up := refupstream.NewServer(refupstream.Config{Ledger: ledger, Logger: slog.Default().With("component", "upstream")})
		running++
		go func() { errc <- server.ServeHTTP(ctx, upLn, up) }()
	}
	demoKey, err := ensureDemoKey(ctx, ledger, o.DemoKey)
	if err != nil {
		return err
	}
	if err := o.Validate(false); err != nil {
		return err
	}
	if err := o.ValidateAPI(); err != nil {
		return err
	}

	o.Version = version.String()
	a, err := system.New(o.Options, rdb)
	if err != nil {
		return err
	}
	defer a.Close()
	if rep, err := a.Migrate(ctx); err != nil {
		return err
	} else if len(rep.Steps) > 0 {
		slog.Info("Redis key layout migrated", "from", rep.From, "to", rep.To)
	}
	w, err := a.Worker(slog.Default().With("component", "worker"), o.Concurrency)
	if err != nil {
		return err
	}
	defer w.Close()
	running += 2
	api := a.APIServer(slog.Default().With("component", "api"), func(e *echo.Echo) {
		// Sample images, so the first curl has an image URL to fetch.
		e.GET("/samples/*", echo.WrapHandler(http.StripPrefix("/samples/", http.FileServerFS(images.Samples))))
	})
	ops.set(a.OpsHandler(slog.Default().With("component", "ops"), true))
	go func() { errc <- api.Serve(ctx, apiLn) }()
	a.StartBlobSweeper(ctx, slog.Default().With("component", "sweeper"))
	go func() { errc <- w.Run(ctx) }()

	printDevBanner(os.Stdout, o, demoKey, a.Allow())
	// Run until Ctrl-C or the first part that fails; then give the others
	// time to drain.
	var firstErr error
	select {
	case <-ctx.Done():
	case firstErr = <-errc:
		running--
	}
	deadline := time.After(40 * time.Second)
	for ; running > 0; running-- {
		select {
		case err := <-errc:
			if firstErr == nil && err != nil && !errors.Is(err, context.Canceled) {
				firstErr = err
			}
		case <-deadline:
			return firstErr
		}
	}
	return firstErr
}

// ensureDemoKey makes sure the demo key has an account in the reference
// upstream, creating one (or a random key) as needed.
func ensureDemoKey(ctx context.Context, ledger *refupstream.Ledger, key string) (string, error) {
	if key != "" {
		if _, err := ledger.AddKey(ctx, key, 0); err != nil {
			return "", fmt.Errorf("IMGFLOW_DEMO_KEY: %w", err)
		}
		return key, nil
	}
	key, _, err := ledger.CreateAccount(ctx, 0)
	return key, err
}

func randomSecret() string {
	b := make([]byte, 24)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// printDevBanner tells a new user where everything is and what to try:
// copy-paste lines that set KEY, then post a URL, an upload and base64.
func printDevBanner(w io.Writer, o devOptions, key string, allow guard.Policy) {
	fmt.Fprintf(w, `
imgflow dev is running; stop it with Ctrl-C.
imgflow API: %[1]s
console: %[1]s/ (sign in with the demo key)
upstream API: %[2]s
demo key: %[3]s
redis: %[6]s (more keys: go run . keys create --redis %[6]s)
definitions: %[1]s/v1/definitions
mcp: %[1]s/mcp (AI agents; the key as Authorization: Bearer, docs/mcp.md)
ops: %[8]s (/metrics, /health, /ready; not on the API's port)
queues: %[8]s/admin/queues?token=%[4]s
URLs allowed: public addresses and %[5]s (every other private address is refused; add hosts with --allow-host)
%[7]s

Try it in another shell, from the repository root:
  KEY=%[3]s
  curl -s -X POST '%[1]s/v1/jobs?wait=20' -H "X-API-Key: $KEY" \
    -H 'Content-Type: application/json' -d '{"image_url": "%[1]s/samples/photo.png"}'
  curl -s -X POST '%[1]s/v1/jobs?wait=20' -H "X-API-Key: $KEY" -F file=@fixtures/images/photo.jpg
  curl -s -X POST '%[1]s/v1/jobs?wait=20' -H "X-API-Key: $KEY" -H 'Content-Type: application/json' \
    -d "{\"image_base64\": \"$(base64 < fixtures/images/photo.webp | tr -d '\n')\"}"

`, o.PublicURL, o.UpstreamURL, key, o.AdminToken, allow, system.RedactURL(o.RedisURL), imaging.Status(), "http://"+o.OpsAddr)
}

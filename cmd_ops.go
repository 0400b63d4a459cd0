package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"

	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/server"
)

// Default ops listeners (IMGFLOW_OPS_ADDR): /metrics, /health, /ready and
// serve's /admin/queues, apart from the public API (system.OpsHandler).
const (
	serveOpsAddr = ":9090"
	workOpsAddr  = ":9091"
	// dev takes a free loopback port and prints it: two dev processes on
	// one machine (the CI scripts, a second checkout) never collide.
	devOpsAddr = "127.0.0.1:0"
)

// listenOps opens the ops listener at addr, so that a taken port stops the
// command at start; serveOps then serves it.
func listenOps(addr string) (net.Listener, error) {
	if addr == "" {
		return nil, errors.New("IMGFLOW_OPS_ADDR (--ops-addr) is required: where /metrics, /health and /ready listen, e.g. :9090")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("IMGFLOW_OPS_ADDR (--ops-addr) %s: %w", addr, err)
	}
	return ln, nil
}

// opsListener is the ops address of a command, served from its start: while
// the command waits for Redis it answers /health 200 (the process is
// alive: kubelet must not restart it into a crash loop) and everything
// else 503; once the App is built, set hands it the App's ops handler.
type opsListener struct {
	h atomic.Pointer[http.Handler]
}

// serveOps serves the ops address on ln until ctx ends, logging why it
// stopped early.
func serveOps(ctx context.Context, ln net.Listener) *opsListener {
	o := &opsListener{}
	waiting := http.Handler(http.HandlerFunc(waitingForRedis))
	o.h.Store(&waiting)
	go func() {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*o.h.Load()).ServeHTTP(w, r) })
		if err := server.ServeHTTP(ctx, ln, h); err != nil {
			slog.Error("ops listener stopped", "addr", ln.Addr().String(), "error", err)
		}
	}()
	return o
}

// set makes h the ops handler from now on.
func (o *opsListener) set(h http.Handler) { o.h.Store(&h) }

// waitingForRedis answers the ops paths while the command waits for Redis.
func waitingForRedis(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/health" {
		io.WriteString(w, `{"status":"healthy","service":"imgflow","redis":"waiting"}`)
		return
	}
	w.Header().Set("Retry-After", "5")
	w.WriteHeader(http.StatusServiceUnavailable)
	io.WriteString(w, `{"status":"unavailable","down":["redis"],"checks":{"redis":"waiting"}}`)
}

// stoppedWhileWaiting says whether err is ctx ending (SIGTERM) while the
// command waited for Redis: a clean exit, not a failure.
func stoppedWhileWaiting(ctx context.Context, err error) bool {
	return ctx.Err() != nil && errors.Is(err, ctx.Err())
}

// startSystem is how serve and work start: the ops listener first (so that
// /health answers while Redis is awaited), then the system, connected, its
// schema checked. a is nil, with no error, when ctx ended while Redis was
// awaited (a clean exit); stop closes what was opened, on every return.
func startSystem(ctx context.Context, opsAddr string, o system.Options) (a *system.App, ops *opsListener, stop func(), err error) {
	var closers []func()
	stop = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	opsLn, err := listenOps(opsAddr)
	if err != nil {
		return nil, nil, stop, err
	}
	closers = append(closers, func() { opsLn.Close() })
	ops = serveOps(ctx, opsLn)
	a, closeApp, err := system.Connect(ctx, o)
	if stoppedWhileWaiting(ctx, err) {
		return nil, ops, stop, nil
	}
	if err != nil {
		return nil, ops, stop, err
	}
	closers = append(closers, closeApp)
	if err := a.CheckSchema(ctx); err != nil {
		return nil, ops, stop, err
	}
	return a, ops, stop, nil
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/internal/system"
	"github.com/imgflow/imgflow/server"
)

// workOptions configure `imgflow work`.
type workOptions struct {
	system.Options
	// Concurrency (--concurrency, IMGFLOW_CONCURRENCY): jobs and
	// deliveries one process runs at once. Default 10.
	Concurrency int
	// MetricsAddr (--metrics-addr, IMGFLOW_METRICS_ADDR): where this worker
	// serves GET /metrics for Prometheus and GET /health for container
	// healthchecks. Empty (the default) serves neither.
	MetricsAddr string
}

// runWork runs the asynq worker only.
func runWork(ctx context.Context, args []string) error {
	var o workOptions
	fs := newFlagSet("work", "Runs the asynq worker only: compresses jobs and delivers callbacks and hooks.")
	fs.Int(&o.Concurrency, "concurrency", "IMGFLOW_CONCURRENCY", 10, "jobs and deliveries run at once by this process")
	fs.String(&o.MetricsAddr, "metrics-addr", "IMGFLOW_METRICS_ADDR", "", "listen address of this worker's /metrics and /health (off when empty), e.g. :9091")
	fs.Duration(&o.ShutdownTimeout, "shutdown-timeout", "IMGFLOW_SHUTDOWN_TIMEOUT", 30*time.Second, "how long a stopping worker lets running tasks finish before requeueing them")
	addAppFlags(fs, &o.Options)
	addWorkerFlags(fs, &o.Options)
	if err := fs.parse(args); err != nil {
		return err
	}
	if o.ShutdownTimeout <= 0 {
		return errors.New("IMGFLOW_SHUTDOWN_TIMEOUT (--shutdown-timeout) must be positive, e.g. 30s or 2m")
	}
	if err := o.Validate(true); err != nil {
		return err
	}
	if o.Concurrency < 1 {
		return errors.New("IMGFLOW_CONCURRENCY (--concurrency) must be at least 1")
	}
	a, closeApp, err := system.Connect(ctx, o.Options)
	if err != nil {
		return err
	}
	defer closeApp()
	if err := a.CheckSchema(ctx); err != nil {
		return err
	}
	w, err := a.Worker(slog.Default(), o.Concurrency)
	if err != nil {
		return err
	}
	defer w.Close()
	if o.MetricsAddr != "" {
		ln, err := net.Listen("tcp", o.MetricsAddr)
		if err != nil {
			return fmt.Errorf("IMGFLOW_METRICS_ADDR (--metrics-addr) %s: %w", o.MetricsAddr, err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", a.MetricsHandler())
		mux.Handle("GET /health", workerHealth(a.Ping))
		go func() {
			if err := server.ServeHTTP(ctx, ln, mux); err != nil {
				slog.Error("worker metrics endpoint stopped", "addr", o.MetricsAddr, "error", err)
			}
		}()
	}
	a.StartBlobSweeper(ctx, slog.Default())
	slog.Info("imgflow worker started", "concurrency", o.Concurrency, "shutdown_timeout", o.ShutdownTimeout, "queue", o.Queue, "metrics_addr", o.MetricsAddr, "transforms", imaging.Status())
	return w.Run(ctx)
}

// workerHealth answers container healthchecks from the worker's own
// process: 200 while it runs and reaches Redis (where its tasks are), 503
// with the reason otherwise.
func workerHealth(ping func(context.Context) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "application/json")
		if err := ping(ctx); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"status": "unhealthy", "service": "imgflow-worker", "redis": err.Error()})
			return
		}
		io.WriteString(w, `{"status":"healthy","service":"imgflow-worker"}`)
	})
}

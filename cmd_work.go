package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/imgflow/imgflow/connector/imaging"
	"github.com/imgflow/imgflow/internal/system"
)

// workOptions configure `imgflow work`.
type workOptions struct {
	system.Options
	// Concurrency (--concurrency, IMGFLOW_CONCURRENCY): jobs and
	// deliveries one process runs at once. Default 10.
	Concurrency int
	// OpsAddr (--ops-addr, IMGFLOW_OPS_ADDR): where this worker serves
	// GET /metrics, GET /health (liveness: the process answers) and
	// GET /ready (Redis answers). Default :9091.
	OpsAddr string
}

// runWork runs the asynq worker only.
func runWork(ctx context.Context, args []string) error {
	var o workOptions
	fs := newFlagSet("work", "Runs the asynq worker only: compresses jobs and delivers callbacks and hooks.")
	fs.Int(&o.Concurrency, "concurrency", "IMGFLOW_CONCURRENCY", 10, "jobs and deliveries run at once by this process")
	fs.String(&o.OpsAddr, "ops-addr", "IMGFLOW_OPS_ADDR", workOpsAddr, "listen address of this worker's /metrics, /health (the process answers) and /ready (Redis answers)")
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
	a, ops, stop, err := startSystem(ctx, o.OpsAddr, o.Options)
	defer stop()
	if a == nil || err != nil {
		return err
	}
	w, err := a.Worker(slog.Default(), o.Concurrency)
	if err != nil {
		return err
	}
	defer w.Close()
	ops.set(a.OpsHandler(slog.Default(), false))
	a.StartBlobSweeper(ctx, slog.Default())
	slog.Info("imgflow worker started", "concurrency", o.Concurrency, "shutdown_timeout", o.ShutdownTimeout, "queue", o.Queue, "ops_addr", o.OpsAddr, "transforms", imaging.Status())
	return w.Run(ctx)
}

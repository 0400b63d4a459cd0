package main

import (
	"context"
	"log/slog"
)

// workOptions configure `imgflow work`.
type workOptions struct {
	appOptions
	// Concurrency (--concurrency, IMGFLOW_CONCURRENCY): jobs and
	// deliveries one process runs at once. Default 10.
	Concurrency int
}

// runWork runs the asynq worker only.
func runWork(ctx context.Context, args []string) error {
	var o workOptions
	fs := newFlagSet("work", "Runs the asynq worker only: compresses jobs and delivers callbacks and hooks.")
	fs.Int(&o.Concurrency, "concurrency", "IMGFLOW_CONCURRENCY", 10, "jobs and deliveries run at once by this process")
	addAppFlags(fs, &o.appOptions)
	if err := fs.parse(args); err != nil {
		return err
	}
	if err := o.validate(true); err != nil {
		return err
	}
	if o.Concurrency < 1 {
		return errorf("IMGFLOW_CONCURRENCY (--concurrency) must be at least 1")
	}
	rdb, _, closeRedis, err := openRedis(ctx, o.RedisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
	a, err := newApp(o.appOptions, rdb)
	if err != nil {
		return err
	}
	defer a.Close()
	w, err := a.worker(slog.Default(), o.Concurrency)
	if err != nil {
		return err
	}
	defer w.Close()
	slog.Info("imgflow worker started", "concurrency", o.Concurrency, "queue", o.Queue)
	return w.Run(ctx)
}

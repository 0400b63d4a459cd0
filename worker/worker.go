package worker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hibiken/asynq"
)

// Worker serves imgflow's asynq queue: compress tasks and deliveries.
type Worker struct {
	cfg    Config
	log    *slog.Logger
	obs    Observer
	client *asynq.Client
	queue  *Queue
	mux    *asynq.ServeMux

	// afterResultStored, when set (tests only), runs right after a result
	// is stored and before the job is marked completed; an error fails the
	// attempt there, as a crash would.
	afterResultStored func(jobID string) error
	// backoff is the compress retry delay; tests shorten it.
	backoff func(retried int) time.Duration
}

// New checks cfg, fills its defaults and returns a Worker. Close it when
// done.
func New(cfg Config) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	w := &Worker{
		cfg:     cfg,
		log:     cfg.Logger,
		obs:     cfg.Observer,
		client:  asynq.NewClient(cfg.RedisConnOpt),
		backoff: backoff,
	}
	w.queue = NewQueue(w.client, cfg.Queue,
		WithMaxCompressRetries(cfg.MaxCompressRetries),
		WithDeliverySchedule(cfg.DeliverySchedule))
	w.mux = asynq.NewServeMux()
	w.mux.HandleFunc(TypeCompress, w.handleCompress)
	w.mux.HandleFunc(TypeDelivery, w.handleDelivery)
	return w, nil
}

// Handler returns the task handler (the mux of every task type), for tests
// and benchmarks that drive their own asynq.Server.
func (w *Worker) Handler() asynq.Handler { return w.mux }

// Queue returns a Queue on the worker's queue with the worker's retry
// settings; it shares the worker's client.
func (w *Worker) Queue() *Queue { return w.queue }

// RetryDelay is the worker's asynq.RetryDelayFunc: the delivery schedule
// (stretched by a receiver's Retry-After) for deliveries, exponential
// backoff for the rest.
func (w *Worker) RetryDelay(n int, err error, t *asynq.Task) time.Duration {
	if t.Type() == TypeDelivery {
		return deliveryDelay(w.cfg.DeliverySchedule, n, err)
	}
	return w.backoff(n)
}

// Run serves the queue until ctx ends, then shuts down gracefully: it
// stops taking tasks, lets running ones finish for up to ShutdownTimeout
// and puts the rest back on the queue. It returns an error only when the
// server cannot start.
func (w *Worker) Run(ctx context.Context) error {
	srv := asynq.NewServer(w.cfg.RedisConnOpt, asynq.Config{
		Concurrency:              w.cfg.Concurrency,
		Queues:                   map[string]int{w.cfg.Queue: 1},
		TaskCheckInterval:        w.cfg.TaskCheckInterval,
		DelayedTaskCheckInterval: w.cfg.DelayedTaskCheckInterval,
		RetryDelayFunc:           w.RetryDelay,
		ShutdownTimeout:          w.cfg.ShutdownTimeout,
		Logger:                   asynqLogger{w.log},
		LogLevel:                 asynq.WarnLevel,
	})
	if err := srv.Start(w.mux); err != nil {
		return fmt.Errorf("worker: start: %w", err)
	}
	w.log.Info("worker started", "queue", w.cfg.Queue, "concurrency", w.cfg.Concurrency)
	<-ctx.Done()
	w.log.Info("worker stopping", "shutdown_timeout", w.cfg.ShutdownTimeout)
	srv.Shutdown()
	w.log.Info("worker stopped")
	return nil
}

// Close releases the worker's Redis client (used to enqueue deliveries).
func (w *Worker) Close() error { return w.client.Close() }

// asynqLogger hands asynq's own log lines to slog.
type asynqLogger struct{ l *slog.Logger }

func (a asynqLogger) Debug(args ...any) { a.l.Debug(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Info(args ...any)  { a.l.Info(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Warn(args ...any)  { a.l.Warn(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Error(args ...any) { a.l.Error(fmt.Sprint(args...), "component", "asynq") }
func (a asynqLogger) Fatal(args ...any) {
	a.l.Error(fmt.Sprint(args...), "component", "asynq", "fatal", true)
	panic(fmt.Sprint(args...))
}

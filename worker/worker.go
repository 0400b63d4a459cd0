package worker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/app"
)

// Worker serves imgflow's asynq queue: compress tasks and deliveries.
type Worker struct {
	cfg    Config
	log    *slog.Logger
	obs    Observer
	rdb    redis.UniversalClient // the client's connection, also for wake-ups
	wk     *waker                // holds asynq's idle dequeues (wake.go)
	client *asynq.Client
	queue  *Queue
	mux    *asynq.ServeMux

	// crashHook, when set (tests only), is asked after each step of the
	// billing path that a crash could follow ("answered", "kept",
	// "stored"); true stops the attempt there, recording nothing more, as
	// a killed worker would, and asynq retries the task.
	crashHook func(step, jobID string) bool
	// backoff is the compress retry delay; tests shorten it.
	backoff func(retried int) time.Duration
	// recoverEvery is how often orphaned tasks are looked for; tests
	// shorten it.
	recoverEvery time.Duration
	// sweepEvery and unqueuedAfter pace the unqueued-job sweeper
	// (unqueued.go); tests shorten them.
	sweepEvery, unqueuedAfter, makingAfter, runningAfter time.Duration
}

// New checks cfg, fills its defaults and returns a Worker. Close it when
// done.
func New(cfg Config) (*Worker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rdb, err := newRedisClient(cfg.RedisConnOpt)
	if err != nil {
		return nil, err
	}
	w := &Worker{
		cfg:           cfg,
		log:           cfg.Logger,
		obs:           cfg.Observer,
		rdb:           rdb,
		client:        asynq.NewClientFromRedisClient(rdb),
		backoff:       backoff,
		wk:            newWaker(cfg.Queue, cfg.IdleWait),
		recoverEvery:  recoverEvery,
		sweepEvery:    sweepEvery,
		unqueuedAfter: unqueuedAfter,
		makingAfter:   makingAfter,
		runningAfter:  runningAfter,
	}
	w.queue = NewQueue(w.client, cfg.Queue,
		WithMaxCompressRetries(cfg.MaxCompressRetries),
		WithDeliverySchedule(cfg.DeliverySchedule),
		WithWakeUps(rdb))
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
		// A delivery put off by its endpoint goes on as a new task that
		// counts from the attempts made before it.
		return deliveryDelay(w.cfg.DeliverySchedule, n+deliveryRetried(t), err)
	}
	return w.backoff(n)
}

// Run serves the queue until ctx ends, then shuts down gracefully: it
// stops taking tasks, lets running ones finish for up to ShutdownTimeout
// and puts the rest back on the queue. It returns an error only when the
// server cannot start.
func (w *Worker) Run(ctx context.Context) error {
	// asynq's servers share a client of their own with the wake-up hook
	// (see wake.go) on their dequeue script; the rest of what they send is
	// batched (serverClient).
	rdb, err := newRedisClient(w.cfg.RedisConnOpt)
	if err != nil {
		return err
	}
	defer rdb.Close()
	wk := w.wk
	rdb.AddHook(wk)
	listenCtx, stopListening := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListening()
	if err := wk.listen(listenCtx, rdb, wakeChannel(w.cfg.Queue)); err != nil {
		// Without wake-ups the worker still polls every IdleWait.
		w.log.Warn("worker: no wake-ups on enqueue; polling only", "err", err)
	}
	srvs, err := w.startServers(asynqServerClient(rdb, wk))
	if err != nil {
		return err
	}
	w.log.Info("worker started", "queue", w.cfg.Queue, "concurrency", w.cfg.Concurrency, "fetchers", len(srvs))
	// The recoverer (recover.go) uses the worker's own client.
	rec := &abandonedRecoverer{rdb: w.rdb, queue: w.cfg.Queue, log: w.log}
	recCtx, stopRecovering := context.WithCancel(ctx)
	recDone := make(chan struct{})
	go func() { defer close(recDone); rec.run(recCtx, w.recoverEvery) }()
	defer func() { stopRecovering(); <-recDone }()
	if notes, ok := w.cfg.Jobs.(unqueuedLister); ok {
		sw := &unqueuedSweeper{notes: notes, jobs: w.cfg.Jobs, queue: w.queue, rdb: w.rdb,
			inspector: asynq.NewInspectorFromRedisClient(w.rdb), qname: w.cfg.Queue, log: w.log, makingAfter: w.makingAfter}
		if st, ok := w.cfg.Jobs.(app.Store); ok {
			maker := app.New(app.Config{Store: st, Queue: w.queue, Logger: w.log})
			defer maker.Close()
			sw.batches = maker
		}
		if running, ok := w.cfg.Batches.(runningBatches); ok {
			sw.countMissed = func(ctx context.Context, before time.Time) { w.countMissedEnds(ctx, running, before) }
			sw.runningAfter = w.runningAfter
		}
		sweepCtx, stopSweeping := context.WithCancel(ctx)
		sweepDone := make(chan struct{})
		go func() { defer close(sweepDone); sw.run(sweepCtx, w.sweepEvery, w.unqueuedAfter) }()
		defer func() { stopSweeping(); <-sweepDone }()
	}
	<-ctx.Done()
	w.log.Info("worker stopping", "shutdown_timeout", w.cfg.ShutdownTimeout)
	wk.shutdown()
	shutdown(srvs)
	w.log.Info("worker stopped")
	return nil
}

// Close releases the worker's Redis client (used to enqueue deliveries).
func (w *Worker) Close() error {
	w.client.Close() // shares rdb, which it leaves open
	return w.rdb.Close()
}

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

// startServers starts Fetchers asynq servers on rdb that share Concurrency
// (see Config.Fetchers). The first moves due retries and delayed tasks
// every DelayedTaskCheckInterval; the others only every minute, as a
// backstop, since one forwarder per process is enough.
func (w *Worker) startServers(rdb redis.UniversalClient) ([]*asynq.Server, error) {
	n := w.cfg.Fetchers
	srvs := make([]*asynq.Server, 0, n)
	for i := range n {
		forwardEvery := w.cfg.DelayedTaskCheckInterval
		if i > 0 {
			forwardEvery = max(forwardEvery, time.Minute)
		}
		srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
			Concurrency:              (w.cfg.Concurrency + n - 1 - i) / n, // the remainder to the first
			Queues:                   map[string]int{w.cfg.Queue: 1},
			TaskCheckInterval:        w.cfg.TaskCheckInterval,
			DelayedTaskCheckInterval: forwardEvery,
			RetryDelayFunc:           w.RetryDelay,
			ShutdownTimeout:          w.cfg.ShutdownTimeout,
			Logger:                   asynqLogger{w.log},
			LogLevel:                 asynq.WarnLevel,
		})
		if err := srv.Start(w.mux); err != nil {
			shutdown(srvs)
			return nil, fmt.Errorf("worker: start: %w", err)
		}
		srvs = append(srvs, srv)
	}
	return srvs, nil
}

// shutdown stops the servers at once, so that their running tasks share
// one ShutdownTimeout.
func shutdown(srvs []*asynq.Server) {
	var wg sync.WaitGroup
	for _, srv := range srvs {
		wg.Go(srv.Shutdown)
	}
	wg.Wait()
}

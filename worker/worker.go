package worker

import (
	"context"
	"errors"
	"fmt"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
	"log/slog"
	"sync"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"
)

// Worker serves imgflow's asynq queue: compress tasks and deliveries.
type Worker struct {
	cfg   Config
	log   *slog.Logger
	obs   Observer
	rdb   redis.UniversalClient // the client's connection, also for wake-ups
	wk    *waker                // holds asynq's idle dequeues (wake.go)
	dwk   *waker                // the same for the delivery queue
	share *fairShare            // each key's share of the compress workers
	// balances remembers keys' balances for deduplicated repeats
	// (repeatbalance.go).
	balances *balanceMemo
	// sets wakes a responsive set's runs waiting here for its inputs
	// (setsignal.go).
	sets setSignals
	// deliveryShare is each key's share of the delivery workers.
	deliveryShare *fairShare
	// fitRatios learns what the compression API takes off a target's
	// candidate, per type (fit.go).
	fitRatios imaging.Ratios
	client    *asynq.Client
	queue     *Queue
	// fair is the fair dispatcher of compress jobs (dispatch.go); nil on
	// asynq's queue.
	fair *fairQueue
	mux  *asynq.ServeMux

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
	// fairLease, when set, replaces fairLease (and the heartbeat with it):
	// tests shorten it.
	fairLease time.Duration
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
		dwk:           newWaker(DeliveryQueue(cfg.Queue), cfg.IdleWait),
		recoverEvery:  recoverEvery,
		sweepEvery:    sweepEvery,
		unqueuedAfter: unqueuedAfter,
		makingAfter:   makingAfter,
		runningAfter:  runningAfter,
		balances:      &balanceMemo{m: map[string]balanceEntry{}},
	}
	qopts := []QueueOption{WithMaxCompressRetries(cfg.MaxCompressRetries),
		WithDeliverySchedule(cfg.DeliverySchedule), WithWakeUps(rdb)}
	if cfg.Dispatch == DispatchFair {
		w.fair = newFairQueue(rdb, cfg.Queue, cfg.fairLimit)
		if _, ok := cfg.Runs.(connector.RecordOpener); ok && cfg.RecordKeyPrefix != "" {
			w.fair.records = recordKeys{cfg.RecordKeyPrefix, cfg.RecordKeySuffix}
		}
		qopts = append(qopts, withFairQueue(w.fair))
	}
	w.queue = NewQueue(w.client, cfg.Queue, qopts...)
	w.share = &fairShare{local: &localShare{workers: cfg.Concurrency}, rdb: rdb, prefix: "imgflow:share:{" + cfg.Queue + "}:", share: cfg.KeyShare,
		lease: shareLease, parkBase: parkBase}
	w.deliveryShare = &fairShare{rdb: rdb, prefix: "imgflow:share:{" + cfg.Queue + "}:deliveries:", share: cfg.DeliveryKeyShare,
		lease: deliveryShareLease, parkBase: parkBase}
	w.mux = asynq.NewServeMux()
	w.mux.HandleFunc(TypeCompress, w.share.wrap(w.handleCompress, placeCompress(w.jobOwner)))
	w.mux.HandleFunc(TypeDelivery, w.deliveryShare.wrap(w.handleDelivery, placeDelivery(w.jobOwner)))
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
	var parked *waitingError
	if errors.As(err, &parked) {
		return parked.delay
	}
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
	deliveries := DeliveryQueue(w.cfg.Queue)
	rdb.AddHook(w.wk)
	rdb.AddHook(w.dwk)
	listenCtx, stopListening := context.WithCancel(context.WithoutCancel(ctx))
	defer stopListening()
	wakers := map[string]*waker{w.cfg.Queue: w.wk, deliveries: w.dwk}
	if w.fair != nil {
		delete(wakers, w.cfg.Queue) // the fair runner listens itself
	}
	for queue, wk := range wakers {
		if err := wk.listen(listenCtx, rdb, wakeChannel(queue)); err != nil {
			// Without wake-ups the worker still polls every IdleWait.
			w.log.Warn("worker: no wake-ups on enqueue; polling only", "queue", queue, "err", err)
		}
	}
	var srvs []*asynq.Server
	if w.fair == nil {
		if srvs, err = w.startServers(asynqServerClient(rdb, w.wk)); err != nil {
			return err
		}
	}
	// Deliveries run in a pool of their own (DeliveryQueue).
	dsrv, err := w.startServer(asynqServerClient(rdb, w.dwk), deliveries, w.cfg.DeliveryConcurrency, w.cfg.DelayedTaskCheckInterval)
	if err != nil {
		shutdown(srvs)
		return err
	}
	srvs = append(srvs, dsrv)
	// key_share is the limit in force: fair dispatch's (0: none), or the
	// share of asynq's.
	share := w.cfg.KeyShare
	if w.cfg.Dispatch == DispatchFair {
		share = max(w.cfg.fairLimit, 0)
	}
	w.log.Info("worker started", "queue", w.cfg.Queue, "dispatch", w.cfg.Dispatch, "concurrency", w.cfg.Concurrency, "fetchers", len(srvs)-1,
		"delivery_concurrency", w.cfg.DeliveryConcurrency, "key_share", share)
	// The recoverers (recover.go) use the worker's own client.
	recCtx, stopRecovering := context.WithCancel(ctx)
	var recovering sync.WaitGroup
	recovered := []string{w.cfg.Queue, deliveries}
	if w.fair != nil {
		recovered = recovered[1:] // fair dispatch recovers its own leases
		fair := w.fairRunner()
		if err := fair.listen(listenCtx, rdb); err != nil {
			w.log.Warn("worker: no wake-ups on enqueue; polling only", "queue", w.cfg.Queue, "err", err)
		}
		recovering.Go(func() { fair.run(recCtx, w.cfg.ShutdownTimeout) })
	}
	for _, queue := range recovered {
		rec := &abandonedRecoverer{rdb: w.rdb, queue: queue, log: w.log}
		recovering.Go(func() { rec.run(recCtx, w.recoverEvery) })
	}
	defer func() { stopRecovering(); recovering.Wait() }()
	sw := &unqueuedSweeper{jobs: w.cfg.Jobs, queue: w.queue, rdb: w.rdb, fair: w.fair,
		inspector: asynq.NewInspectorFromRedisClient(w.rdb), qname: w.cfg.Queue, log: w.log, makingAfter: w.makingAfter}
	if w.cfg.Batches != nil && w.cfg.Sweeper != nil {
		sw.batches = w.cfg.Sweeper
		sw.countMissed, sw.runningAfter = w.countMissedEnds, w.runningAfter
	}
	sweepCtx, stopSweeping := context.WithCancel(ctx)
	sweepDone := make(chan struct{})
	go func() { defer close(sweepDone); sw.run(sweepCtx, w.sweepEvery, w.unqueuedAfter) }()
	defer func() { stopSweeping(); <-sweepDone }()
	<-ctx.Done()
	w.log.Info("worker stopping", "shutdown_timeout", w.cfg.ShutdownTimeout)
	w.wk.shutdown()
	w.dwk.shutdown()
	shutdown(srvs)
	w.log.Info("worker stopped")
	return nil
}

// Close releases the worker's Redis client (it enqueues deliveries).
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
		// The remainder of Concurrency goes to the first.
		srv, err := w.startServer(rdb, w.cfg.Queue, (w.cfg.Concurrency+n-1-i)/n, forwardEvery)
		if err != nil {
			shutdown(srvs)
			return nil, err
		}
		srvs = append(srvs, srv)
	}
	return srvs, nil
}

// startServer starts one asynq server of concurrency on queue. Every
// server handles every task type, so a task on either queue runs.
func (w *Worker) startServer(rdb redis.UniversalClient, queue string, concurrency int, forwardEvery time.Duration) (*asynq.Server, error) {
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:              concurrency,
		Queues:                   map[string]int{queue: 1},
		TaskCheckInterval:        w.cfg.TaskCheckInterval,
		DelayedTaskCheckInterval: forwardEvery,
		RetryDelayFunc:           w.RetryDelay,
		IsFailure:                isFailure,
		ShutdownTimeout:          w.cfg.ShutdownTimeout,
		Logger:                   asynqLogger{w.log},
		LogLevel:                 asynq.WarnLevel,
	})
	if err := srv.Start(w.mux); err != nil {
		return nil, fmt.Errorf("worker: start %s: %w", queue, err)
	}
	return srv, nil
}

// jobOwner is the owner of job id ("" when it cannot be read: its
// handler finds out why).
func (w *Worker) jobOwner(ctx context.Context, id string) string {
	j, err := w.cfg.Jobs.Get(ctx, id)
	if err != nil || j == nil {
		return ""
	}
	return j.Owner
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

package worker

import (
	"context"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// A job still running when a worker's shutdown grace is up is not given
// to another worker while its run goes on (its fetch, then its upstream
// call, run to the task's deadline whatever the shutdown cancels): a rerun
// beside it would call the upstream a second time. Its lease lapses
// instead, and the job, which its first run completed meanwhile, is
// compressed once.
func TestFairShutdownLeavesAStillRunningJobToItsRun(t *testing.T) {
	h := newFairHarness(t)
	f := &gatedFetcher{png: images.Read(t, "photo.png"), open: make(chan struct{})}
	t.Cleanup(f.release)
	h.cfg.Fetcher = f
	h.cfg.ShutdownTimeout = 100 * time.Millisecond
	h.tweak = func(w *Worker) { w.fairLease = 2 * time.Second }
	_, stop := h.start()
	job := h.newJob(connector.JobInput{Kind: connector.InputURL, URL: "https://images.test/slow/a.png"}, "")
	h.enqueueOf(job.ID, h.owner)
	waitFor(t, "the job's fetch", func() bool { return f.inFlight.Load() == 1 })

	stop() // the grace runs out with the fetch held
	h.start()
	// A rerun would start its own fetch: none may while the first runs.
	time.Sleep(500 * time.Millisecond)
	if n := f.most.Load(); n != 1 {
		t.Fatalf("%d runs of the job at once after its worker's shutdown; want its first run alone", n)
	}
	f.release()
	if j := h.waitJob(job.ID, "the job to complete", finished); j.Status != connector.StatusCompleted {
		t.Fatalf("job: %s %+v", j.Status, j.Error)
	}
	if n := h.comp.Calls(); n != 1 {
		t.Errorf("%d compressions of one job; want one", n)
	}
	// The first run's end could not reach Redis (its worker closed): the
	// lease lapses and a rerun finds the job ended.
	waitFor(t, "fair dispatch to hold nothing", func() bool {
		s, err := h.queue.FairSizes(context.Background())
		return err == nil && s == (FairSizes{})
	})
	if n := h.comp.Calls(); n != 1 {
		t.Errorf("%d compressions of one job after the rerun; want one", n)
	}
}

// At the end of the shutdown grace the runner cancels its jobs: one that
// stops on the cancel is given back at once, first of its key, with no
// retry counted; one that runs on keeps its lease, so no other worker
// runs it beside it.
func TestFairShutdownGivesBackOnlyTheJobsThatStopped(t *testing.T) {
	for name, obeys := range map[string]bool{"stops on the cancel": true, "runs on": false} {
		t.Run(name, func(t *testing.T) {
			q := newTestFairQueue(t, 0)
			mustEnqueue(t, q, "j", "k")
			r := newFairRunner(q, 1, time.Hour)
			r.log = testLogger()
			started, runOn := make(chan struct{}), make(chan struct{})
			t.Cleanup(func() { close(runOn) })
			r.handle = func(ctx context.Context, _ *asynq.Task) error {
				close(started)
				if obeys {
					<-ctx.Done()
					return ctx.Err()
				}
				<-runOn
				return nil
			}
			r.retryAt = func(int) time.Duration { return time.Hour }
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { r.run(ctx, 50*time.Millisecond); close(done) }()
			<-started
			cancel()
			<-done
			again := mustDispatch(t, q, time.Minute)
			switch {
			case obeys && (again == nil || again.jobID != "j" || again.retried != 0):
				t.Fatalf("after the stopped run, dispatched %+v; want j at once, no retry counted", again)
			case !obeys && again != nil:
				t.Fatalf("dispatched %s while its first run goes on", again.jobID)
			}
		})
	}
}

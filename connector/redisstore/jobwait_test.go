package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/redistest"
)

// generous bounds a wait that should end at once; no test measures time.
const generous = 20 * time.Second

type waitResult struct {
	job *connector.Job
	err error
}

func waitInBackground(ctx context.Context, s *Store, id string) <-chan waitResult {
	done := make(chan waitResult, 1)
	go func() {
		job, err := s.Jobs.Wait(ctx, id)
		done <- waitResult{job, err}
	}()
	return done
}

// untilSubscribed blocks until a Wait waits on the job with the shared
// subscription confirmed, so the test exercises the wake-up rather than the
// first read.
func untilSubscribed(t *testing.T, r *redistest.Redis, s *Store, id string) {
	t.Helper()
	deadline := time.Now().Add(generous)
	for !s.Jobs.subscribedFor(id) || r.Client.PubSubNumPat(context.Background()).Val() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Wait never subscribed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestWaitJobReturnsAtOnceForAFinishedJob(t *testing.T) {
	s, _ := newStore(t, Options{})
	job := newJob(t, s, "o", connector.StatusCompleted)
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	got, err := s.Jobs.Wait(ctx, job.ID)
	if err != nil || got.Status != connector.StatusCompleted {
		t.Fatalf("Wait = %v, %v; want the completed job, nil", got, err)
	}
}

func TestWaitJobWakesWhenAnotherWriterFinishesTheJob(t *testing.T) {
	s, r := newStore(t, Options{})
	job := newJob(t, s, "o", connector.StatusQueued)
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	done := waitInBackground(ctx, s, job.ID)
	untilSubscribed(t, r, s, job.ID)

	update := func(status connector.JobStatus) {
		t.Helper()
		_, err := s.Jobs.Update(context.Background(), job.ID, func(j *connector.Job) error {
			j.Status = status
			if status == connector.StatusCompleted {
				j.Result = &connector.JobResult{CompressedSize: 7}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Update(%s): %v", status, err)
		}
	}
	update(connector.StatusProcessing) // not finished: the waiter keeps waiting
	select {
	case res := <-done:
		t.Fatalf("Wait returned %v, %v on a processing job, want it to keep waiting", res.job, res.err)
	default:
	}
	update(connector.StatusCompleted)
	res := <-done
	if res.err != nil || res.job.Status != connector.StatusCompleted || res.job.Result == nil || res.job.Result.CompressedSize != 7 {
		t.Fatalf("Wait = %+v, %v; want the completed job with its result, nil", res.job, res.err)
	}
}

func TestWaitJobReturnsTheCurrentJobAndCtxErrorWhenTheWaitEnds(t *testing.T) {
	s, r := newStore(t, Options{})
	job := newJob(t, s, "o", connector.StatusQueued)

	t.Run("deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		got, err := s.Jobs.Wait(ctx, job.ID)
		if !errors.Is(err, context.DeadlineExceeded) || got == nil || got.ID != job.ID || got.Status != connector.StatusQueued {
			t.Fatalf("Wait = %v, %v; want the queued job and context.DeadlineExceeded", got, err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		done := waitInBackground(ctx, s, job.ID)
		untilSubscribed(t, r, s, job.ID)
		if _, err := s.Jobs.Update(context.Background(), job.ID, func(j *connector.Job) error {
			j.Status = connector.StatusProcessing
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		cancel()
		select {
		case res := <-done:
			if !errors.Is(res.err, context.Canceled) || res.job == nil || res.job.Status != connector.StatusProcessing {
				t.Fatalf("Wait = %v, %v; want the job as it is now (processing) and context.Canceled", res.job, res.err)
			}
		case <-time.After(generous):
			t.Fatal("Wait did not return after its context was cancelled")
		}
	})
}

func TestWaitJobOnUnknownJobIsNotFound(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	_, err := s.Jobs.Wait(ctx, "nope")
	wantCode(t, err, connector.ENOTFOUND)
}

// TestManyWaitersShareOneSubscription: waiting flows cost a map entry, not a
// Redis connection each, and every one of them still wakes.
func TestManyWaitersShareOneSubscription(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	var jobs []*connector.Job
	var waits []<-chan waitResult
	for i := 0; i < 50; i++ {
		job := newJob(t, s, "o", connector.StatusQueued)
		jobs = append(jobs, job)
		waits = append(waits, waitInBackground(ctx, s, job.ID))
	}
	for _, job := range jobs {
		untilSubscribed(t, r, s, job.ID)
	}
	if r.Mini != nil { // a shared real Redis may carry other patterns
		if n := r.Client.PubSubNumPat(ctx).Val(); n != 1 {
			t.Errorf("%d pattern subscriptions for 50 waiters, want 1", n)
		}
	}
	for _, job := range jobs {
		if _, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusCompleted; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	for i, w := range waits {
		if res := <-w; res.err != nil || res.job.Status != connector.StatusCompleted {
			t.Fatalf("waiter %d = %v, %v; want its completed job", i, res.job, res.err)
		}
	}
}

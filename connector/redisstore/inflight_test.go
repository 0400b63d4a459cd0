package redisstore

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

func TestAdmitJobHoldsTheLimitUnderConcurrentRequests(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	var admitted, refused atomic.Int32
	var wg sync.WaitGroup
	for range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Jobs.Admit(ctx, "tenant-a", uuid.Must(uuid.NewV7()).String(), 5)
			switch connector.ErrorCodeOf(err) {
			case "":
				admitted.Add(1)
			case connector.ETOOMANY:
				refused.Add(1)
				var e *connector.Error
				if !errors.As(err, &e) || e.RetryAfter <= 0 {
					t.Errorf("refusal %v has no Retry-After", err)
				}
			default:
				t.Errorf("Admit: %v", err)
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 5 || refused.Load() != 35 {
		t.Fatalf("admitted %d, refused %d of 40 with limit 5; want 5 and 35", admitted.Load(), refused.Load())
	}
	// Another key has its own places.
	if err := s.Jobs.Admit(ctx, "tenant-b", uuid.Must(uuid.NewV7()).String(), 5); err != nil {
		t.Fatalf("another key refused: %v", err)
	}
}

func TestFinishingOrDeletingAJobFreesItsPlace(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	a := newJob(t, s, "tenant", connector.StatusQueued)
	b := newJob(t, s, "tenant", connector.StatusQueued)
	for _, j := range []*connector.Job{a, b} {
		if err := s.Jobs.Admit(ctx, "tenant", j.ID, 2); err != nil {
			t.Fatalf("Admit: %v", err)
		}
	}
	wantCode(t, s.Jobs.Admit(ctx, "tenant", "third", 2), connector.ETOOMANY)
	// Running is not finished: the place stays taken.
	if _, err := s.Jobs.Update(ctx, a.ID, func(j *connector.Job) error { j.Status = connector.StatusProcessing; return nil }); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Jobs.Admit(ctx, "tenant", "third", 2), connector.ETOOMANY)
	if _, err := s.Jobs.Update(ctx, a.ID, func(j *connector.Job) error { j.Status = connector.StatusCompleted; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Jobs.Admit(ctx, "tenant", "third", 2); err != nil {
		t.Fatalf("after a job finished: %v", err)
	}
	wantCode(t, s.Jobs.Admit(ctx, "tenant", "fourth", 2), connector.ETOOMANY)
	if err := s.Jobs.Delete(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Jobs.Admit(ctx, "tenant", "fourth", 2); err != nil {
		t.Fatalf("after a job was deleted: %v", err)
	}
	if err := s.Jobs.Release(ctx, "tenant", "fourth"); err != nil {
		t.Fatal(err)
	}
	if err := s.Jobs.Admit(ctx, "tenant", "fifth", 2); err != nil {
		t.Fatalf("after a release: %v", err)
	}
}

func TestStalePlacesArePrunedAtTheirDeadline(t *testing.T) {
	var mu sync.Mutex
	now := time.Now() // real time: the set expires by the same clock in Redis
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, _ := newStore(t, Options{InflightTTL: time.Hour, Now: clock})
	ctx := context.Background()
	// A place nobody frees (its process died before the job was made).
	if err := s.Jobs.Admit(ctx, "tenant", "lost", 1); err != nil {
		t.Fatal(err)
	}
	wantCode(t, s.Jobs.Admit(ctx, "tenant", "next", 1), connector.ETOOMANY)
	mu.Lock()
	now = now.Add(time.Hour + time.Second)
	mu.Unlock()
	if err := s.Jobs.Admit(ctx, "tenant", "next", 1); err != nil {
		t.Fatalf("a place past its deadline still counts: %v", err)
	}
}

// A job's making prunes places past their deadline only when they would
// make the owner full: the stale place frees room for the next job.
func TestMakingAJobPrunesStalePlacesWhenFull(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, r := newStore(t, Options{InflightTTL: time.Hour, Now: clock})
	ctx := context.Background()
	mk := func(id string) error {
		return s.Jobs.CreateWithInput(ctx, &connector.Job{ID: id, Status: connector.StatusQueued, Owner: "tenant",
			Input: connector.JobInput{Kind: connector.InputBase64}}, bytes.NewReader([]byte("png")), time.Hour, 2)
	}
	// Two places nobody frees (their processes died before the jobs ran).
	if err := s.Jobs.Admit(ctx, "tenant", "lost-1", 2); err != nil {
		t.Fatal(err)
	}
	if err := s.Jobs.Admit(ctx, "tenant", "lost-2", 2); err != nil {
		t.Fatal(err)
	}
	first := uuid.Must(uuid.NewV7()).String()
	wantCode(t, mk(first), connector.ETOOMANY)
	mu.Lock()
	now = now.Add(time.Hour + time.Second)
	mu.Unlock()
	if err := mk(first); err != nil {
		t.Fatalf("places past their deadline still count: %v", err)
	}
	held, err := r.Client.ZCard(ctx, s.Jobs.keys.inflight("tenant")).Result()
	if err != nil || held != 1 {
		t.Fatalf("places: expected the new job's alone after the prune, got %d, %v", held, err)
	}
}

// A job made without a cap holds no place, and its end sends no ZREM for
// one (a place planted for its id stays); a job made under a cap has its
// place freed by its end.
func TestAJobMadeWithoutACapFreesNoPlaceAtItsEnd(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	set := s.Jobs.keys.inflight("tenant")
	for _, limit := range []int{0, 5} {
		job := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued, Owner: "tenant",
			Input: connector.JobInput{Kind: connector.InputBase64}}
		if err := s.Jobs.CreateWithInput(ctx, job, bytes.NewReader([]byte("png")), time.Hour, limit); err != nil {
			t.Fatal(err)
		}
		stored, err := s.Jobs.Get(ctx, job.ID)
		if err != nil || stored.Unplaced != (limit == 0) {
			t.Fatalf("cap %d: expected Unplaced %v, got %+v, %v", limit, limit == 0, stored, err)
		}
		if limit == 0 {
			r.Client.ZAdd(ctx, set, redis.Z{Score: float64(time.Now().Add(time.Hour).UnixMilli()), Member: job.ID})
		}
		if _, _, err := s.Runs.Finish(ctx, job.ID, 0, func(j *connector.Job) { j.Status = connector.StatusCompleted }); err != nil {
			t.Fatal(err)
		}
		_, err = r.Client.ZScore(ctx, set, job.ID).Result()
		if held := err == nil; held != (limit == 0) {
			t.Fatalf("cap %d: expected the place held after the end: %v, got %v (%v)", limit, limit == 0, held, err)
		}
	}
}

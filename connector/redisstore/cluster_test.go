package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/blobtest"
	"github.com/imgflow/imgflow/internal/redistest"
)

// TestEveryStoreOperationWorksOnARedisCluster runs the store against a real
// three-master cluster: any WATCH, MULTI or pipeline that spanned slots
// would fail there with CROSSSLOT, and a ?wait waiter subscribed on one node
// must hear a job finished on another.
func TestEveryStoreOperationWorksOnARedisCluster(t *testing.T) {
	c := redistest.NewCluster(t)
	s := New(c.Client, Options{Prefix: c.Prefix})
	ctx := context.Background()

	// Jobs of one owner spread over the masters.
	var jobs []*connector.Job
	nodes := map[string]bool{}
	for range 12 {
		j := newJob(t, s, "owner-a", connector.StatusQueued)
		jobs = append(jobs, j)
		m, err := c.Client.MasterForKey(ctx, s.conn.keys.job(j.ID))
		if err != nil {
			t.Fatal(err)
		}
		nodes[m.Options().Addr] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("12 jobs all landed on %v; the test needs them on several nodes", nodes)
	}
	// The sweeper's read of many records: one MGET on a single Redis
	// would be CROSSSLOT here.
	gone := uuid.NewString()
	got, errs := s.Jobs.GetMany(ctx, []string{jobs[0].ID, gone, jobs[11].ID})
	if got[0] == nil || got[0].ID != jobs[0].ID || got[2] == nil || got[2].ID != jobs[11].ID || errs[0] != nil || errs[2] != nil ||
		got[1] != nil || connector.ErrorCodeOf(errs[1]) != connector.ENOTFOUND {
		t.Fatalf("GetMany on the cluster = %v, %v; want both jobs and ENOTFOUND for the one gone", got, errs)
	}
	page, err := s.Jobs.List(ctx, "owner-a", connector.JobFilter{Limit: 5})
	if err != nil || len(page.Jobs) != 5 || page.Jobs[0].ID != jobs[11].ID || page.NextCursor == "" {
		t.Fatalf("List on the cluster = %+v, %v; want the 5 newest and a cursor", page, err)
	}

	// Every job finished through Update wakes its waiter, wherever the
	// job's slot and the shared subscription live.
	for _, j := range jobs {
		wctx, cancel := context.WithTimeout(ctx, generous)
		done := make(chan waitResult, 1)
		go func() { job, err := s.Jobs.Wait(wctx, j.ID); done <- waitResult{job, err} }()
		for !s.Jobs.subscribedFor(j.ID) {
			select {
			case res := <-done:
				t.Fatalf("Wait returned early: %v, %v", res.job, res.err)
			case <-time.After(5 * time.Millisecond):
			}
		}
		if _, err := s.Jobs.Update(ctx, j.ID, func(j *connector.Job) error { j.Status = connector.StatusCompleted; return nil }); err != nil {
			t.Fatalf("Update on the cluster: %v", err)
		}
		res := <-done
		cancel()
		if res.err != nil || res.job.Status != connector.StatusCompleted {
			t.Fatalf("Wait on the cluster = %v, %v; want completed (woken across nodes)", res.job, res.err)
		}
	}
	if err := s.Jobs.Delete(ctx, jobs[0].ID); err != nil {
		t.Fatalf("Delete on the cluster: %v", err)
	}

	if _, ok, err := s.Idempotency.Reserve(ctx, "owner-a", "k", "fp", "job-a"); err != nil || !ok {
		t.Fatalf("Reserve on the cluster = %v, %v", ok, err)
	}
	if held, err := s.Idempotency.Complete(ctx, "owner-a", "k", "job-a", jobs[1].ID); err != nil || !held {
		t.Fatalf("Complete on the cluster = %v, %v", held, err)
	}
	if _, ok, _ := s.Idempotency.Reserve(ctx, "owner-b", "k2", "fp", "job-b"); !ok {
		t.Fatal("second owner could not reserve")
	}
	if err := s.Idempotency.Release(ctx, "owner-b", "k2", "job-b"); err != nil {
		t.Fatalf("Release on the cluster: %v", err)
	}

	h := &connector.Hook{ID: uuid.NewString(), TargetURL: "https://hooks.example/x", Event: connector.EventJobFinished, Owner: "owner-a"}
	if err := s.Hooks.Create(ctx, h); err != nil {
		t.Fatalf("Create on the cluster: %v", err)
	}
	if err := s.Hooks.Disable(ctx, h.ID); err != nil {
		t.Fatalf("Disable on the cluster: %v", err)
	}
	if hooks, err := s.Hooks.List(ctx, "owner-a"); err != nil || len(hooks) != 1 || !hooks[0].Disabled {
		t.Fatalf("List on the cluster = %v, %v", hooks, err)
	}
	if err := s.Hooks.Delete(ctx, "owner-a", h.ID); err != nil {
		t.Fatalf("Delete on the cluster: %v", err)
	}
	if err := s.Accounts.Cache(ctx, "owner-a", &connector.Account{Valid: true}, generous); err != nil {
		t.Fatalf("Cache on the cluster: %v", err)
	}

	t.Run("blobs", func(t *testing.T) {
		blobtest.Run(t, func(t *testing.T) connector.BlobStore {
			return New(c.Client, Options{Prefix: c.Prefix + uuid.NewString()[:8] + ":"}).Blobs
		})
	})
}

package redisstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// hashTag is the part of key Redis Cluster hashes: the first non-empty {...}.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

func TestKeysOfAJobOrAnOwnerShareOneClusterSlot(t *testing.T) {
	s := New(nil, Options{})
	id, owner := uuid.Must(uuid.NewV7()).String(), "0f1e2d3c"
	for _, k := range []string{s.jobKey(id), s.doneChannel(id), s.blobKey(connector.InputBlobKey(id)), s.blobKey(connector.OutputBlobKey(id))} {
		if got := hashTag(k); got != id {
			t.Errorf("key %q hashes on %q, want the job id %q", k, got, id)
		}
	}
	for _, k := range []string{s.jobIndexKey(owner), s.Idempotency.idemKey(owner, "retry-{1}"), s.Accounts.acctKey(owner), s.hookIndexKey(owner)} {
		if got := hashTag(k); got != owner {
			t.Errorf("key %q hashes on %q, want the owner %q", k, got, owner)
		}
	}
}

// TestUpgradeKeepsRecordsOfTheUntaggedLayout writes what a version before
// the hash tags left in Redis and uses it through the store.
func TestUpgradeKeepsRecordsOfTheUntaggedLayout(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	owner := "owner1"
	job := &connector.Job{
		ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued, Owner: owner,
		Input: connector.JobInput{Kind: connector.InputBase64}, CreatedAt: time.Now(), UpdatedAt: time.Now(),
	}
	data, _ := encodeJob(job)
	hook := &connector.Hook{ID: "h1", TargetURL: "https://example.com/h", Event: connector.EventJobFinished, Owner: owner, CreatedAt: time.Now()}
	hookData, _ := encodeHook(hook)
	idem, _ := json.Marshal(storedIdem{IdempotencyRecord: connector.IdempotencyRecord{Fingerprint: "fp", JobID: job.ID}, ReservedAt: time.Now()})
	old := r.Client.Pipeline()
	old.Set(ctx, r.Prefix+"job:"+job.ID, data, time.Hour)
	old.ZAdd(ctx, r.Prefix+"jobs:"+owner, redis.Z{Member: job.ID})
	old.Set(ctx, r.Prefix+"blob:in:"+job.ID, "input bytes", time.Hour)
	old.Set(ctx, r.Prefix+"idem:"+owner+":k1", idem, time.Hour)
	old.Set(ctx, r.Prefix+"hook:h1", hookData, 0)
	old.SAdd(ctx, r.Prefix+"hooks:"+owner, "h1")
	if _, err := old.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	newer := newJob(t, s, owner, connector.StatusQueued)

	page, err := s.Jobs.ListJobs(ctx, owner, connector.JobFilter{})
	if err != nil {
		t.Fatalf("ListJobs: %v", err)
	}
	if len(page.Jobs) != 2 || page.Jobs[0].ID != newer.ID || page.Jobs[1].ID != job.ID {
		t.Fatalf("ListJobs after upgrade = %v, want the new job then the old one %s", jobIDs(page.Jobs), job.ID)
	}
	got, err := s.Jobs.UpdateJob(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusProcessing; return nil })
	if err != nil || got.Status != connector.StatusProcessing {
		t.Fatalf("UpdateJob of the old job = %v, %v; want processing", got, err)
	}
	if ttl := r.Client.TTL(ctx, s.jobKey(job.ID)).Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("adopted job TTL = %v, want the old record's (≤ 1h)", ttl)
	}
	blob, err := connector.ReadBlob(ctx, s.Blobs, connector.InputBlobKey(job.ID))
	if err != nil || string(blob) != "input bytes" {
		t.Fatalf("GetBlob of the old input = %q, %v", blob, err)
	}
	rec, reserved, err := s.Idempotency.ReserveIdempotencyKey(ctx, owner, "k1", "fp", "job-new")
	if err != nil || reserved || rec.JobID != job.ID {
		t.Fatalf("Reserve of a key used before the upgrade = %+v, reserved %v, %v; want a replay of %s", rec, reserved, err, job.ID)
	}
	hooks, err := s.Hooks.ListHooks(ctx, owner)
	if err != nil || len(hooks) != 1 || hooks[0].ID != "h1" {
		t.Fatalf("ListHooks after upgrade = %v, %v; want h1", hooks, err)
	}
	if err := s.Hooks.DisableHook(ctx, "h1"); err != nil {
		t.Fatalf("DisableHook of the old hook: %v", err)
	}
	if n := r.Client.Exists(ctx, r.Prefix+"job:"+job.ID, r.Prefix+"jobs:"+owner, r.Prefix+"hook:h1", r.Prefix+"hooks:"+owner).Val(); n != 0 {
		t.Errorf("%d untagged keys left after use, want 0 (moved)", n)
	}
}

// An older process still running in a rolling upgrade finishes a job
// (adopted earlier by a new one, so it writes the tagged record through a
// new store here) but announces it on the untagged channel.
func TestWaitWakesOnAnUntaggedDoneMessage(t *testing.T) {
	s, r := newStore(t, Options{})
	job := newJob(t, s, "o", connector.StatusQueued)
	ctx, cancel := context.WithTimeout(context.Background(), generous)
	defer cancel()
	done := waitInBackground(ctx, s, job.ID)
	untilSubscribed(t, r, s, job.ID)
	job.Status = connector.StatusCompleted
	data, _ := encodeJob(job)
	r.Client.Set(ctx, s.jobKey(job.ID), data, time.Hour)
	r.Client.Publish(ctx, r.Prefix+"done:"+job.ID, "completed")
	res := <-done
	if res.err != nil || res.job.Status != connector.StatusCompleted {
		t.Fatalf("WaitJob = %v, %v; want the completed job", res.job, res.err)
	}
}

func jobIDs(jobs []*connector.Job) []string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	return ids
}

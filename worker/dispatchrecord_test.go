package worker

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/fixtures/images"
)

// recordReads counts the reads of one key a client sends (GET, alone or
// in a pipeline).
type recordReads struct {
	key string
	mu  sync.Mutex
	n   int
}

func (c *recordReads) count(cmds ...redis.Cmder) {
	for _, cmd := range cmds {
		if args := cmd.Args(); len(args) == 2 && strings.EqualFold(cmd.Name(), "get") && args[1] == c.key {
			c.mu.Lock()
			c.n++
			c.mu.Unlock()
		}
	}
}

func (c *recordReads) reads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func (c *recordReads) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *recordReads) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.count(cmd); return next(ctx, cmd) }
}
func (c *recordReads) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.count(cmds...); return next(ctx, cmds) }
}

// On fair dispatch with the records' keys known (one Redis), a job is
// handed out with its record: its run starts it with no read of its own,
// its upload opened beside the start, and it completes as it would.
// Without them (a cluster) the run reads the record itself.
func TestADispatchedJobStartsFromTheRecordItsDispatchRead(t *testing.T) {
	if !onFair() {
		t.Skip("fair dispatch only")
	}
	for _, withRecords := range []bool{true, false} {
		h := newHarness(t)
		if !withRecords {
			h.cfg.RecordKeyPrefix, h.cfg.RecordKeySuffix = "", ""
		}
		h.start()
		data := images.Read(t, "photo.webp")
		job := h.newJob(connector.JobInput{Kind: connector.InputUpload, Filename: "holiday.jpeg"}, "")
		ctx := context.Background()
		if err := h.store.Blobs.Put(ctx, connector.InputBlobKey(job.ID), bytes.NewReader(data), int64(len(data)), 0); err != nil {
			t.Fatal(err)
		}
		prefix, suffix, _ := h.store.Jobs.RecordKeyAround()
		reads := &recordReads{key: prefix + job.ID + suffix}
		h.redis.Client.AddHook(reads)
		h.enqueue(job.ID)
		got := waitOnOwnClient(t, h, job.ID)
		if got.Status != connector.StatusCompleted || got.Runs != 1 {
			t.Fatalf("records at dispatch %v: job %s after %d runs (error %+v), want completed in 1", withRecords, got.Status, got.Runs, got.Error)
		}
		if out, err := connector.ReadBlob(ctx, h.store.Blobs, connector.OutputBlobKey(job.ID)); err != nil || !bytes.Equal(out, data) {
			t.Errorf("records at dispatch %v: output %d bytes, %v; want the %d compressed", withRecords, len(out), err, len(data))
		}
		if n := reads.reads(); withRecords && n != 0 || !withRecords && n == 0 {
			t.Errorf("records at dispatch %v: the run read the record %d times, want %s",
				withRecords, n, map[bool]string{true: "never", false: "at least once"}[withRecords])
		}
	}
}

// waitOnOwnClient waits for job id to finish, reading it on a client of
// its own: the harness's client counts the worker's reads alone.
func waitOnOwnClient(t *testing.T, h *harness, id string) *connector.Job {
	t.Helper()
	opts, err := redis.ParseURL(h.redis.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	jobs := redisstore.New(c, redisstore.Options{Prefix: h.redis.Prefix}).Jobs
	deadline := time.Now().Add(20 * time.Second)
	for {
		job, err := jobs.Get(context.Background(), id)
		if err != nil {
			t.Fatalf("job %s: %v", id, err)
		}
		if job.Status.Finished() {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after 20 s", id, job.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

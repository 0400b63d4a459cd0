package worker

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/fixtures/images"
)

// readsOf counts in n the GETs of key a client sends, alone or in a
// pipeline.
func readsOf(key string, n *atomic.Int32) onCommand {
	return func(cmd redis.Cmder) {
		if args := cmd.Args(); len(args) == 2 && strings.EqualFold(cmd.Name(), "get") && args[1] == key {
			n.Add(1)
		}
	}
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
		var reads atomic.Int32
		h.redis.Client.AddHook(readsOf(prefix+job.ID+suffix, &reads))
		h.enqueue(job.ID)
		got := h.waitJobOn(ownClientJobs(t, h), job.ID, "finished", finished)
		if got.Status != connector.StatusCompleted || got.Runs != 1 {
			t.Fatalf("records at dispatch %v: job %s after %d runs (error %+v), want completed in 1", withRecords, got.Status, got.Runs, got.Error)
		}
		if out, err := connector.ReadBlob(ctx, h.store.Blobs, connector.OutputBlobKey(job.ID)); err != nil || !bytes.Equal(out, data) {
			t.Errorf("records at dispatch %v: output %d bytes, %v; want the %d compressed", withRecords, len(out), err, len(data))
		}
		if n := reads.Load(); withRecords && n != 0 || !withRecords && n == 0 {
			t.Errorf("records at dispatch %v: the run read the record %d times, want %s",
				withRecords, n, map[bool]string{true: "never", false: "at least once"}[withRecords])
		}
	}
}

// ownClientJobs is the harness's jobs store on a client of its own: reads
// through it are not the harness's client's.
func ownClientJobs(t *testing.T, h *harness) *redisstore.Jobs {
	t.Helper()
	opts, err := redis.ParseURL(h.redis.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return redisstore.New(c, redisstore.Options{Prefix: h.redis.Prefix}).Jobs
}

package redisstore

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/redistest"
)

// testQueue is a MakingQueue whose enqueue pushes "id owner arg" on one
// list, so a test sees what was queued and with what.
func testQueue(r *redistest.Redis) MakingQueue {
	return MakingQueue{
		Lua: `
local function enqueue(k, id, owner, a)
  redis.call('RPUSH', k[1], id .. ' ' .. owner .. ' ' .. a[1])
  return 1
end
`,
		Keys: func(owner string) []string { return []string{r.Prefix + "test-queue"} },
		Args: []any{"wake"},
	}
}

func makingJob(owner string) *connector.Job {
	return &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued, Owner: owner,
		Input: connector.JobInput{Kind: connector.InputBase64}}
}

// A store that queues at making writes, lists and queues a job in one
// script, leaving no note for the sweeper; a refusal leaves nothing of the
// job, queued or not; an id made already is answered ErrJobExists and is
// not queued twice, its place not taken twice.
func TestMakingQueuesTheJobInItsOwnScript(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	if !s.Jobs.QueueAtMaking(testQueue(r)) || !s.Jobs.QueuesAtMaking() {
		t.Fatal("a single Redis refused to queue at making")
	}
	queued := func() []string {
		t.Helper()
		got, err := r.Client.LRange(ctx, r.Prefix+"test-queue", 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// A first making loads the script (NOSCRIPT, then EVALSHA again).
	if err := s.Jobs.CreateWithInput(ctx, makingJob("warm"), nil, time.Hour, 2); err != nil {
		t.Fatal(err)
	}
	r.Client.Del(ctx, r.Prefix+"test-queue")
	var sent commandLog
	r.Client.AddHook(&sent)
	job := makingJob("o1")
	if err := s.Jobs.CreateWithInput(ctx, job, bytes.NewReader([]byte("image bytes")), time.Hour, 2); err != nil {
		t.Fatal(err)
	}
	if sent.mu.Lock(); strings.Join(sent.names, " ") != "set evalsha" {
		t.Errorf("the making sent %v, want the input's SET and one script (making and queueing in one)", sent.names)
	}
	sent.mu.Unlock()
	if got := queued(); len(got) != 1 || got[0] != job.ID+" o1 wake" {
		t.Fatalf("queued %q, want the job once, with its owner and the queue's argument", got)
	}
	if got, err := s.Jobs.Get(ctx, job.ID); err != nil || got.Status != connector.StatusQueued {
		t.Fatalf("record = %+v, %v", got, err)
	}
	if b, err := s.Blobs.Open(ctx, connector.InputBlobKey(job.ID)); err != nil {
		t.Errorf("input: %v", err)
	} else {
		b.Close()
	}
	if ids, err := s.Jobs.Unqueued(ctx, time.Now().Add(time.Hour), 10); err != nil || len(ids) != 0 {
		t.Errorf("notes for the sweeper = %v, %v; want none: the job was queued with its making", ids, err)
	}
	if page, err := s.Jobs.List(ctx, "o1", connector.JobFilter{}); err != nil || len(page.Jobs) != 1 {
		t.Errorf("listing = %+v, %v; want the job", page, err)
	}

	// The same id again (a request's planned id, made by another):
	// answered as made, queued once, one place.
	again := *job
	if err := s.Jobs.CreateWithInput(ctx, &again, bytes.NewReader([]byte("image bytes")), time.Hour, 2); !errors.Is(err, connector.ErrJobExists) {
		t.Fatalf("making an id made already = %v, want ErrJobExists", err)
	}
	if got := queued(); len(got) != 1 {
		t.Errorf("queued %q after the id was made again, want it once", got)
	}
	if n, _ := r.Client.ZCard(ctx, s.Jobs.keys.inflight("o1")).Result(); n != 1 {
		t.Errorf("o1 holds %d places, want 1", n)
	}

	// Full: the refused job leaves no record, input, listing entry, place
	// or queued entry.
	second := makingJob("o1")
	if err := s.Jobs.CreateWithInput(ctx, second, nil, time.Hour, 2); err != nil {
		t.Fatal(err)
	}
	refused := makingJob("o1")
	err := s.Jobs.CreateWithInput(ctx, refused, bytes.NewReader([]byte("image bytes")), time.Hour, 2)
	wantCode(t, err, connector.ETOOMANY)
	if _, err := s.Jobs.Get(ctx, refused.ID); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("refused job's record: %v", err)
	}
	if n, _ := r.Client.Exists(ctx, s.Jobs.keys.blob(connector.InputBlobKey(refused.ID))).Result(); n != 0 {
		t.Error("the refused job's input stayed")
	}
	if got := queued(); len(got) != 2 || got[1] != second.ID+" o1 wake" {
		t.Errorf("queued %q, want the two admitted jobs only", got)
	}
	if page, _ := s.Jobs.List(ctx, "o1", connector.JobFilter{}); len(page.Jobs) != 2 {
		t.Errorf("listing holds %d jobs, want the 2 admitted", len(page.Jobs))
	}
}

// The making script is loaded again when Redis forgot it (a restart, SCRIPT
// FLUSH), and the input written beside it is not written twice.
func TestMakingQueuedSurvivesAScriptFlush(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	s.Jobs.QueueAtMaking(testQueue(r))
	for i := range 2 {
		if err := r.Client.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		job := makingJob("o1")
		var input connector.Bytes
		if i == 1 {
			input = bytes.NewReader([]byte("image bytes"))
		}
		if err := s.Jobs.CreateWithInput(ctx, job, input, time.Hour, 0); err != nil {
			t.Fatalf("making %d after SCRIPT FLUSH: %v", i, err)
		}
	}
	if n, _ := r.Client.LLen(ctx, r.Prefix+"test-queue").Result(); n != 2 {
		t.Errorf("%d jobs queued, want 2", n)
	}
}

// A Redis Cluster keeps the making and the queueing apart: the queue's
// keys are in a slot of their own.
func TestAClusterDoesNotQueueAtMaking(t *testing.T) {
	c := redistest.NewCluster(t)
	s := New(c.Client, Options{Prefix: c.Prefix})
	if s.Jobs.QueueAtMaking(MakingQueue{Lua: "local function enqueue() end", Keys: func(string) []string { return nil }}) || s.Jobs.QueuesAtMaking() {
		t.Fatal("a cluster store took a making queue")
	}
}

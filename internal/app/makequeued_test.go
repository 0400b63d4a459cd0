package app_test

import (
	"context"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/app"
)

// queueAtMaking makes the fixture's store queue each job in its making's
// script, on a list the test reads (makingQueued).
func (f *fixture) queueAtMaking() {
	f.t.Helper()
	ok := f.store.Jobs.QueueAtMaking(redisstore.MakingQueue{
		Lua:  "local function enqueue(k, id, owner, a) redis.call('RPUSH', k[1], id) end\n",
		Keys: func(string) []string { return []string{f.r.Prefix + "making-queue"} },
	})
	if !ok {
		f.t.Fatal("the store refused to queue at making")
	}
}

func (f *fixture) makingQueued() []string {
	f.t.Helper()
	ids, err := f.r.Client.LRange(context.Background(), f.r.Prefix+"making-queue", 0, -1).Result()
	if err != nil {
		f.t.Fatal(err)
	}
	return ids
}

// A store that queues at making: the service does not queue the job again,
// and a request that waits is told the id before the making, which may
// hand the job to a worker at once.
func TestJobQueuedAtMakingIsQueuedOnceAndWatchedBeforeIt(t *testing.T) {
	f := newFixture(t)
	f.queueAtMaking()
	ctx := context.Background()
	s := f.service(nil)
	r := keyedJob("key")
	var told string
	r.BeforeQueue = func(id string) {
		told = id
		if _, err := f.store.Jobs.Get(ctx, id); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
			t.Errorf("the job existed (%v) when the request was told its id: its finish could be missed", err)
		}
	}
	job, replay, err := s.CreateJob(ctx, r)
	if err != nil || replay {
		t.Fatalf("CreateJob = %v, %v", replay, err)
	}
	if told != job.ID {
		t.Errorf("BeforeQueue was told %q, want %s", told, job.ID)
	}
	if q := f.makingQueued(); len(q) != 1 || q[0] != job.ID {
		t.Errorf("queued at making %v, want %s", q, job.ID)
	}
	if q := f.queue.ids(); len(q) != 0 {
		t.Errorf("the service queued %v again", q)
	}
}

// startedThenLost is the store whose making goes through, its job queued
// and started by a worker, while its answer is lost (Redis unreachable as
// it answers).
type startedThenLost struct{ *redisstore.Jobs }

func (l startedThenLost) CreateWithInput(ctx context.Context, job *connector.Job, input connector.Bytes, ttl time.Duration, limit int) error {
	if err := l.Jobs.CreateWithInput(ctx, job, input, ttl, limit); err != nil {
		return err
	}
	if _, err := l.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusProcessing; return nil }); err != nil {
		return err
	}
	return &connector.Error{Code: connector.EUNAVAILABLE, Message: "storage unavailable"}
}

// A making whose answer is lost, its job queued with it and started by a
// worker meanwhile, is the request's job: the answer is that job (as when
// an enqueue's answer is lost), not a 503 that would make a retry make a
// second one.
func TestJobQueuedAtMakingWhoseAnswerIsLostAfterItStartedIsMade(t *testing.T) {
	f := newFixture(t)
	f.queueAtMaking()
	ctx := context.Background()
	s := f.service(func(c *app.Config) { c.Jobs = startedThenLost{f.store.Jobs} })
	job, replay, err := s.CreateJob(ctx, &app.JobRequest{Owner: "o1", Key: "k", Input: urlItems(1)[0]})
	if err != nil || replay || job == nil {
		t.Fatalf("CreateJob = %+v, %v, %v; want the started job", job, replay, err)
	}
	if got, err := f.store.Jobs.Get(ctx, job.ID); err != nil || got.Status != connector.StatusProcessing {
		t.Fatalf("the job = %+v, %v; want it kept, processing", got, err)
	}
	if q := f.makingQueued(); len(q) != 1 || q[0] != job.ID {
		t.Errorf("queued at making %v, want %s once", q, job.ID)
	}
}

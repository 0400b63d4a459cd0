package asynqext_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/asynqext"
)

// The contracts: each assumption asynqext makes about asynq's private
// layout, proved on the asynq linked (pinned) through its public client,
// server and inspector. Run them with a real Redis too (REDIS_URL).

func TestLinkedAsynqIsTheVerifiedVersion(t *testing.T) { pinned(t) }

// An enqueue of a task to run now sends one kind of script, which ScriptOf
// tells as the Enqueue (worker/wakehook.go pipelines its wake-up with
// it); the task's id is on the pending list, its hash reads pending, the
// queue is in the queues set, and KeyPattern matches its keys.
func TestEnqueuedTaskIsPendingUnderThePendingKey(t *testing.T) {
	c := newContract(t)
	sentBy := &scripts{q: c.q}
	c.redis.Client.AddHook(sentBy)
	c.enqueue("a")
	sent, _ := sentBy.since(0)
	if len(sent) == 0 {
		t.Fatal("the enqueue sent no script")
	}
	for _, s := range sent {
		if s.script != asynqext.Enqueue {
			t.Fatalf("the enqueue sent a script ScriptOf tells as %s, want only %s", s.script, asynqext.Enqueue)
		}
	}

	if ids := c.redis.Client.LRange(c.ctx, c.q.Pending(), 0, -1).Val(); !slices.Equal(ids, []string{"a"}) {
		t.Errorf("%s = %q, want [a]", c.q.Pending(), ids)
	}
	states, err := c.q.TaskStates(c.ctx, c.redis.Client, []string{"a", "never-enqueued"})
	if err != nil || !slices.Equal(states, []asynqext.TaskState{asynqext.TaskPending, asynqext.NoTask}) {
		t.Errorf("TaskStates(a, never-enqueued) = %q, %v; want [pending \"\"]", states, err)
	}
	if info, err := c.inspector.GetTaskInfo(c.q.Name(), "a"); err != nil || info.State != asynq.TaskStatePending {
		t.Errorf("the inspector reads task a as %v, %v; want pending", info, err)
	}
	if msg := c.redis.Client.HGet(c.ctx, c.q.Task("a"), "msg").Val(); msg == "" {
		t.Errorf("%s has no msg field: not asynq's task hash", c.q.Task("a"))
	}
	if !c.redis.Client.SIsMember(c.ctx, asynqext.QueuesKey, c.q.Name()).Val() {
		t.Errorf("%s does not hold the queue %s", asynqext.QueuesKey, c.q.Name())
	}
	keys := c.redis.Client.Keys(c.ctx, c.q.KeyPattern()).Val()
	for _, want := range []string{c.q.Pending(), c.q.Task("a")} {
		if !slices.Contains(keys, want) {
			t.Errorf("KeyPattern %s matches %q, not %s", c.q.KeyPattern(), keys, want)
		}
	}
}

// A server's dequeue is the script ScriptOf tells as Dequeue: it answers
// nil (EmptyDequeue) on an empty queue and on a paused one (Paused is the
// key the inspector's pause sets), and the task once there is one. A
// worker's waker holds exactly these (worker/wake.go).
func TestDequeueIsToldApartAndAnswersNilWhenEmptyOrPaused(t *testing.T) {
	c := newContract(t)
	sentBy := &scripts{q: c.q}
	var ran atomic.Int32
	c.serve(sentBy, func(context.Context, *asynq.Task) error { ran.Add(1); return nil })
	emptyDequeue := func(s sent) bool { return s.script == asynqext.Dequeue && asynqext.EmptyDequeue(s.err) }
	c.waitFor("a dequeue of the empty queue answering nil", func() bool { return sentBy.any(emptyDequeue) })

	if err := c.inspector.PauseQueue(c.q.Name()); err != nil {
		t.Fatal(err)
	}
	if n := c.redis.Client.Exists(c.ctx, c.q.Paused()).Val(); n != 1 {
		t.Fatalf("the queue is paused, and %s does not exist", c.q.Paused())
	}
	_, from := sentBy.since(0)
	c.enqueue("while-paused")
	var dequeues int
	c.waitFor("dequeues of the paused queue", func() bool {
		sent, _ := sentBy.since(from)
		dequeues = 0
		for _, s := range sent {
			if s.script == asynqext.Dequeue {
				dequeues++
				if !asynqext.EmptyDequeue(s.err) {
					t.Fatalf("a dequeue of the paused queue answered %v; want nil", s.cmd)
				}
			}
		}
		return dequeues >= 3
	})
	if got := c.state("while-paused"); got != asynqext.TaskPending || ran.Load() != 0 {
		t.Fatalf("task of the paused queue is %q after %d runs; want pending, not run", got, ran.Load())
	}

	if err := c.inspector.UnpauseQueue(c.q.Name()); err != nil {
		t.Fatal(err)
	}
	if n := c.redis.Client.Exists(c.ctx, c.q.Paused()).Val(); n != 0 {
		t.Fatalf("the queue is unpaused, and %s still exists", c.q.Paused())
	}
	c.waitFor("the task to run once unpaused", func() bool { return ran.Load() == 1 })
	found := func(s sent) bool {
		return s.script == asynqext.Dequeue && s.err == nil && s.cmd != nil && s.cmd.Val() != nil
	}
	if !sentBy.any(found) {
		t.Fatal("the task ran, and no script told as Dequeue answered it")
	}
	if !sentBy.any(func(s sent) bool { return s.script == asynqext.OtherScript }) {
		t.Error("every script the server sent was told as a dequeue or a forward: completing a task must be OtherScript")
	}
	if sentBy.any(func(s sent) bool { return s.script == asynqext.Enqueue }) {
		t.Error("a script the server sent was told as an Enqueue")
	}
}

// A server moves due scheduled and retry tasks to the pending list with
// the script ScriptOf tells as Forward, which answers how many it moved
// (Forwarded); the task states on the way read scheduled, retry, pending,
// completed (kept for its retention) and archived.
func TestForwardIsToldApartAndTaskStatesFollowATasksLife(t *testing.T) {
	c := newContract(t)
	sentBy := &scripts{q: c.q}
	var mu sync.Mutex
	runs := map[string]int{}
	c.serve(sentBy, func(ctx context.Context, task *asynq.Task) error {
		id, _ := asynq.GetTaskID(ctx)
		mu.Lock()
		defer mu.Unlock()
		runs[id]++
		if id == "fails-once" && runs[id] == 1 {
			return context.DeadlineExceeded // any error: retried after RetryDelayFunc's 1 s
		}
		return nil
	})
	ran := func(id string) int { mu.Lock(); defer mu.Unlock(); return runs[id] }

	c.enqueue("later", asynq.ProcessIn(3*time.Second), asynq.Retention(time.Hour))
	if got := c.state("later"); got != asynqext.TaskScheduled {
		t.Fatalf("a task enqueued to run in 3 s reads %q, want scheduled", got)
	}
	if _, err := c.redis.Client.ZScore(c.ctx, c.q.Scheduled(), "later").Result(); err != nil {
		t.Fatalf("a scheduled task is not in %s: %v", c.q.Scheduled(), err)
	}
	c.waitFor("the scheduled task to complete", func() bool { return c.state("later") == asynqext.TaskCompleted })
	if !asynqext.TaskCompleted.Finished() || ran("later") != 1 {
		t.Fatalf("a completed task: Finished() false or %d runs", ran("later"))
	}
	if !sentBy.any(func(s sent) bool {
		return s.script == asynqext.Forward && s.err == nil && s.cmd != nil && asynqext.Forwarded(s.cmd) == 1
	}) {
		t.Fatal("the scheduled task ran, and no script told as Forward answered that it moved 1")
	}

	c.enqueue("fails-once", asynq.MaxRetry(1), asynq.Retention(time.Hour))
	c.waitFor("the failed task to wait for its retry", func() bool { return c.state("fails-once") == asynqext.TaskRetry })
	if _, err := c.redis.Client.ZScore(c.ctx, c.q.Retry(), "fails-once").Result(); err != nil {
		t.Fatalf("a task waiting for its retry is not in %s: %v", c.q.Retry(), err)
	}
	c.waitFor("the retried task to complete", func() bool { return c.state("fails-once") == asynqext.TaskCompleted })
	if ran("fails-once") != 2 {
		t.Fatalf("the retried task ran %d times, want 2", ran("fails-once"))
	}

	c.enqueue("archived", asynq.ProcessIn(time.Hour))
	if err := c.inspector.ArchiveTask(c.q.Name(), "archived"); err != nil {
		t.Fatal(err)
	}
	if got := c.state("archived"); got != asynqext.TaskArchived || !got.Finished() {
		t.Fatalf("an archived task reads %q (Finished %v), want archived, finished", got, got.Finished())
	}
	for _, live := range []asynqext.TaskState{asynqext.TaskPending, asynqext.TaskActive, asynqext.TaskScheduled, asynqext.TaskRetry} {
		if live.Finished() {
			t.Errorf("%s reads as Finished", live)
		}
	}
}

// A task whose worker died stays active with the lease asynq's dequeue
// wrote (Unix seconds, 30 s ahead by Redis's clock). RequeueAbandoned
// leaves it while that lease is live or ended less than grace ago, moves
// it back to pending exactly once past that, and a live server then runs
// it, once (worker/recover.go).
func TestAbandonedActiveTaskIsRequeuedOnceThenRuns(t *testing.T) {
	c := newContract(t)
	c.enqueue("orphan", asynq.Retention(time.Hour))

	// A server takes the task and is cut off from Redis mid-run.
	taken := make(chan struct{})
	dead := &scripts{q: c.q, cutAfterDequeue: true}
	c.serve(dead, func(ctx context.Context, _ *asynq.Task) error {
		close(taken)
		<-ctx.Done()
		return ctx.Err()
	})
	// Back before its shutdown, which clears its record in asynq:servers.
	t.Cleanup(func() { dead.cut.Store(false) })
	select {
	case <-taken:
	case <-time.After(10 * time.Second):
		t.Fatal("no server took the task")
	}
	if active := c.redis.Client.LRange(c.ctx, c.q.Active(), 0, -1).Val(); !slices.Equal(active, []string{"orphan"}) || c.state("orphan") != asynqext.TaskActive {
		t.Fatalf("taken: %s = %q, state %q; want [orphan], active", c.q.Active(), active, c.state("orphan"))
	}
	lease, err := c.redis.Client.ZScore(c.ctx, c.q.Lease(), "orphan").Result()
	now := c.redisNow()
	if err != nil || int64(lease) < now+25 || int64(lease) > now+31 {
		t.Fatalf("lease of the taken task in %s = %v, %v; want its end in Unix seconds, about 30 s after Redis's now %d", c.q.Lease(), lease, err, now)
	}

	moved, err := c.q.RequeueAbandoned(c.ctx, c.redis.Client, 2*time.Second)
	if err != nil || len(moved) != 0 {
		t.Fatalf("RequeueAbandoned with the lease live = %q, %v; want nothing moved", moved, err)
	}

	// The dead server never extends its lease: within the grace after its
	// end the task stays, past it the task is moved, once.
	c.redis.Client.ZAdd(c.ctx, c.q.Lease(), redis.Z{Score: float64(c.redisNow() - 1), Member: "orphan"})
	if moved, err := c.q.RequeueAbandoned(c.ctx, c.redis.Client, 5*time.Second); err != nil || len(moved) != 0 {
		t.Fatalf("RequeueAbandoned 1 s after the lease's end, grace 5 s = %q, %v; want nothing moved", moved, err)
	}
	c.redis.Client.ZAdd(c.ctx, c.q.Lease(), redis.Z{Score: float64(c.redisNow() - 10), Member: "orphan"})
	moved, err = c.q.RequeueAbandoned(c.ctx, c.redis.Client, 5*time.Second)
	if err != nil || !slices.Equal(moved, []string{"orphan"}) {
		t.Fatalf("RequeueAbandoned 10 s after the lease's end, grace 5 s = %q, %v; want [orphan]", moved, err)
	}
	if again, err := c.q.RequeueAbandoned(c.ctx, c.redis.Client, 5*time.Second); err != nil || len(again) != 0 {
		t.Fatalf("RequeueAbandoned a second time = %q, %v; want nothing moved (once only)", again, err)
	}
	pending := c.redis.Client.LRange(c.ctx, c.q.Pending(), 0, -1).Val()
	active := c.redis.Client.LLen(c.ctx, c.q.Active()).Val()
	_, leaseErr := c.redis.Client.ZScore(c.ctx, c.q.Lease(), "orphan").Result()
	if !slices.Equal(pending, []string{"orphan"}) || active != 0 || leaseErr != redis.Nil || c.state("orphan") != asynqext.TaskPending {
		t.Fatalf("requeued: pending %q, %d active, lease %v, state %q; want [orphan], 0, none, pending", pending, active, leaseErr, c.state("orphan"))
	}
	if info, err := c.inspector.GetTaskInfo(c.q.Name(), "orphan"); err != nil || info.State != asynq.TaskStatePending {
		t.Fatalf("the inspector reads the requeued task as %v, %v; want pending", info, err)
	}

	var runs atomic.Int32
	c.serve(nil, func(context.Context, *asynq.Task) error { runs.Add(1); return nil })
	c.waitFor("the requeued task to complete", func() bool { return c.state("orphan") == asynqext.TaskCompleted })
	time.Sleep(200 * time.Millisecond) // a second run would start now
	if n := runs.Load(); n != 1 {
		t.Fatalf("the requeued task ran %d times on the live server, want 1", n)
	}
}

// A live server keeps the lease of a task it runs ahead of Redis's clock:
// its heartbeat (every 5 s) extends it, so RequeueAbandoned never takes a
// task from a server that is alive, however long the task runs.
func TestRunningTasksLeaseIsExtendedByItsServer(t *testing.T) {
	c := newContract(t)
	c.enqueue("long")
	taken, done := make(chan struct{}), make(chan struct{})
	c.serve(nil, func(ctx context.Context, _ *asynq.Task) error {
		close(taken)
		select {
		case <-done:
		case <-ctx.Done():
		}
		return nil
	})
	defer close(done)
	select {
	case <-taken:
	case <-time.After(10 * time.Second):
		t.Fatal("no server took the task")
	}
	first, err := c.redis.Client.ZScore(c.ctx, c.q.Lease(), "long").Result()
	if err != nil {
		t.Fatalf("no lease in %s for the running task: %v", c.q.Lease(), err)
	}
	c.waitFor("the server's heartbeat to extend the lease", func() bool {
		return c.redis.Client.ZScore(c.ctx, c.q.Lease(), "long").Val() > first
	})
	if moved, err := c.q.RequeueAbandoned(c.ctx, c.redis.Client, 0); err != nil || len(moved) != 0 {
		t.Fatalf("RequeueAbandoned took %q (%v) from a live server", moved, err)
	}
}

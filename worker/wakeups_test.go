package worker

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/redistest"
)

// Enqueues that finish while a wake-up is being published get one more
// wake-up after it, not one each; none is left without a wake-up sent
// after it.
func TestWakeUpsCoalesceButNeverDropTheLast(t *testing.T) {
	var w wakeUps
	var sent atomic.Int32
	release := make(chan struct{})
	first := make(chan struct{})
	publish := func() {
		if sent.Add(1) == 1 {
			close(first)
			<-release // the first PUBLISH is in flight
		}
	}
	w.request(publish)
	<-first
	for range 10 {
		w.request(publish) // finished while the first was in flight
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.mu.Lock()
		idle := !w.running
		w.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the publisher never stopped")
		}
		time.Sleep(time.Millisecond)
	}
	if got := sent.Load(); got != 2 {
		t.Fatalf("publishes: expected 2 (the first, then one for the 10 that came during it), got %d", got)
	}
	w.request(publish)
	for sent.Load() != 3 {
		if time.Now().After(deadline) {
			t.Fatalf("a later enqueue got no wake-up: %d publishes", sent.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// An enqueue's wake-up rides in its own round trip: the PUBLISH arrives,
// the enqueue is done, and no background publish was needed.
func TestEnqueueCarriesItsWakeUpInTheSameRoundTrip(t *testing.T) {
	r := redistest.New(t)
	ctx := context.Background()
	q := NewQueue(asynq.NewClientFromRedisClient(r.Client), r.Queue(), WithWakeUps(r.Client))
	ps := r.Client.Subscribe(ctx, wakeChannel(r.Queue()))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := q.EnqueueCompress(ctx, "job-1", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ps.Channel():
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up published")
	}
	if n := q.wakes.background.Load(); n != 0 {
		t.Errorf("background publishes: expected none (the enqueue carried its wake-up), got %d", n)
	}
}

// countScripts counts in n the scripts a client sends, alone or in
// pipelines.
func countScripts(n *atomic.Int32) onCommand {
	return func(cmd redis.Cmder) {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			n.Add(1)
		}
	}
}

// On an autopipeliner (the API's client, redisstore.Batched) the enqueue
// goes on the stream as it is, once, and its wake-up right behind it.
func TestEnqueueOnAnAutopipelinerRunsOnceAndWakes(t *testing.T) {
	r := redistest.New(t)
	ctx := context.Background()
	var scripts atomic.Int32
	r.Client.AddHook(countScripts(&scripts))
	ap, err := r.Client.AutoPipelineWithOptions(&redis.AutoPipelineOptions{FullDuplex: true})
	if err != nil {
		t.Fatal(err)
	}
	q := NewQueue(asynq.NewClientFromRedisClient(ap), r.Queue(), WithWakeUps(ap))
	ps := r.Client.Subscribe(ctx, wakeChannel(r.Queue()))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"job-1", "job-2"} {
		scripts.Store(0) // job-1 may load the script first (NOSCRIPT, then EVAL)
		if err := q.EnqueueCompress(ctx, id, ""); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ps.Channel():
		case <-time.After(5 * time.Second):
			t.Fatal("no wake-up published")
		}
	}
	if n := scripts.Load(); n != 1 {
		t.Errorf("scripts sent: expected asynq's enqueue once, got %d", n)
	}
	if n := q.wakes.background.Load(); n != 0 {
		t.Errorf("background publishes: expected none (the hook sent it), got %d", n)
	}
}

// Two Queues on one client (an autopipeliner, where a hook that acted on
// every enqueue would publish in addition to the other's) each carry their
// own hook: every enqueue is published once, by its own Queue's hook.
func TestQueuesSharingAClientPublishEachWakeUpOnce(t *testing.T) {
	r := redistest.New(t)
	ctx := context.Background()
	ap, err := r.Client.AutoPipelineWithOptions(&redis.AutoPipelineOptions{FullDuplex: true})
	if err != nil {
		t.Fatal(err)
	}
	client := asynq.NewClientFromRedisClient(ap)
	queues := []*Queue{NewQueue(client, r.Queue(), WithWakeUps(ap)), NewQueue(client, r.Queue(), WithWakeUps(ap))}
	ps := r.Client.Subscribe(ctx, wakeChannel(r.Queue()))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	// The first enqueue may load asynq's script (NOSCRIPT, then EVAL: a
	// wake-up each).
	if err := queues[0].EnqueueCompress(ctx, "warm-up", ""); err != nil {
		t.Fatal(err)
	}
	for drained := false; !drained; {
		select {
		case <-ps.Channel():
		case <-time.After(200 * time.Millisecond):
			drained = true
		}
	}
	for i, q := range queues {
		if err := q.EnqueueCompress(ctx, fmt.Sprintf("job-%d", i), ""); err != nil {
			t.Fatal(err)
		}
		select {
		case <-ps.Channel():
		case <-time.After(5 * time.Second):
			t.Fatalf("queue %d: no wake-up published", i)
		}
		select {
		case <-ps.Channel():
			t.Fatalf("queue %d: its enqueue was published twice", i)
		case <-time.After(200 * time.Millisecond):
		}
	}
	for i, q := range queues {
		if n := q.wakes.background.Load(); n != 0 {
			t.Errorf("queue %d: background publishes: expected none (its hook sent it), got %d", i, n)
		}
	}
}

package psloop

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/redistest"
)

// recorder collects what Run hands over.
type recorder struct {
	mu   sync.Mutex
	msgs []any
	got  chan struct{}
}

func (r *recorder) handle(msg any) {
	r.mu.Lock()
	r.msgs = append(r.msgs, msg)
	r.mu.Unlock()
	select {
	case r.got <- struct{}{}:
	default:
	}
}

// await waits until n messages were handed over.
func (r *recorder) await(t *testing.T, n int) []any {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		r.mu.Lock()
		msgs := append([]any(nil), r.msgs...)
		r.mu.Unlock()
		if len(msgs) >= n {
			return msgs
		}
		select {
		case <-r.got:
		case <-deadline:
			t.Fatalf("handed over %d messages, want %d: %v", len(msgs), n, msgs)
		}
	}
}

func TestRunHandsOverSubscriptionsAndMessagesUntilClosed(t *testing.T) {
	r := redistest.New(t)
	ctx := context.Background()
	channel := r.Prefix + "ch"
	ps := r.Client.Subscribe(ctx, channel)
	rec := &recorder{got: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() { Run(ps, rec.handle); close(done) }()
	rec.await(t, 1) // the confirmation, before anything is published
	if err := r.Client.Publish(ctx, channel, "one").Err(); err != nil {
		t.Fatal(err)
	}
	msgs := rec.await(t, 2)
	if s, ok := msgs[0].(*redis.Subscription); !ok || s.Channel != channel {
		t.Errorf("first handed over %#v, want the subscription to %s", msgs[0], channel)
	}
	if m, ok := msgs[1].(*redis.Message); !ok || m.Payload != "one" {
		t.Errorf("then %#v, want the message one", msgs[1])
	}
	ps.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return once the subscription was closed")
	}
}

func TestRunPingsASilentSubscription(t *testing.T) {
	r := redistest.New(t)
	defer func(d time.Duration) { healthCheck = d }(healthCheck)
	healthCheck = 50 * time.Millisecond
	ctx := context.Background()
	ps := r.Client.Subscribe(ctx, r.Prefix+"quiet")
	defer ps.Close()
	// Pongs are not handed over: the PINGs are counted on the server.
	before := pingCount(t, r)
	go Run(ps, func(any) {})
	deadline := time.Now().Add(5 * time.Second)
	for pingCount(t, r) < before+2 {
		if time.Now().After(deadline) {
			t.Fatalf("no PING after %v of silence", 5*time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// pingCount is how many PINGs the server has run (INFO commandstats; on
// miniredis, which has none, the test is skipped).
func pingCount(t *testing.T, r *redistest.Redis) int {
	t.Helper()
	if r.Mini != nil {
		t.Skip("miniredis keeps no command stats")
	}
	info, err := r.Client.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_ping:calls="); ok {
			n, _ := strconv.Atoi(v[:strings.IndexByte(v+",", ',')])
			return n
		}
	}
	return 0
}

func TestRunResubscribesAfterTheConnectionDrops(t *testing.T) {
	r := redistest.New(t)
	if r.Mini != nil {
		t.Skip("miniredis cannot kill a client")
	}
	ctx := context.Background()
	channel := r.Prefix + "dropped"
	ps := r.Client.Subscribe(ctx, channel)
	defer ps.Close()
	rec := &recorder{got: make(chan struct{}, 1)}
	go Run(ps, rec.handle)
	rec.await(t, 1)
	if err := r.Client.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	msgs := rec.await(t, 2) // the subscription again, as waitHub counts on
	if _, ok := msgs[1].(*redis.Subscription); !ok {
		t.Fatalf("after the drop handed over %#v, want the subscription again", msgs[1])
	}
	if err := r.Client.Publish(ctx, channel, "after").Err(); err != nil {
		t.Fatal(err)
	}
	if m, ok := rec.await(t, 3)[2].(*redis.Message); !ok || m.Payload != "after" {
		t.Errorf("then %#v, want the message after", rec.await(t, 3)[2])
	}
}

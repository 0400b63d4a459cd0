package worker

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// runningField reads the state hash's count of owner's running jobs: ""
// when there is no field.
func runningField(t *testing.T, q *fairQueue, owner string) string {
	t.Helper()
	v, err := q.rdb.HGet(context.Background(), q.key("state"), "n:"+owner).Result()
	if err == redis.Nil {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A key with nothing running keeps no count once the prune ran (the ends
// leave a 0, which costs no HDEL a job).
func TestFairStateKeepsNoCountOfAKeyWithNothingRunning(t *testing.T) {
	ctx := context.Background()
	ends := map[string]func(q *fairQueue, j *fairJob){
		"ack": func(q *fairQueue, j *fairJob) {
			if ok, err := q.ack(ctx, j, time.Time{}); !ok || err != nil {
				t.Fatalf("ack: %v %v", ok, err)
			}
		},
		"ack with a retry": func(q *fairQueue, j *fairJob) {
			if ok, err := q.ack(ctx, j, time.Now().Add(time.Hour)); !ok || err != nil {
				t.Fatalf("ack: %v %v", ok, err)
			}
		},
		"release": func(q *fairQueue, j *fairJob) {
			if ok, err := q.release(ctx, j); !ok || err != nil {
				t.Fatalf("release: %v %v", ok, err)
			}
		},
		"lapsed lease": func(q *fairQueue, j *fairJob) {
			q.rdb.ZAddXX(ctx, q.key("leases"), redis.Z{Score: 0, Member: j.member})
			if _, recovered, err := q.maintain(ctx); recovered != 1 || err != nil {
				t.Fatalf("maintain recovered %d (%v), want 1", recovered, err)
			}
		},
	}
	for name, end := range ends {
		t.Run(name, func(t *testing.T) {
			q := newTestFairQueue(t, 0)
			mustEnqueue(t, q, "j1", "k")
			mustEnqueue(t, q, "j2", "k")
			a, b := mustDispatch(t, q, time.Minute), mustDispatch(t, q, time.Minute)
			if got := runningField(t, q, "k"); got != "2" {
				t.Fatalf("n:k = %q with two running, want 2", got)
			}
			end(q, a)
			if got := runningField(t, q, "k"); got != "1" {
				t.Fatalf("n:k = %q with one running, want 1", got)
			}
			end(q, b)
			if got := runningField(t, q, "k"); got != "" && got != "0" {
				t.Fatalf("n:k = %q with nothing running, want 0 or no field", got)
			}
			prune := func() {
				for cursor := "0"; ; {
					next, err := q.prune(ctx, cursor)
					if err != nil {
						t.Fatal(err)
					}
					if cursor = next; cursor == "0" {
						return
					}
				}
			}
			prune()
			if got := runningField(t, q, "k"); got != "" {
				t.Fatalf("n:k = %q after a prune with nothing running, want no field", got)
			}
			mustEnqueue(t, q, "j3", "other")
			busy := mustDispatch(t, q, time.Minute)
			prune() // keeps a count above 0
			if got := runningField(t, q, busy.owner); got != "1" {
				t.Fatalf("n:%s = %q after a prune with one running, want 1", busy.owner, got)
			}
		})
	}
}

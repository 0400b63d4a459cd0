package worker

import (
	"context"
	"strconv"
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
			q := newTestFairQueue(t, 5) // a limit: the key's runs are counted
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
			if got := runningField(t, q, "k"); got != "" {
				t.Fatalf("n:k = %q with nothing running, want no field", got)
			}
		})
		t.Run(name+" without a limit", func(t *testing.T) {
			q := newTestFairQueue(t, 0) // no limit: nothing is counted
			mustEnqueue(t, q, "j1", "k")
			a := mustDispatch(t, q, time.Minute)
			if got := runningField(t, q, "k"); got != "" {
				t.Fatalf("n:k = %q for a key without a limit, want no field", got)
			}
			end(q, a)
			if got := runningField(t, q, "k"); got != "" {
				t.Fatalf("n:k = %q after its run ended, want no field", got)
			}
		})
	}
}

// TestFairTurnsSetElsewhereTakeEffectAtTheNextMaintenance: a worker that
// saw an empty state hash dispatches without reading turns; a weight and a
// limit set by another process (keys set-turns) hold from its next
// maintenance on, and the limited key's runs are then counted.
func TestFairTurnsSetElsewhereTakeEffectAtTheNextMaintenance(t *testing.T) {
	ctx := context.Background()
	q := newTestFairQueue(t, 0)
	cli := newFairQueue(q.rdb, "", 0)
	cli.prefix = q.prefix
	if _, _, err := q.maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if q.skipTurns() != "1" {
		t.Fatal("an empty state hash left the dispatch reading turns")
	}
	if err := cli.setKeyTurns(ctx, "heavy", 3, 0); err != nil {
		t.Fatal(err)
	}
	if err := cli.setKeyTurns(ctx, "capped", 0, 1); err != nil {
		t.Fatal(err)
	}
	if _, _, err := q.maintain(ctx); err != nil {
		t.Fatal(err)
	}
	if q.skipTurns() != "0" {
		t.Fatal("turns set elsewhere were not seen at the next maintenance")
	}
	for i := range 40 {
		mustEnqueue(t, q, "h"+strconv.Itoa(i), "heavy")
		mustEnqueue(t, q, "l"+strconv.Itoa(i), "light")
	}
	mustEnqueue(t, q, "c1", "capped")
	mustEnqueue(t, q, "c2", "capped")
	got := map[string]int{}
	for range 20 {
		got[mustDispatch(t, q, time.Minute).owner]++
	}
	if got["capped"] != 1 || got["heavy"] < 13 || got["heavy"] > 15 {
		t.Fatalf("turns %v: want capped 1 (its limit), heavy 3 of every 4 of the rest", got)
	}
	if n := runningField(t, q, "capped"); n != "1" {
		t.Fatalf("n:capped = %q, want its one run counted", n)
	}
}

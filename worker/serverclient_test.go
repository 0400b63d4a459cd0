package worker

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/redistest"
)

// directClient records the scripts sent to it.
type directClient struct {
	redis.UniversalClient
	got []string
}

func (d *directClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	d.got = append(d.got, keys[0])
	return redis.NewCmd(ctx)
}

// asynq's dequeue and forward scripts reach the hooked client, where the
// waker can hold a dequeue; its other scripts (completing a task) go
// through the autopipeliner.
func TestServerClientSendsOnlyDequeueAndForwardDirect(t *testing.T) {
	r := redistest.New(t)
	wk := newWaker(r.Queue(), 0)
	ap, err := r.Client.AutoPipelineWithOptions(&redis.AutoPipelineOptions{FullDuplex: true})
	if err != nil {
		t.Fatal(err)
	}
	direct := &directClient{UniversalClient: r.Client}
	c := serverClient{AutoPipeliner: ap, direct: direct, wk: wk}
	ctx := context.Background()
	c.EvalSha(ctx, "dequeue", []string{wk.pendingKey, wk.pausedKey, "active", "lease"})
	c.EvalSha(ctx, "forward", []string{"scheduled", wk.pendingKey})
	c.EvalSha(ctx, "0000000000000000000000000000000000000000", []string{"asynq:{" + r.Queue() + "}:active", "lease", "t:1", "completed"}) // markAsComplete's shape: NOSCRIPT from Redis
	if len(direct.got) != 2 || direct.got[0] != wk.pendingKey || direct.got[1] != "scheduled" {
		t.Fatalf("direct: expected the dequeue and the forward only, got %q", direct.got)
	}
}

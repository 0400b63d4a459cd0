package worker

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/asynqext"
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
	q := asynqext.QueueOf(r.Queue())
	ap, err := r.Client.AutoPipelineWithOptions(&redis.AutoPipelineOptions{FullDuplex: true})
	if err != nil {
		t.Fatal(err)
	}
	direct := &directClient{UniversalClient: r.Client}
	c := serverClient{AutoPipeliner: ap, direct: direct, wk: wk}
	ctx := context.Background()
	c.EvalSha(ctx, "dequeue", []string{q.Pending(), q.Paused(), q.Active(), q.Lease()})
	c.EvalSha(ctx, "forward", []string{q.Scheduled(), q.Pending()})
	c.EvalSha(ctx, "0000000000000000000000000000000000000000", []string{q.Active(), q.Lease(), q.Task("1"), "completed"}) // markAsComplete's shape: NOSCRIPT from Redis
	if len(direct.got) != 2 || direct.got[0] != q.Pending() || direct.got[1] != q.Scheduled() {
		t.Fatalf("direct: expected the dequeue and the forward only, got %q", direct.got)
	}
}

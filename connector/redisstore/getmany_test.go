package redisstore

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/redistest"
)

// GetMany reads many records in one command on a single Redis, in the
// order asked, with ENOTFOUND for a record gone and an error of its own
// for one that does not decode (its note stays, the others are read).
func TestGetManyReadsRecordsInOneCommand(t *testing.T) {
	r := redistest.New(t)
	s := New(r.Client, Options{Prefix: r.Prefix})
	ctx := context.Background()
	a := newJob(t, s, "me", connector.StatusQueued)
	b := newJob(t, s, "me", connector.StatusCompleted)
	broken := uuid.NewString()
	r.Client.Set(ctx, s.conn.keys.job(broken), "{not a record", 0)
	gone := uuid.NewString()

	var sent commandLog
	r.Client.AddHook(&sent)
	jobs, errs := s.Jobs.GetMany(ctx, []string{b.ID, gone, a.ID, broken})
	if sent.mu.Lock(); len(sent.names) != 1 || sent.names[0] != "mget" {
		t.Fatalf("GetMany sent %v, want one MGET", sent.names)
	}
	sent.mu.Unlock()
	if jobs[0] == nil || jobs[0].ID != b.ID || jobs[0].Status != connector.StatusCompleted || errs[0] != nil {
		t.Fatalf("GetMany[0] = %+v, %v; want job %s completed", jobs[0], errs[0], b.ID)
	}
	if jobs[1] != nil || connector.ErrorCodeOf(errs[1]) != connector.ENOTFOUND {
		t.Fatalf("GetMany[1] = %+v, %v; want ENOTFOUND", jobs[1], errs[1])
	}
	if jobs[2] == nil || jobs[2].ID != a.ID || errs[2] != nil {
		t.Fatalf("GetMany[2] = %+v, %v; want job %s", jobs[2], errs[2], a.ID)
	}
	if jobs[3] != nil || errs[3] == nil || connector.ErrorCodeOf(errs[3]) == connector.ENOTFOUND {
		t.Fatalf("GetMany[3] = %+v, %v; want a decode error, not ENOTFOUND", jobs[3], errs[3])
	}
	if jobs, errs := s.Jobs.GetMany(ctx, nil); len(jobs) != 0 || len(errs) != 0 {
		t.Fatalf("GetMany(nil) = %v, %v", jobs, errs)
	}
}

package redisstore

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
)

// A batch's decision is taken once: the first of made and removed wins,
// and a later call is told it.
func TestDecideBatchDecidesOnce(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	b := &connector.Batch{ID: uuid.Must(uuid.NewV7()).String(), Owner: "o1", JobIDs: []string{"a", "b"}}
	if st, err := s.Batches.DecideBatch(ctx, b.ID, connector.MakingMade); err != nil || st != "" {
		t.Fatalf("decision of a batch never begun: %q %v, want none", st, err)
	}
	if err := s.Batches.BeginBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Batches.BeginBatch(ctx, b); err == nil {
		t.Error("a batch begun twice")
	}
	if st, err := s.Batches.DecideBatch(ctx, b.ID, connector.MakingRemoved); err != nil || st != connector.MakingRemoved {
		t.Fatalf("first decision: %q %v", st, err)
	}
	if st, err := s.Batches.DecideBatch(ctx, b.ID, connector.MakingMade); err != nil || st != connector.MakingRemoved {
		t.Fatalf("a later decision: %q %v, want the first (removed)", st, err)
	}
	got, st, err := s.Batches.MakingBatch(ctx, b.ID)
	if err != nil || st != connector.MakingRemoved || len(got.JobIDs) != 2 {
		t.Fatalf("making batch: %+v %q %v", got, st, err)
	}
}

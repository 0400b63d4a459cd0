package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
)

// A batch's decision is taken once: the first of made and removed wins,
// and a later call is told it.
func TestDecideBatchDecidesOnce(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	b := &connector.Batch{ID: uuid.Must(uuid.NewV7()).String(), Owner: "o1", JobIDs: []string{"a", "b"}}
	if st, err := s.Batches.Decide(ctx, b.ID, connector.MakingMade); err != nil || st != "" {
		t.Fatalf("decision of a batch never begun: %q %v, want none", st, err)
	}
	if err := s.Batches.Begin(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := s.Batches.Begin(ctx, b); err == nil {
		t.Error("a batch begun twice")
	}
	if st, err := s.Batches.Decide(ctx, b.ID, connector.MakingRemoved); err != nil || st != connector.MakingRemoved {
		t.Fatalf("first decision: %q %v", st, err)
	}
	if st, err := s.Batches.Decide(ctx, b.ID, connector.MakingMade); err != nil || st != connector.MakingRemoved {
		t.Fatalf("a later decision: %q %v, want the first (removed)", st, err)
	}
	got, st, err := s.Batches.Making(ctx, b.ID)
	if err != nil || st != connector.MakingRemoved || len(got.JobIDs) != 2 {
		t.Fatalf("making batch: %+v %q %v", got, st, err)
	}
}

// A second Begin of an id leaves the first one's record as it was.
func TestBeginBatchTwiceKeepsTheFirstRecord(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	id := uuid.Must(uuid.NewV7()).String()
	if err := s.Batches.Begin(ctx, &connector.Batch{ID: id, Owner: "o1", JobIDs: []string{"a", "b"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Batches.Begin(ctx, &connector.Batch{ID: id, Owner: "o2", JobIDs: []string{"c"}}); err == nil {
		t.Fatal("a batch begun twice")
	}
	got, st, err := s.Batches.Making(ctx, id)
	if err != nil || st != connector.MakingCreating || got.Owner != "o1" || len(got.JobIDs) != 2 {
		t.Fatalf("making batch after a second begin: %+v %q %v, want the first record", got, st, err)
	}
}

// Anyone but its maker decides a batch removed only once the maker's
// lease lapsed; renewing keeps it, and the decision ends it.
func TestRemoveLapsedBatchWaitsForTheMakersLease(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	b := &connector.Batch{ID: uuid.Must(uuid.NewV7()).String(), Owner: "o1", JobIDs: []string{"a"}}
	if err := s.Batches.Begin(ctx, b); err != nil {
		t.Fatal(err)
	}
	if held, err := s.Batches.RenewMakingLease(ctx, b.ID); err != nil || !held {
		t.Fatalf("renew a held lease: %v %v", held, err)
	}
	if st, err := s.Batches.RemoveLapsed(ctx, b.ID); err != nil || st != connector.MakingCreating {
		t.Fatalf("removal while leased: %q %v, want still creating", st, err)
	}
	r.Client.Del(ctx, s.conn.keys.batchLease(b.ID)) // its maker died
	if held, err := s.Batches.RenewMakingLease(ctx, b.ID); err != nil || held {
		t.Fatalf("renew a lapsed lease: %v %v, want not held", held, err)
	}
	if st, err := s.Batches.RemoveLapsed(ctx, b.ID); err != nil || st != connector.MakingRemoved {
		t.Fatalf("removal once lapsed: %q %v, want removed", st, err)
	}

	// The maker's own decision does not wait for its lease, and ends it.
	m := &connector.Batch{ID: uuid.Must(uuid.NewV7()).String(), Owner: "o1", JobIDs: []string{"a"}}
	if err := s.Batches.Begin(ctx, m); err != nil {
		t.Fatal(err)
	}
	if st, err := s.Batches.Decide(ctx, m.ID, connector.MakingMade); err != nil || st != connector.MakingMade {
		t.Fatalf("maker's decision: %q %v", st, err)
	}
	if n, _ := r.Client.Exists(ctx, s.conn.keys.batchLease(m.ID)).Result(); n != 0 {
		t.Error("the lease outlived the decision")
	}
	if st, err := s.Batches.RemoveLapsed(ctx, m.ID); err != nil || st != connector.MakingMade {
		t.Fatalf("removal of a made batch: %q %v, want made", st, err)
	}
}

// A made decision is kept as long as the jobs until the batch is finished
// (not makingTTL): a batch answered 2xx is never read as removed.
func TestMadeDecisionLivesUntilFinished(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	b := &connector.Batch{ID: uuid.Must(uuid.NewV7()).String(), Owner: "o1", JobIDs: []string{"a"}}
	if err := s.Batches.Begin(ctx, b); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Batches.Decide(ctx, b.ID, connector.MakingMade); err != nil {
		t.Fatal(err)
	}
	ttl, err := r.Client.PTTL(ctx, s.conn.keys.batchMaking(b.ID)).Result()
	if err != nil || ttl < DefaultJobTTL-time.Minute {
		t.Fatalf("made decision lives %v (%v), want the jobs' %v", ttl, err, DefaultJobTTL)
	}
	if err := s.Batches.EndMaking(ctx, b.ID, connector.MakingDone); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := r.Client.PTTL(ctx, s.conn.keys.batchMaking(b.ID)).Result(); ttl > makingTTL {
		t.Errorf("done decision lives %v, want at most %v", ttl, makingTTL)
	}
}

package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// A fresh Redis gets this build's version at start; a second start finds
// it and passes.
func TestCheckSchemaWritesTheVersionOnAFreshRedis(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema on a fresh Redis = %v, want it to pass", err)
	}
	if got, _ := r.Client.Get(ctx, r.Prefix+"schema").Result(); got != "1" {
		t.Fatalf("stored schema version = %q, want %d", got, SchemaVersion)
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema again = %v", err)
	}
}

// A Redis a newer build migrated is refused, with a message that says
// which command wrote it.
func TestCheckSchemaRefusesANewerVersion(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	r.Client.Set(ctx, r.Prefix+"schema", SchemaVersion+1, 0)
	err := s.CheckSchema(ctx)
	if !errors.Is(err, ErrSchemaNewer) || !strings.Contains(err.Error(), "imgflow migrate") {
		t.Fatalf("CheckSchema with version %d stored = %v, want ErrSchemaNewer naming imgflow migrate", SchemaVersion+1, err)
	}
	if got, _ := r.Client.Get(ctx, r.Prefix+"schema").Int(); got != SchemaVersion+1 {
		t.Fatalf("the refused check changed the stored version to %d", got)
	}
}

// A value that is not a version is an error, not a fresh Redis.
func TestCheckSchemaRefusesAValueThatIsNoVersion(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	r.Client.Set(ctx, r.Prefix+"schema", "banana", 0)
	if err := s.CheckSchema(ctx); err == nil {
		t.Fatal("CheckSchema accepted a schema key holding banana")
	}
}

// Migrate reports the versions and the steps; a second run has none left.
func TestMigrateBringsAFreshRedisToTheLatestVersion(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	dry, err := s.Migrate(ctx, 0, true)
	if err != nil || dry.From != 0 || dry.To != 0 || len(dry.Steps) != len(Migrations) {
		t.Fatalf("dry run = %+v, %v; want from 0, nothing written, every step due", dry, err)
	}
	if v, _ := s.StoredSchema(ctx); v != 0 {
		t.Fatalf("a dry run wrote version %d", v)
	}
	rep, err := s.Migrate(ctx, 0, false)
	if err != nil || rep.From != 0 || rep.To != SchemaVersion {
		t.Fatalf("Migrate = %+v, %v; want 0 -> %d", rep, err, SchemaVersion)
	}
	if err := s.CheckSchema(ctx); err != nil {
		t.Fatalf("CheckSchema after Migrate = %v", err)
	}
	again, err := s.Migrate(ctx, 0, false)
	if err != nil || again.From != SchemaVersion || again.To != SchemaVersion || len(again.Steps) != 0 {
		t.Fatalf("Migrate again = %+v, %v; want nothing to do", again, err)
	}
}

// Steps run in order up to the target, the version written after each; a
// failing step leaves the version of the last one that succeeded, and the
// next run starts there.
func TestMigrateAppliesStepsInOrderAndStopsAtAFailure(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	var ran []int
	fail := true
	step := func(v int) func(context.Context, *Store) error {
		return func(ctx context.Context, s *Store) error {
			if v == 3 && fail {
				return errors.New("disk on fire")
			}
			ran = append(ran, v)
			return r.Client.Set(ctx, r.Prefix+"marker", v, 0).Err()
		}
	}
	steps := []Migration{{1, "one", nil}, {2, "two", step(2)}, {3, "three", step(3)}}

	rep, err := s.migrate(ctx, steps, 2, false)
	if err != nil || rep.To != 2 || len(ran) != 1 || ran[0] != 2 {
		t.Fatalf("migrate to 2 = %+v, %v, ran %v; want steps 1 and 2", rep, err, ran)
	}
	rep, err = s.migrate(ctx, steps, 0, false)
	if err == nil || !strings.Contains(err.Error(), "disk on fire") || rep.To != 2 {
		t.Fatalf("migrate with a failing step 3 = %+v, %v; want the error and version 2 kept", rep, err)
	}
	if v, _ := s.StoredSchema(ctx); v != 2 {
		t.Fatalf("stored version after the failure = %d, want 2", v)
	}
	fail = false
	rep, err = s.migrate(ctx, steps, 0, false)
	if err != nil || rep.From != 2 || rep.To != 3 || len(rep.Steps) != 1 {
		t.Fatalf("migrate after the fix = %+v, %v; want step 3 alone", rep, err)
	}
	if _, err := s.migrate(ctx, steps, 2, false); err == nil {
		t.Fatal("migrate down to 2 from 3 was accepted; layouts only go up")
	}
}

// A Redis of a newer layout is not migrated by an older build.
func TestMigrateRefusesANewerVersion(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	r.Client.Set(ctx, r.Prefix+"schema", SchemaVersion+1, 0)
	if _, err := s.Migrate(ctx, 0, false); !errors.Is(err, ErrSchemaNewer) {
		t.Fatalf("Migrate over version %d = %v, want ErrSchemaNewer", SchemaVersion+1, err)
	}
}

// Two migrators do not run at once.
func TestMigrateRefusesWhileAnotherHoldsTheLock(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	r.Client.Set(ctx, r.Prefix+"schema:lock", "other", 0)
	if _, err := s.Migrate(ctx, 0, false); err == nil || !strings.Contains(err.Error(), "another") {
		t.Fatalf("Migrate while locked = %v, want refused", err)
	}
	if v, _ := s.StoredSchema(ctx); v != 0 {
		t.Fatalf("a refused Migrate wrote version %d", v)
	}
}

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// SchemaVersion is the version of the key layout (store.go's table) this
// build reads and writes. The layout's version in a Redis sits under
// <prefix>schema. A change to the layout adds a Migration and raises
// SchemaVersion; `imgflow migrate` applies it, and serve and work refuse a
// Redis whose version is not theirs.
const SchemaVersion = 1

// Migration is one step of the key layout: Up turns a store of Version-1
// into one of Version.
type Migration struct {
	Version int
	Name    string
	Up      func(ctx context.Context, s *Store) error
}

// Migrations are the layout's steps, in order. Version 1 is the first
// layout: nothing to change, only the version to write.
var Migrations = []Migration{
	{Version: 1, Name: "the key layout with Redis Cluster hash tags"},
}

// ErrSchemaNewer is the error of a Redis whose layout is newer than this
// build knows; ErrSchemaOlder of one that `imgflow migrate` has to bring up
// to date first.
var (
	ErrSchemaNewer = errors.New("redisstore: schema newer than this build")
	ErrSchemaOlder = errors.New("redisstore: schema older than this build")
)

// schemaLockTTL bounds how long a migrator that died holds the lock.
const schemaLockTTL = time.Minute

// StoredSchema is the layout version written in Redis; 0 when none is.
func (s *Store) StoredSchema(ctx context.Context) (int, error) {
	v, err := s.conn.bulk.Get(ctx, s.conn.keys.schema()).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, storageErr(err)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("redisstore: %s holds %q, not a schema version", s.conn.keys.schema(), v)
	}
	return n, nil
}

// CheckSchema is what serve and work do at start. A Redis without a version
// is fresh (every build since the first writes it at start): it gets
// SchemaVersion. Otherwise the version must be SchemaVersion; an older one
// is ErrSchemaOlder, a newer one ErrSchemaNewer, each with a message that
// says what to run.
func (s *Store) CheckSchema(ctx context.Context) error {
	if err := s.conn.bulk.SetNX(ctx, s.conn.keys.schema(), SchemaVersion, 0).Err(); err != nil {
		return storageErr(err)
	}
	v, err := s.StoredSchema(ctx)
	if err != nil {
		return err
	}
	switch {
	case v > SchemaVersion:
		return fmt.Errorf("%w: Redis holds imgflow schema version %d and this imgflow knows up to %d; "+
			"a newer imgflow ran `imgflow migrate` on it: run that version (or a newer one)", ErrSchemaNewer, v, SchemaVersion)
	case v < SchemaVersion:
		return fmt.Errorf("%w: Redis holds imgflow schema version %d and this imgflow needs %d: run `imgflow migrate` first",
			ErrSchemaOlder, v, SchemaVersion)
	}
	return nil
}

// MigrateReport is what Migrate found and did.
type MigrateReport struct {
	From, To int         // the stored version before and after
	Steps    []Migration // the steps applied (or, on a dry run, due)
}

// Migrate brings the stored layout up to target (SchemaVersion when 0),
// one step at a time, writing the version after each step, so a step that
// fails leaves the version of the last one that succeeded. dryRun reports
// the steps due and changes nothing. A target below the stored version is
// refused: layouts are only migrated up. Two migrators do not run at once
// (a lock key with a TTL).
func (s *Store) Migrate(ctx context.Context, target int, dryRun bool) (MigrateReport, error) {
	return s.migrate(ctx, Migrations, target, dryRun)
}

func (s *Store) migrate(ctx context.Context, steps []Migration, target int, dryRun bool) (MigrateReport, error) {
	latest := steps[len(steps)-1].Version
	if target == 0 {
		target = latest
	}
	if target < 1 || target > latest {
		return MigrateReport{}, fmt.Errorf("target version %d: this imgflow knows versions 1 to %d", target, latest)
	}
	from, err := s.StoredSchema(ctx)
	if err != nil {
		return MigrateReport{}, err
	}
	rep := MigrateReport{From: from, To: from}
	if from > latest {
		return rep, fmt.Errorf("%w: Redis holds imgflow schema version %d and this imgflow knows up to %d: run `imgflow migrate` of the version that wrote it", ErrSchemaNewer, from, latest)
	}
	if from > target {
		return rep, fmt.Errorf("the imgflow schema version in Redis, %d, is above the target %d: layouts are only migrated up", from, target)
	}
	for _, m := range steps {
		if m.Version > from && m.Version <= target {
			rep.Steps = append(rep.Steps, m)
		}
	}
	if dryRun || len(rep.Steps) == 0 {
		return rep, nil
	}
	token := strconv.FormatInt(time.Now().UnixNano(), 36)
	ok, err := s.conn.bulk.SetNX(ctx, s.conn.keys.schemaLock(), token, schemaLockTTL).Result()
	if err != nil {
		return rep, storageErr(err)
	}
	if !ok {
		return rep, fmt.Errorf("another `imgflow migrate` is running (%s is set; it expires within %s)", s.conn.keys.schemaLock(), schemaLockTTL)
	}
	defer s.conn.bulk.Del(context.WithoutCancel(ctx), s.conn.keys.schemaLock())
	for _, m := range rep.Steps {
		if m.Up != nil {
			if err := m.Up(ctx, s); err != nil {
				return rep, fmt.Errorf("migration %d (%s): %w", m.Version, m.Name, err)
			}
		}
		if err := s.conn.bulk.Set(ctx, s.conn.keys.schema(), m.Version, 0).Err(); err != nil {
			return rep, storageErr(err)
		}
		rep.To = m.Version
	}
	return rep, nil
}

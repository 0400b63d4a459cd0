package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/imgflow/imgflow/connector/redisstore"
	"github.com/imgflow/imgflow/internal/system"
)

// migrateOptions configure `imgflow migrate`.
type migrateOptions struct {
	RedisURL     string
	RedisCluster bool
	// Target (--target-version): the version to migrate to; 0, the
	// default, is the latest this build knows.
	Target int
	// DryRun (--dry-run): report the steps due, change nothing.
	DryRun bool
}

// runMigrate brings the key layout in Redis up to this build's: it prints
// the stored and the target version, then each step it applies. serve and
// work refuse to start on a layout that is not theirs; dev migrates itself.
func runMigrate(ctx context.Context, args []string) error {
	var o migrateOptions
	fs := newFlagSet("migrate", "Migrates the key layout in Redis (the schema version) to the one this imgflow knows. Run it before serve and work when an upgrade's notes say so.")
	addRedisFlags(fs, &o.RedisURL, &o.RedisCluster, "Redis URL of the deployment to migrate (required)")
	fs.Int(&o.Target, "target-version", "", 0, "schema version to migrate to (0: the latest this imgflow knows)")
	fs.Bool(&o.DryRun, "dry-run", "", false, "print the steps due without applying them")
	if err := fs.parse(args); err != nil {
		return err
	}
	if o.RedisURL == "" {
		return errors.New("REDIS_URL (--redis) is required: the Redis that serve and work use")
	}
	rdb, _, closeRedis, err := system.OpenRedis(ctx, system.RedisTarget{URL: o.RedisURL, Cluster: o.RedisCluster})
	if err != nil {
		return err
	}
	defer closeRedis()
	return migrate(ctx, redisstore.New(rdb, redisstore.Options{}), o, os.Stdout)
}

func migrate(ctx context.Context, store *redisstore.Store, o migrateOptions, out io.Writer) error {
	target := o.Target
	if target == 0 {
		target = redisstore.SchemaVersion
	}
	rep, err := store.Migrate(ctx, o.Target, o.DryRun)
	fmt.Fprintf(out, "schema version: current %d, target %d\n", rep.From, target)
	for _, m := range rep.Steps {
		verb := "applied"
		if o.DryRun {
			verb = "due"
		}
		if !o.DryRun && m.Version > rep.To {
			verb = "not applied"
		}
		fmt.Fprintf(out, "  %d  %s (%s)\n", m.Version, m.Name, verb)
	}
	if err != nil {
		return err
	}
	switch {
	case o.DryRun:
		fmt.Fprintf(out, "dry run: %d step(s) due, nothing changed\n", len(rep.Steps))
	case len(rep.Steps) == 0:
		fmt.Fprintln(out, "up to date")
	default:
		fmt.Fprintf(out, "schema version %d\n", rep.To)
	}
	return nil
}

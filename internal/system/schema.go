package system

import (
	"context"

	"github.com/imgflow/imgflow/connector/redisstore"
)

// CheckSchema is what serve and work ask before they start: the key layout
// in Redis is the one this build knows (a fresh Redis gets it).
func (a *App) CheckSchema(ctx context.Context) error {
	return a.store.CheckSchema(ctx)
}

// Migrate brings the key layout in Redis up to this build's (imgflow
// migrate, and dev at start).
func (a *App) Migrate(ctx context.Context) (redisstore.MigrateReport, error) {
	return a.store.Migrate(ctx, 0, false)
}

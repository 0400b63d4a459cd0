package system

import (
	"context"
	"net/http"

	"github.com/imgflow/imgflow/connector/guard"
)

// Allow is where flows' URLs may lead besides public addresses: the
// allow-list, with loopback in dev (dev's banner prints it).
func (a *App) Allow() guard.Policy { return a.allow }

// Ping says whether the App's Redis answers (work's /health).
func (a *App) Ping(ctx context.Context) error { return a.store.Ping(ctx) }

// MetricsHandler serves the App's Prometheus metrics (work's /metrics;
// the API mounts its own).
func (a *App) MetricsHandler() http.Handler { return a.metrics.Handler() }

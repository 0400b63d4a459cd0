package system

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/admin"
)

// OpsHandler serves the ops listener (IMGFLOW_OPS_ADDR) of serve and work,
// apart from the public API so that an Ingress to the API never publishes
// them:
//   - GET /metrics: Prometheus;
//   - GET /health: liveness, 200 while the process answers (no dependency:
//     a Redis outage must not get every pod restarted);
//   - GET /ready: readiness, 200 while Redis answers, the one dependency
//     without which nothing can be answered (the compression API and S3
//     are watched by metrics and alerts instead: an outage of either
//     must not take the API, its polls and the console off the Service);
//   - with dashboard (serve) and IMGFLOW_ADMIN_TOKEN set, the queue
//     dashboard at /admin/queues.
func (a *App) OpsHandler(log *slog.Logger, dashboard bool) http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.GET("/metrics", echo.WrapHandler(a.metrics.Handler()))
	e.GET("/health", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "healthy", "service": "imgflow"})
	})
	e.GET("/ready", func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
		defer cancel()
		if err := a.store.Ping(ctx); err != nil {
			// The cause (addresses) is for the logs, not for whoever reaches /ready.
			log.Warn("not ready: Redis does not answer", "redis", RedactURL(a.opts.RedisURL), "err", scrub(err.Error(), a.opts.RedisURL))
			c.Response().Header().Set("Retry-After", "5")
			return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "down": []string{"redis"}, "checks": map[string]string{"redis": "unavailable"}})
		}
		return c.JSON(http.StatusOK, map[string]any{"status": "ready", "checks": map[string]string{"redis": "ok"}})
	})
	if dashboard {
		a.closers = append(a.closers, admin.Mount(e, a.redisOpt, a.opts.AdminToken))
	}
	return e
}

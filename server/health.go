package server

import (
	"context"
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// health is liveness: no dependencies, so a slow Redis never restarts pods.
func (s *Server) health(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "healthy", "service": "imgflow"})
}

// ready checks every dependency: 200 when all answer, else 503 naming
// those that do not.
func (s *Server) ready(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), 3*time.Second)
	defer cancel()
	checks := map[string]string{}
	down := []string{}
	for name, check := range s.cfg.Ready {
		if err := check(ctx); err != nil {
			// The cause (addresses, say) is for the logs, not for anyone
			// who can reach /ready.
			s.log.Warn("not ready", "dependency", name, "err", err)
			checks[name] = connector.ErrorMessage(err)
			down = append(down, name)
		} else {
			checks[name] = "ok"
		}
	}
	sort.Strings(down)
	if len(down) > 0 {
		c.Response().Header().Set("Retry-After", "5")
		return c.JSON(http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "down": down, "checks": checks})
	}
	return c.JSON(http.StatusOK, map[string]any{"status": "ready", "checks": checks})
}

package metrics

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
)

// unmatchedRoute labels requests that matched no route, so that scanners
// probing random paths cannot grow the number of series.
const unmatchedRoute = "unmatched"

// Echo is a middleware that counts and times every request by method, route
// pattern (c.Path(), e.g. /v1/jobs/:id, never the raw URL) and status. Jobs
// created are counted by the server's OnJobCreated hook (JobCreated), which
// knows the input kind and tells a new job from a replay.
//
// A handler's error is turned into its response here (c.Error), so the
// status counted is the one the caller gets; the middleware then returns
// nil, as Echo's error handling is done.
func (m *Metrics) Echo() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			if err := next(c); err != nil {
				c.Error(err)
			}
			route := c.Path()
			if route == "" {
				route = unmatchedRoute
			}
			method := c.Request().Method
			status := c.Response().Status
			m.httpRequests.WithLabelValues(method, route, strconv.Itoa(status)).Inc()
			m.httpDuration.WithLabelValues(method, route).Observe(time.Since(start).Seconds())
			return nil
		}
	}
}

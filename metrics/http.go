package metrics

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
)

// InputKindKey is the echo.Context key under which the API may record the
// input kind of the job a POST /v1/jobs created ("url", "base64",
// "upload"), and "" when it answered a repeated Idempotency-Key with the
// job made before. When the key is set the middleware counts exactly that;
// when it is absent the middleware counts every 200 or 202 answer and can
// only tell uploads (multipart) from JSON bodies ("json").
const InputKindKey = "imgflow.input_kind"

// unmatchedRoute labels requests that matched no route, so that scanners
// probing random paths cannot grow the number of series.
const unmatchedRoute = "unmatched"

// Echo is a middleware that counts and times every request by method, route
// pattern (c.Path(), e.g. /v1/jobs/:id, never the raw URL) and status, and
// counts jobs created by POST /v1/jobs.
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
			if method == http.MethodPost && route == "/v1/jobs" && (status == http.StatusOK || status == http.StatusAccepted) {
				m.countCreated(c)
			}
			return nil
		}
	}
}

func (m *Metrics) countCreated(c echo.Context) {
	if v, ok := c.Get(InputKindKey).(string); ok {
		if v != "" {
			m.JobCreated(v)
		}
		return
	}
	if strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEMultipartForm) {
		m.JobCreated("upload")
		return
	}
	m.JobCreated("json")
}

package server

import (
	"log/slog"
	"time"

	"github.com/labstack/echo/v4"
)

// logger is the request's logger: it carries the request id, and the job id
// once a handler knows it. Keys and image bytes are never logged.
func (s *Server) logger(c echo.Context) *slog.Logger {
	if l, ok := c.Get("logger").(*slog.Logger); ok {
		return l
	}
	return s.log
}

// withJob adds the job id to the request's log lines from here on.
func (s *Server) withJob(c echo.Context, jobID string) {
	c.Set("logger", s.logger(c).With("job_id", jobID))
}

func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		rid, _ := c.Get("request_id").(string)
		c.Set("logger", s.log.With("request_id", rid))
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		level := slog.LevelInfo
		if c.Response().Status >= 500 {
			level = slog.LevelError
		}
		s.logger(c).Log(c.Request().Context(), level, "http request",
			"method", c.Request().Method, "route", c.Path(), "status", c.Response().Status,
			"duration_ms", float64(time.Since(start).Microseconds())/1000)
		return nil
	}
}

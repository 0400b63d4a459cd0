package server

import (
	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// A POST with ?wait watches its job from before the job is queued
// (JobStore.WatchJob), so that waiting for it needs no read of the record:
// the finish is heard from the store's publication alone. createJob marks
// the request with ctxWatch, the creation service's BeforeQueue starts the
// watch, respondJob waits on it, and createJob stops it.
const ctxWatch = "job_watch"

// jobWatch is a started watch and the job it is on.
type jobWatch struct {
	id    string
	watch connector.JobWatch
}

// watchBeforeQueueing starts the watch on job id when the request asked for
// one. A watch that cannot start only costs the read WaitJob makes.
func (s *Server) watchBeforeQueueing(c echo.Context, id string) {
	if _, asked := c.Get(ctxWatch).(*jobWatch); !asked {
		return
	}
	stopWatch(c) // an earlier job of this request (an adopted one) is not waited on
	w, err := s.cfg.Jobs.WatchJob(c.Request().Context(), id)
	if err != nil {
		return
	}
	c.Set(ctxWatch, &jobWatch{id: id, watch: w})
}

// watchOf is the request's watch on job id, nil when there is none.
func watchOf(c echo.Context, id string) connector.JobWatch {
	if w, _ := c.Get(ctxWatch).(*jobWatch); w != nil && w.id == id {
		return w.watch
	}
	return nil
}

// stopWatch ends the request's watch, if one started.
func stopWatch(c echo.Context) {
	if w, _ := c.Get(ctxWatch).(*jobWatch); w != nil {
		w.watch.Stop()
		c.Set(ctxWatch, (*jobWatch)(nil))
	}
}

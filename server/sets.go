package server

import (
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/app"
)

// Responsive sets (connector.VariantSet): POST /v1/jobs with "variants"
// makes one, through the creation service, as a batch whose items are
// the variants. POST /v1/jobs/variants is the same request with variants
// required: a path of its own for platforms whose files key operations by
// method and path (Power Automate's swagger, OpenAPI), as Make Image Sizes
// calls it. It is answered as its batch is (202 with Location to
// GET /v1/batches/{id}?poll=1 until every variant ended, ?wait=N), with
// the variants' jobs keyed by id, a srcset and a <picture> snippet added.
// GET /v1/batches/{id} answers a set the same way, and its archive is the
// set's ZIP.

// createSet is POST /v1/jobs/variants.
func (s *Server) createSet(c echo.Context) error {
	return s.create(c, s.readSetRequest)
}

// readSetRequest binds a create request that must ask for a set.
func (s *Server) readSetRequest(c echo.Context) (*jobRequest, error) {
	in, err := s.readJobRequest(c)
	if err == nil && in.Variants == nil {
		err = fieldError("variants", "is required here: list the sizes to make, such as [{\"id\": \"sm\", \"resize\": \"320x\"}] (or ?variants="+connector.VariantSpecExample+" beside an image body); POST /v1/jobs makes a single job")
	}
	return in, err
}

// makeSet makes the set a bound request asks for (POST /v1/jobs with
// variants, or POST /v1/jobs/variants); with ?include=jobs its answer
// (and the Location polled) carries the variants' jobs, in order.
func (s *Server) makeSet(c echo.Context, key string, in *jobRequest, wait time.Duration, withJobs bool) error {
	r := &app.SetRequest{Owner: s.owner(key), Key: key, IdempotencyKey: c.Request().Header.Get("Idempotency-Key"),
		Input: in.appInput(), Variants: in.Variants, CallbackURL: in.CallbackURL}
	if r.IdempotencyKey != "" {
		r.Fingerprint = in.fingerprint()
	}
	b, replay, err := s.cfg.Maker.CreateSet(s.requestContext(c), r)
	if err != nil {
		return serviceError(err)
	}
	if !replay {
		s.logger(c).With("batch_id", b.ID).Info("variant set created", "variants", len(b.JobIDs), "input", in.kind)
		s.cfg.OnJobCreated(in.kind)
	}
	if wait > 0 && b.Status != connector.BatchFinished {
		if b, err = s.awaitBatch(c.Request().Context(), b, wait); err != nil {
			return err
		}
	}
	return s.answerBatch(c, b, withJobs, true)
}

// answerSet answers the set whose batch view is view.
func (s *Server) answerSet(c echo.Context, status int, view *connector.Batch, withJobs bool) error {
	jobs, err := s.batchJobs(c.Request().Context(), view)
	if err != nil {
		return err
	}
	out := connector.VariantSetAnswer{VariantSet: connector.NewVariantSet(view, jobs)}
	if withJobs {
		out.Jobs = jobs
	}
	return c.JSON(status, out)
}

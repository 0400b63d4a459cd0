package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// listDeliveries is GET /v1/jobs/:id/deliveries: the job's callback and
// hook deliveries, each with every attempt. A finished job's callback that
// has not been attempted yet is listed as pending, with no attempts.
func (s *Server) listDeliveries(c echo.Context) error {
	job, records, err := s.ownedJobDeliveries(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, connector.DeliveryList{JobID: job.ID, Deliveries: records})
}

// ownedJobDeliveries is the :id job of the request's key and its
// deliveries.
func (s *Server) ownedJobDeliveries(c echo.Context) (*connector.Job, []*connector.DeliveryRecord, error) {
	job, err := s.ownedJob(c)
	if err != nil {
		return nil, nil, err
	}
	log, err := s.cfg.Hooks.DeliveryAttempts(c.Request().Context(), job.ID)
	if err != nil {
		return nil, nil, err
	}
	records := connector.GroupDeliveries(log)
	cb := connector.CallbackDeliveryID(job.ID)
	if job.CallbackURL != "" && job.Status.Finished() && findDelivery(records, cb) == nil {
		records = append([]*connector.DeliveryRecord{{
			ID: cb, Kind: connector.KindCallback, Event: job.EventType(),
			Target: connector.TargetForDisplay(job.CallbackURL), Status: connector.DeliveryPending,
			Attempts: []*connector.DeliveryAttempt{},
		}}, records...)
	}
	return job, records, nil
}

func findDelivery(records []*connector.DeliveryRecord, id string) *connector.DeliveryRecord {
	for _, r := range records {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// redeliver is POST /v1/jobs/:id/deliveries/:delivery_id/redeliver: the
// same message (same webhook-id and body) is queued for one more attempt,
// with a fresh timestamp and signature. The worker sends it, as it sends
// every delivery, so the API never connects to receivers; the attempt
// shows up in the delivery list.
func (s *Server) redeliver(c echo.Context) error {
	job, records, err := s.ownedJobDeliveries(c)
	if err != nil {
		return err
	}
	id := c.Param("delivery_id")
	rec := findDelivery(records, id)
	if rec == nil {
		return connector.Errorf(connector.ENOTFOUND, "delivery %s of job %s not found", id, job.ID)
	}
	ctx := c.Request().Context()
	if rec.HookID != "" {
		h, err := s.cfg.Hooks.Get(ctx, rec.HookID)
		switch {
		case isCode(err, connector.ENOTFOUND) || (err == nil && h.Owner != job.Owner):
			return connector.Errorf(connector.ENOTFOUND, "hook %s was deleted: its deliveries cannot be sent again", rec.HookID)
		case err != nil:
			return err
		case h.Disabled:
			return connector.Errorf(connector.EDISABLED, "hook %s is disabled (%s): enable it (POST /v1/hooks/%s/enable) to receive events", rec.HookID, connector.DescribeDisabled(h.DisabledReason), rec.HookID)
		}
	}
	d := connector.Delivery{ID: rec.ID, JobID: job.ID, Owner: job.Owner, HookID: rec.HookID, Event: rec.Event, Redeliver: true}
	if err := s.cfg.Queue.EnqueueDelivery(ctx, d); err != nil {
		return err
	}
	s.logger(c).Info("redelivery queued", "delivery_id", rec.ID, "hook_id", rec.HookID)
	c.Response().Header().Set(echo.HeaderLocation, s.cfg.PublicURL+"/v1/jobs/"+job.ID+"/deliveries")
	return c.JSON(http.StatusAccepted, connector.RedeliveryAnswer{DeliveryID: rec.ID, Status: "queued"})
}

package server

import (
	"cmp"
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/app"
)

// Batches (connector/batch.go): POST /v1/batches makes one ordinary job per
// item, each marked with the batch and its index, and answers with the
// batch. The creation service (internal/app) makes it whole or not at all:
// its items are queued only once it is made; its counts come from the
// worker as items start and end.

// createBatch is POST /v1/batches.
func (s *Server) createBatch(c echo.Context) error {
	if s.cfg.Batches == nil {
		return connector.Errorf(connector.ENOTFOUND, "batches are not served here")
	}
	if err := checkQuery(c, "wait", "include"); err != nil {
		return err
	}
	wait, err := s.parseWait(c)
	if err != nil {
		return err
	}
	withJobs, err := batchInclude(c)
	if err != nil {
		return err
	}
	key, in, release, err := bindRequest(s, c, s.readBatchRequest)
	if err != nil {
		return err
	}
	defer release() // the items' bytes are held until they are stored
	r := &app.BatchRequest{Owner: s.owner(key), Key: key, IdempotencyKey: c.Request().Header.Get("Idempotency-Key"),
		Items: make([]app.Input, len(in.Items)), CallbackURL: in.CallbackURL, Metadata: in.Metadata, Dedupe: in.Dedupe}
	for i, item := range in.Items {
		r.Items[i] = item.appInput()
	}
	if r.IdempotencyKey != "" {
		r.Fingerprint = in.fingerprint()
	}
	b, replay, err := s.cfg.Maker.CreateBatch(s.requestContext(c), r)
	if err != nil {
		return serviceError(err)
	}
	release()
	log := s.logger(c).With("batch_id", b.ID)
	if !replay {
		log.Info("batch created", "items", len(b.JobIDs))
		for _, item := range in.Items {
			s.cfg.OnJobCreated(item.kind)
		}
	}
	if b, err = s.awaitBatch(c.Request().Context(), b, wait); err != nil {
		return err
	}
	return s.answerBatch(c, b, withJobs, true)
}

// batchInclude reads ?include=: jobs puts every item's job in the answer;
// anything else is refused, as a typo would quietly drop the results.
func batchInclude(c echo.Context) (bool, error) {
	v, ok := c.QueryParams()["include"]
	if !ok {
		return false, nil
	}
	if len(v) != 1 || v[0] != connector.IncludeJobs {
		return false, fieldError("include", "must be jobs (or left out)")
	}
	return true, nil
}

// answerBatch answers the batch, with its items' jobs when withJobs. An
// unfinished batch is 202 with Location and Retry-After when poll (the
// create answer, or GET ?poll=1): the asynchronous pattern Power Automate
// follows, its Location answering 202 until the batch is finished and
// asking for the jobs again, so the final 200 carries them.
func (s *Server) answerBatch(c echo.Context, b *connector.Batch, withJobs, poll bool) error {
	status := http.StatusOK
	if poll && b.Status != connector.BatchFinished {
		location := s.cfg.PublicURL + "/v1/batches/" + b.ID + "?poll=1"
		if withJobs {
			location += "&include=" + connector.IncludeJobs
		}
		h := c.Response().Header()
		h.Set(echo.HeaderLocation, location)
		h.Set("Retry-After", "1")
		status = http.StatusAccepted
	}
	view := s.renderBatch(b)
	if b.VariantIDs != nil {
		return s.answerSet(c, status, view, withJobs) // sets.go
	}
	if !withJobs {
		return c.JSON(status, view)
	}
	jobs, err := s.batchJobs(c.Request().Context(), b)
	if err != nil {
		return err
	}
	return c.JSON(status, connector.BatchAnswer{Batch: view, Jobs: jobs})
}

// batchJobs reads every item's job in index order, as GET /v1/jobs/{id}
// shows it, a page of reads at a time; a job gone (expired) is left out.
func (s *Server) batchJobs(ctx context.Context, b *connector.Batch) ([]*connector.Job, error) {
	const page = 100
	out := make([]*connector.Job, 0, len(b.JobIDs))
	for from := 0; from < len(b.JobIDs); from += page {
		jobs, err := s.cfg.Batches.GetJobs(ctx, b.JobIDs[from:min(from+page, len(b.JobIDs))])
		if err != nil {
			return nil, err
		}
		for _, j := range jobs {
			if j != nil {
				out = append(out, s.render(j))
			}
		}
	}
	return out, nil
}

// renderBatch is the batch as its owner sees it (connector.View, render.go).
func (s *Server) renderBatch(b *connector.Batch) *connector.Batch { return s.view().Batch(b) }

// ownedBatch loads a batch of the request's key; another key's is not found.
func (s *Server) ownedBatch(c echo.Context) (*connector.Batch, error) {
	if s.cfg.Batches == nil {
		return nil, connector.Errorf(connector.ENOTFOUND, "batches are not served here")
	}
	b, err := s.cfg.Batches.Get(c.Request().Context(), c.Param("id"))
	if err == nil && b.Owner != s.owner(apiKey(c)) {
		err = connector.Errorf(connector.ENOTFOUND, "batch %s not found", c.Param("id"))
	}
	return b, err
}

// getBatch is GET /v1/batches/:id; ?include=jobs adds the items' jobs,
// and ?poll=1 answers 202 while the batch runs (see answerBatch).
func (s *Server) getBatch(c echo.Context) error {
	b, err := s.ownedBatch(c)
	if err != nil {
		return err
	}
	withJobs, err := batchInclude(c)
	if err != nil {
		return err
	}
	poll, err := strconv.ParseBool(cmp.Or(c.QueryParam("poll"), "false"))
	if err != nil {
		return fieldError("poll", "must be 1 or 0 (true or false)")
	}
	return s.answerBatch(c, b, withJobs, poll)
}

// listBatchesPage is the body of GET /v1/batches.
type listBatchesPage struct {
	Batches    []*connector.Batch `json:"batches"`
	NextCursor string             `json:"next_cursor,omitempty"`
}

// listBatches is GET /v1/batches: the key's batches, newest first.
func (s *Server) listBatches(c echo.Context) error {
	if s.cfg.Batches == nil {
		return connector.Errorf(connector.ENOTFOUND, "batches are not served here")
	}
	limit, cursor, err := idPage(c)
	if err != nil {
		return err
	}
	page, err := s.cfg.Batches.List(c.Request().Context(), s.owner(apiKey(c)), connector.BatchFilter{Limit: limit, Cursor: cursor})
	if err != nil {
		return err
	}
	out := listBatchesPage{Batches: make([]*connector.Batch, 0, len(page.Batches)), NextCursor: page.NextCursor}
	for _, b := range page.Batches {
		out.Batches = append(out.Batches, s.renderBatch(b))
	}
	return c.JSON(http.StatusOK, out)
}

// listBatchJobs is GET /v1/batches/:id/jobs: the items' jobs in index
// order, each as GET /v1/jobs/:id shows it; the cursor is the index to
// start from. ?status= keeps one status.
func (s *Server) listBatchJobs(c echo.Context) error {
	b, err := s.ownedBatch(c)
	if err != nil {
		return err
	}
	limit, err := pageLimit(c, 20, 100)
	if err != nil {
		return err
	}
	from := 0
	if raw := c.QueryParam("cursor"); raw != "" {
		if from, err = strconv.Atoi(raw); err != nil || from < 0 || from > len(b.JobIDs) || strconv.Itoa(from) != raw {
			return fieldError("cursor", "is not a cursor this API returned")
		}
	}
	status := connector.JobStatus(c.QueryParam("status"))
	if status != "" && !status.Valid() {
		return fieldError("status", "must be one of: queued, processing, completed, failed")
	}
	out := listJobsPage{Jobs: []*connector.Job{}}
	for from < len(b.JobIDs) && len(out.Jobs) < limit {
		ids := b.JobIDs[from:min(from+limit, len(b.JobIDs))]
		jobs, err := s.cfg.Batches.GetJobs(c.Request().Context(), ids)
		if err != nil {
			return err
		}
		for _, j := range jobs {
			if len(out.Jobs) == limit {
				break
			}
			from++
			if j != nil && (status == "" || j.Status == status) {
				out.Jobs = append(out.Jobs, s.render(j))
			}
		}
	}
	if from < len(b.JobIDs) {
		out.NextCursor = strconv.Itoa(from)
	}
	return c.JSON(http.StatusOK, out)
}

package server

import (
	"cmp"
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// Batches (connector/batch.go): POST /v1/batches makes one ordinary job per
// item, each marked with the batch and its index, and answers with the
// batch. The batch is recorded before its jobs, so that no item can end
// uncounted; its counts come from the worker as items start and end.

// batchMakers is how many items of one batch are stored and queued at
// once: the store's autopipeliner sends what they write together, so a
// 1,000-item batch costs tens of round trips, not thousands.
const batchMakers = 64

// createBatch is POST /v1/batches.
func (s *Server) createBatch(c echo.Context) error {
	if s.cfg.Batches == nil {
		return connector.Errorf(connector.ENOTFOUND, "batches are not served here")
	}
	wait, err := s.parseWait(c)
	if err != nil {
		return err
	}
	withJobs, err := batchInclude(c)
	if err != nil {
		return err
	}
	if key := headerKey(c); key != "" {
		if err := s.authenticate(c, key); err != nil {
			return err
		}
	}
	acquired, err := s.bodies.acquire(c)
	if err != nil {
		return err
	}
	release := sync.OnceFunc(acquired) // the items' bytes are held until they are stored
	defer release()
	in, err := s.readBatchRequest(c)
	if err != nil {
		return err
	}
	key, err := requestKey(c, in.APIKey)
	if err != nil {
		return err
	}
	b, replay, err := s.createBatchOnce(c, s.owner(key), key, in)
	if err != nil {
		return err
	}
	release()
	log := s.logger(c).With("batch_id", b.ID)
	if !replay {
		log.Info("batch created", "items", len(b.JobIDs))
		for _, item := range in.Items {
			s.cfg.OnJobCreated(item.kind)
		}
	}
	if wait > 0 && b.Status != connector.BatchFinished {
		if b, err = s.waitBatch(c.Request().Context(), b, wait); err != nil {
			return err
		}
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

// createBatchOnce admits and makes the batch, or, for a repeated
// Idempotency-Key with the same request, returns the batch made the first
// time. Idempotency-Keys of batches and of jobs are apart.
func (s *Server) createBatchOnce(c echo.Context, owner, key string, in *batchRequest) (*connector.Batch, bool, error) {
	ctx := c.Request().Context()
	idemKey := c.Request().Header.Get("Idempotency-Key")
	fresh, err := uuid.NewV7()
	if err != nil {
		return nil, false, err
	}
	if idemKey == "" {
		b, err := s.makeBatch(c, fresh.String(), owner, key, in)
		return b, false, err
	}
	if len(idemKey) > 255 {
		return nil, false, connector.Errorf(connector.EINVALID, "Idempotency-Key must be at most 255 characters")
	}
	scoped := "batch:" + idemKey
	rec, reserved, err := s.cfg.Idempotency.ReserveIdempotencyKey(ctx, owner, scoped, in.fingerprint(), fresh.String())
	if err != nil {
		return nil, false, err
	}
	if !reserved {
		switch {
		case rec.Fingerprint != in.fingerprint():
			return nil, false, connector.Errorf(connector.EMISMATCH, "Idempotency-Key %q was already used with a different batch", idemKey)
		case rec.JobID == "":
			return nil, false, &connector.Error{Code: connector.ECONFLICT, RetryAfter: time.Second,
				Message: "a request with this Idempotency-Key is still in flight; retry shortly"}
		}
		b, err := s.cfg.Batches.GetBatch(ctx, rec.JobID)
		return b, true, err
	}
	stop := s.holdIdempotencyKey(c, owner, scoped, fresh.String())
	defer stop()
	if rec.PlannedJobID != fresh.String() {
		// The request that reserved the key died; a batch it recorded is
		// deleted with its jobs by nothing, so it is the answer now.
		if b, err := s.cfg.Batches.GetBatch(ctx, rec.PlannedJobID); err == nil {
			s.completeIdempotencyKey(c, owner, scoped, b.ID)
			return b, true, nil
		}
	}
	b, err := s.makeBatch(c, rec.PlannedJobID, owner, key, in)
	if err != nil {
		if rerr := s.cfg.Idempotency.ReleaseIdempotencyKey(context.WithoutCancel(ctx), owner, scoped); rerr != nil {
			s.logger(c).Warn("idempotency key not released", "err", rerr)
		}
		return nil, false, err
	}
	s.completeIdempotencyKey(c, owner, scoped, b.ID)
	return b, false, nil
}

// makeBatch admits the batch (URLs outside private networks, the key's
// preflight: a zero balance is 429 and makes nothing), records it, then
// stores and queues its items. Should an item fail to be made (Redis
// down), what was made is deleted and the caller hears 503: nothing runs.
func (s *Server) makeBatch(c echo.Context, id, owner, key string, in *batchRequest) (*connector.Batch, error) {
	ctx := c.Request().Context()
	for i, item := range in.Items {
		if item.ImageURL != "" {
			if err := s.cfg.CheckURL(ctx, "image_url", item.ImageURL); err != nil {
				return nil, itemError(i, err)
			}
		}
	}
	if in.CallbackURL != "" {
		if err := s.cfg.CheckURL(ctx, "callback_url", in.CallbackURL); err != nil {
			return nil, err
		}
	}
	if err := s.preflight(c, key); err != nil {
		return nil, err
	}
	b := &connector.Batch{ID: id, Status: connector.BatchRunning, CreatedAt: s.cfg.Now().UTC(), Metadata: in.Metadata,
		Owner: owner, CallbackURL: in.CallbackURL, JobIDs: make([]string, len(in.Items))}
	for i := range b.JobIDs {
		jid, err := uuid.NewV7()
		if err != nil {
			return nil, err
		}
		b.JobIDs[i] = jid.String()
	}
	b.Counts = connector.BatchCounts{Total: len(b.JobIDs), Queued: len(b.JobIDs)}
	if in.CallbackURL != "" {
		b.Callback = &connector.DeliveryState{Status: connector.DeliveryPending}
	}
	if err := s.cfg.Batches.CreateBatch(ctx, b); err != nil {
		return nil, err
	}
	sealed := s.cfg.Keyring.Seal(key)
	errs := make([]error, len(in.Items))
	sem := make(chan struct{}, batchMakers)
	var wg sync.WaitGroup
	for i, item := range in.Items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			job := s.batchJobRecord(b.ID, b.JobIDs[i], owner, sealed, i, item, b.CreatedAt)
			errs[i] = s.makeItem(ctx, job, item)
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			s.unmakeBatch(context.WithoutCancel(ctx), b, in)
			return nil, err
		}
	}
	return b, nil
}

// batchJobRecord is a batch item's job: a job as POST /v1/jobs makes it, with
// the batch's id and the item's index and without a callback of its own.
func (s *Server) batchJobRecord(batchID, id, owner string, sealed []byte, index int, item *jobRequest, now time.Time) *connector.Job {
	idx := index
	job := &connector.Job{ID: id, Status: connector.StatusQueued, CreatedAt: now, UpdatedAt: now,
		Input:    connector.JobInput{Kind: item.kind, URL: item.ImageURL, Filename: item.Filename},
		Metadata: item.Metadata, Owner: owner, SealedKey: sealed, BatchID: batchID, BatchIndex: &idx, Transform: item.transform}
	if item.image != nil {
		job.Input.Size = item.image.Size()
		job.Input.MIMEType = connector.SniffBytes(item.image)
	}
	return job
}

// makeItem stores an item's input and record and queues it. Items are not
// held to the key's cap of unfinished jobs (MaxJobsPerKey): a batch is
// admitted whole or not at all, and its size is capped instead.
func (s *Server) makeItem(ctx context.Context, job *connector.Job, item *jobRequest) error {
	var input connector.Bytes
	if item.image != nil {
		input = item.image
	}
	if mk, ok := s.cfg.Jobs.(jobMaker); ok && (input == nil || sameStore(s.cfg.Jobs, s.cfg.Blobs)) {
		if err := mk.CreateJobWithInput(ctx, job, input, s.cfg.ResultTTL, 0); err != nil {
			return err
		}
	} else {
		if input != nil {
			if err := s.cfg.Blobs.PutBlob(ctx, connector.InputBlobKey(job.ID), item.image.Reader(), item.image.Size(), s.cfg.ResultTTL); err != nil {
				return err
			}
		}
		if err := s.cfg.Jobs.CreateJob(ctx, job); err != nil {
			return err
		}
	}
	return s.cfg.Queue.EnqueueCompress(ctx, job.ID)
}

// unmakeBatch deletes a batch whose making failed, its jobs and inputs.
// A job queued already finds its record gone and is dropped.
func (s *Server) unmakeBatch(ctx context.Context, b *connector.Batch, in *batchRequest) {
	for i, id := range b.JobIDs {
		if err := s.cfg.Jobs.DeleteJob(ctx, id); err != nil && !isCode(err, connector.ENOTFOUND) {
			s.log.Warn("batch item not deleted after a failed batch; it expires", "batch_id", b.ID, "job_id", id, "err", err)
		}
		if in.Items[i].image != nil {
			s.cfg.Blobs.DeleteBlob(ctx, connector.InputBlobKey(id))
		}
	}
	if err := s.cfg.Batches.DeleteBatch(ctx, b.ID); err != nil {
		s.log.Warn("batch not deleted after its items failed; it expires", "batch_id", b.ID, "err", err)
	}
}

// waitBatch polls the batch until it finishes or wait passes: one read
// per 100 ms, whatever the batch's size.
func (s *Server) waitBatch(ctx context.Context, b *connector.Batch, wait time.Duration) (*connector.Batch, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for b.Status != connector.BatchFinished {
		select {
		case <-ctx.Done():
			return b, nil
		case <-t.C:
		}
		now, err := s.cfg.Batches.GetBatch(ctx, b.ID)
		if err != nil {
			if ctx.Err() != nil {
				return b, nil
			}
			return nil, err
		}
		b = now
	}
	return b, nil
}

// renderBatch is the batch as its owner sees it (connector.View, render.go).
func (s *Server) renderBatch(b *connector.Batch) *connector.Batch { return s.view().Batch(b) }

// ownedBatch loads a batch of the request's key; another key's is not found.
func (s *Server) ownedBatch(c echo.Context) (*connector.Batch, error) {
	if s.cfg.Batches == nil {
		return nil, connector.Errorf(connector.ENOTFOUND, "batches are not served here")
	}
	b, err := s.cfg.Batches.GetBatch(c.Request().Context(), c.Param("id"))
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
	limit, err := batchPageLimit(c)
	if err != nil {
		return err
	}
	cursor := c.QueryParam("cursor")
	if cursor != "" {
		if id, err := uuid.Parse(cursor); err != nil || id.String() != cursor {
			return fieldError("cursor", "is not a cursor this API returned")
		}
	}
	page, err := s.cfg.Batches.ListBatches(c.Request().Context(), s.owner(apiKey(c)), connector.BatchFilter{Limit: limit, Cursor: cursor})
	if err != nil {
		return err
	}
	out := listBatchesPage{Batches: make([]*connector.Batch, 0, len(page.Batches)), NextCursor: page.NextCursor}
	for _, b := range page.Batches {
		out.Batches = append(out.Batches, s.renderBatch(b))
	}
	return c.JSON(http.StatusOK, out)
}

// batchPageLimit reads ?limit=N, 1 to 100, default 20.
func batchPageLimit(c echo.Context) (int, error) {
	raw := c.QueryParam("limit")
	if raw == "" {
		return 20, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > 100 {
		return 0, fieldError("limit", "must be a whole number from 1 to 100")
	}
	return n, nil
}

// listBatchJobs is GET /v1/batches/:id/jobs: the items' jobs in index
// order, each as GET /v1/jobs/:id shows it; the cursor is the index to
// start from. ?status= keeps one status.
func (s *Server) listBatchJobs(c echo.Context) error {
	b, err := s.ownedBatch(c)
	if err != nil {
		return err
	}
	limit, err := batchPageLimit(c)
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

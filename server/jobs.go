package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// createJob is POST /v1/jobs.
func (s *Server) createJob(c echo.Context) error {
	if dry, err := wantsDryRun(c); dry || err != nil {
		if err != nil {
			return err
		}
		return s.dryRun(c) // dryrun.go
	}
	wait, err := s.parseWait(c)
	if err != nil {
		return err
	}
	if err := checkInclude(c); err != nil {
		return err
	}
	// A key in a header is checked before the body is read: an unknown
	// key costs the server no memory.
	if key := headerKey(c); key != "" {
		if err := s.authenticate(c, key); err != nil {
			return err
		}
	}
	release, err := s.bodies.acquire(c)
	if err != nil {
		return err
	}
	in, err := s.readJobRequest(c)
	release()
	if err != nil {
		return err
	}
	key, err := requestKey(c, in.APIKey)
	if err != nil {
		return err
	}
	if wait > 0 {
		c.Set(ctxWatch, (*jobWatch)(nil)) // makeJob watches the job it queues
		defer stopWatch(c)
	}
	job, replay, err := s.createOnce(c, s.owner(key), key, in)
	if err != nil {
		return err
	}
	s.withJob(c, job.ID)
	if !replay {
		s.logger(c).Info("job created", "input", job.Input.Kind, "size", job.Input.Size)
		s.cfg.OnJobCreated(job.Input.Kind)
	}
	return s.respondJob(c, job, wait)
}

// admit runs the checks a new job must pass: URLs outside private networks,
// and the key's preflight (valid, credits left). A replayed Idempotency-Key
// skips them: its job exists, whatever the balance is now.
func (s *Server) admit(c echo.Context, key string, in *jobRequest) error {
	ctx := c.Request().Context()
	if in.ImageURL != "" {
		if err := s.cfg.CheckURL(ctx, "image_url", in.ImageURL); err != nil {
			return err
		}
	}
	if in.CallbackURL != "" {
		if err := s.cfg.CheckURL(ctx, "callback_url", in.CallbackURL); err != nil {
			return err
		}
	}
	return s.preflight(c, key)
}

// createOnce admits, creates and enqueues the job, or, for a repeated
// Idempotency-Key with the same request, returns the job made the first time.
func (s *Server) createOnce(c echo.Context, owner, key string, in *jobRequest) (job *connector.Job, replay bool, err error) {
	ctx := c.Request().Context()
	idemKey := c.Request().Header.Get("Idempotency-Key")
	if idemKey == "" {
		if err := s.admit(c, key, in); err != nil {
			return nil, false, err
		}
		id, err := uuid.NewV7() // time-ordered: the list index and cursors rely on it
		if err != nil {
			return nil, false, err
		}
		job, err = s.newJob(c, id.String(), owner, key, in)
		return job, false, err
	}
	if len(idemKey) > 255 {
		return nil, false, connector.Errorf(connector.EINVALID, "Idempotency-Key must be at most 255 characters")
	}
	fresh, err := uuid.NewV7() // time-ordered: the list index and cursors rely on it
	if err != nil {
		return nil, false, err
	}
	// A first request with the key still in flight is waited for: it
	// finishes (its job is the answer) or, if it died, its lease runs out
	// and this request takes the key over. 409 only if neither comes.
	var rec *connector.IdempotencyRecord
	var reserved bool
	for waitUntil := time.Now().Add(s.cfg.IdempotencyInFlightWait); ; {
		rec, reserved, err = s.cfg.Idempotency.ReserveIdempotencyKey(ctx, owner, idemKey, in.fingerprint(), fresh.String())
		if err != nil || reserved || rec.Fingerprint != in.fingerprint() || rec.JobID != "" {
			break
		}
		if time.Now().After(waitUntil) {
			return nil, false, &connector.Error{Code: connector.ECONFLICT, RetryAfter: time.Second,
				Message: "a request with this Idempotency-Key is still in flight; retry shortly"}
		}
		select {
		case <-ctx.Done():
			return nil, false, ctx.Err()
		case <-time.After(idempotencyInFlightPoll):
		}
	}
	if err != nil {
		return nil, false, err
	}
	if !reserved {
		if rec.Fingerprint != in.fingerprint() {
			return nil, false, connector.Errorf(connector.EMISMATCH, "Idempotency-Key %q was already used with a different request", idemKey)
		}
		job, err = s.cfg.Jobs.GetJob(ctx, rec.JobID)
		return job, true, err
	}
	release := s.holdIdempotencyKey(c, owner, idemKey, fresh.String())
	defer release()
	bg := context.WithoutCancel(ctx)
	if rec.PlannedJobID != fresh.String() {
		// The request that reserved the key died: its job may exist.
		if job, err = s.adoptJob(ctx, rec.PlannedJobID); job != nil || err != nil {
			if err == nil {
				s.completeIdempotencyKey(c, owner, idemKey, job.ID)
			}
			return job, job != nil, err
		}
	}
	if err = s.admit(c, key, in); err == nil {
		job, err = s.newJob(c, rec.PlannedJobID, owner, key, in)
	}
	if err != nil {
		// A refused or failed request must not hold the key.
		if rerr := s.cfg.Idempotency.ReleaseIdempotencyKey(bg, owner, idemKey); rerr != nil {
			s.logger(c).Warn("idempotency key not released", "err", rerr)
		}
		return nil, false, err
	}
	s.completeIdempotencyKey(c, owner, idemKey, job.ID)
	return job, false, nil
}

// defaultIdempotencyInFlightWait is Config.IdempotencyInFlightWait's
// default.
const defaultIdempotencyInFlightWait = 12 * time.Second

// idempotencyInFlightPoll is how often a waiting request looks again.
const idempotencyInFlightPoll = 100 * time.Millisecond

// idempotencyRenewEvery is how often a request renews its Idempotency-Key
// lease: well inside the store's lease (10 s by default), so that a
// request stalled by a slow Redis round trip keeps its key.
const idempotencyRenewEvery = 2 * time.Second

// holdIdempotencyKey renews the request's lease on its Idempotency-Key until
// the returned function is called.
func (s *Server) holdIdempotencyKey(c echo.Context, owner, idemKey, token string) (stop func()) {
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(idempotencyRenewEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				held, err := s.cfg.Idempotency.RenewIdempotencyKey(context.WithoutCancel(c.Request().Context()), owner, idemKey, token)
				if err == nil && !held {
					s.logger(c).Warn("idempotency key lease lost to a retry; both make the same job id, so it is still made once")
					return
				}
			}
		}
	}()
	return func() { close(done) }
}

// adoptJob returns the job a dead request made under an Idempotency-Key,
// queued again in case it died before queueing it (a no-op otherwise: the
// task id is the job id); nil when it never made it.
func (s *Server) adoptJob(ctx context.Context, id string) (*connector.Job, error) {
	job, err := s.cfg.Jobs.GetJob(ctx, id)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if l, ok := s.cfg.Jobs.(jobLister); ok {
		if err := l.EnsureListed(ctx, job.Owner, job.ID); err != nil {
			return nil, err
		}
	}
	if !job.Status.Finished() {
		if err := s.cfg.Queue.EnqueueCompress(ctx, job.ID); err != nil {
			return nil, err
		}
	}
	return job, nil
}

// jobLister is a job store that can put a job back in its owner's listing
// (redisstore.Store): the dead request may have written the record only.
type jobLister interface {
	EnsureListed(ctx context.Context, owner, id string) error
}

// completeIdempotencyKey records the job made under the key. The job is
// queued: without this record a retry would make it again (with the same
// id, so it would only be found again) or, until the key's lease runs out,
// hear 409. A Redis hiccup gets a few quick tries inline, then tries in the
// background for as long as the lease would have held the key.
func (s *Server) completeIdempotencyKey(c echo.Context, owner, idemKey, jobID string) {
	ctx := context.WithoutCancel(c.Request().Context())
	complete := func() error { return s.cfg.Idempotency.CompleteIdempotencyKey(ctx, owner, idemKey, jobID) }
	for attempt := range 3 {
		if complete() == nil {
			return
		}
		time.Sleep(time.Duration(100<<attempt) * time.Millisecond)
	}
	log := s.logger(c)
	go func() {
		deadline := time.Now().Add(completeIdempotencyFor)
		for wait := 250 * time.Millisecond; time.Now().Before(deadline); wait = min(2*wait, 2*time.Second) {
			time.Sleep(wait)
			if complete() == nil {
				return
			}
		}
		log.Error("idempotency key not completed: a retry takes it over after its lease and finds the job", "job_id", jobID)
	}()
}

// completeIdempotencyFor is how long serve keeps trying to record the job
// made under an Idempotency-Key.
const completeIdempotencyFor = 30 * time.Second

// newJob counts the job against its key's in-flight cap, stores the input,
// records the job and queues it. A job whose enqueue fails is deleted, so it
// never sits queued forever; one not made gives its place back.
func (s *Server) newJob(c echo.Context, id, owner, key string, in *jobRequest) (job *connector.Job, err error) {
	ctx := c.Request().Context()
	job = s.jobRecord(id, owner, key, in)
	if err := s.storeJob(ctx, job, in); err != nil {
		// Part of it may have been written (its pipeline met a Redis
		// restart: the record went in, a script met NOSCRIPT): the caller
		// hears 503 and retries, so nothing of this job may run.
		if connector.ErrorCodeOf(err) == connector.EUNAVAILABLE {
			s.deleteUnqueued(context.WithoutCancel(ctx), job.ID, in.image != nil)
		}
		return nil, err
	}
	s.watchBeforeQueueing(c, job.ID)
	if err := s.cfg.Queue.EnqueueCompress(ctx, job.ID); err != nil {
		// The caller hears 503 and will retry: this job must not linger,
		// in listings or polling triggers, as one that was made, nor run.
		// Deleting it gives its in-flight place back too.
		s.deleteUnqueued(context.WithoutCancel(ctx), job.ID, in.image != nil)
		return nil, err
	}
	return job, nil
}

// deleteUnqueuedFor is how long serve keeps trying to delete a job whose
// enqueue failed (Redis is often down for both): less than the worker's
// unqueuedAfter (15 s), after which the worker's sweeper would queue the
// job it still finds.
const deleteUnqueuedFor = 10 * time.Second

// deleteUnqueued deletes a job whose task could not be queued, and its
// input: at once when Redis answers, else retried in the background for
// deleteUnqueuedFor.
func (s *Server) deleteUnqueued(ctx context.Context, id string, hasInput bool) {
	del := func() error {
		if err := s.cfg.Jobs.DeleteJob(ctx, id); err != nil && connector.ErrorCodeOf(err) != connector.ENOTFOUND {
			return err
		}
		if hasInput {
			s.cfg.Blobs.DeleteBlob(ctx, connector.InputBlobKey(id))
		}
		return nil
	}
	// Tried in place for a moment first: the caller's Idempotency-Key is
	// released right after, and a retry that found the key still reserved
	// (its release failed too) would adopt this job.
	for wait := 100 * time.Millisecond; wait <= 800*time.Millisecond; wait *= 2 {
		if del() == nil {
			return
		}
		time.Sleep(wait)
	}
	go func() {
		deadline := time.Now().Add(deleteUnqueuedFor)
		for wait := 100 * time.Millisecond; time.Now().Before(deadline); wait = min(2*wait, 2*time.Second) {
			time.Sleep(wait)
			if del() == nil {
				return
			}
		}
		s.log.Warn("job not deleted after enqueue failure; the worker's sweeper will queue it", "job_id", id)
	}()
}

// jobRecord is the new job's record, queued.
func (s *Server) jobRecord(id, owner, key string, in *jobRequest) *connector.Job {
	now := s.cfg.Now().UTC()
	job := &connector.Job{
		ID:          id,
		Status:      connector.StatusQueued,
		CreatedAt:   now,
		UpdatedAt:   now,
		Input:       connector.JobInput{Kind: in.kind, URL: in.ImageURL, Filename: in.Filename},
		Metadata:    in.Metadata,
		Owner:       owner,
		SealedKey:   s.cfg.Keyring.Seal(key),
		CallbackURL: in.CallbackURL,
		Dedupe:      in.Dedupe,
		Transform:   in.transform,
	}
	if in.CallbackURL != "" {
		job.Callback = &connector.DeliveryState{Status: connector.DeliveryPending}
	}
	if in.image != nil {
		job.Input.Size = in.image.Size()
		job.Input.MIMEType = connector.SniffBytes(in.image)
		job.Input.SHA256 = in.imageSHA256()
	}
	return job
}

// parseWait reads ?wait=N: whole seconds in decimal digits, 0 to MaxWait.
// Fractions, signs, exponents, hex and NaN are refused, not rounded.
func (s *Server) parseWait(c echo.Context) (time.Duration, error) {
	raw, present := c.QueryParams()["wait"]
	if !present {
		return 0, nil
	}
	max := int(s.cfg.MaxWait / time.Second)
	bad := fieldError("wait", "must be a whole number of seconds from 0 to "+strconv.Itoa(max))
	if len(raw) != 1 || raw[0] == "" || len(raw[0]) > 3 || strings.Trim(raw[0], "0123456789") != "" {
		return 0, bad
	}
	n, err := strconv.Atoi(raw[0])
	if err != nil || n > max {
		return 0, bad
	}
	return time.Duration(n) * time.Second, nil
}

// respondJob answers 200 with a finished job, else waits up to wait for it
// to finish, else answers 202 with Location to poll.
func (s *Server) respondJob(c echo.Context, job *connector.Job, wait time.Duration) error {
	if !job.Status.Finished() && wait > 0 {
		ctx, cancel := context.WithTimeout(c.Request().Context(), wait)
		var waited *connector.Job
		var err error
		if w := watchOf(c, job.ID); w != nil {
			waited, err = w.Wait(ctx, job)
		} else {
			waited, err = s.cfg.Jobs.WaitJob(ctx, job.ID)
		}
		cancel()
		switch {
		case err == nil || errors.Is(err, context.DeadlineExceeded):
			if waited != nil {
				job = waited
			}
		case errors.Is(err, context.Canceled):
			return nil // the caller went away
		default:
			return err
		}
	}
	return s.answerJob(c, job)
}

// answerJob is 200 for a finished job; for an unfinished one it is 202 with
// Location and Retry-After, the asynchronous pattern Power Automate and
// other HTTP clients poll: the Location answers 202 until the job is done.
// With ?include=data a completed job carries its compressed bytes, and the
// Location asks for them too, so the poll's final 200 has the file.
func (s *Server) answerJob(c echo.Context, job *connector.Job) error {
	withData := c.QueryParam("include") == "data"
	if job.Status.Finished() {
		view := s.render(job)
		if withData && job.Status == connector.StatusCompleted && view.Result != nil {
			return s.answerWithData(c, view)
		}
		return c.JSON(http.StatusOK, view)
	}
	location := s.cfg.PublicURL + "/v1/jobs/" + job.ID + "?poll=1"
	if withData {
		location += "&include=data"
	}
	h := c.Response().Header()
	h.Set(echo.HeaderLocation, location)
	h.Set("Retry-After", "1")
	return c.JSON(http.StatusAccepted, s.render(job))
}

// ownedJob loads a job of the request's key; another key's job is not found.
func (s *Server) ownedJob(c echo.Context) (*connector.Job, error) {
	job, err := s.cfg.Jobs.GetJob(c.Request().Context(), c.Param("id"))
	if err != nil {
		return nil, err
	}
	if job.Owner != s.owner(apiKey(c)) {
		return nil, connector.Errorf(connector.ENOTFOUND, "job %s not found", c.Param("id"))
	}
	s.withJob(c, job.ID)
	return job, nil
}

// getJob is GET /v1/jobs/:id; ?include=data adds the compressed bytes, and
// ?poll=1 answers 202 while the job is unfinished (see answerJob).
func (s *Server) getJob(c echo.Context) error {
	job, err := s.ownedJob(c)
	if err != nil {
		return err
	}
	if err := checkInclude(c); err != nil {
		return err
	}
	if c.QueryParam("poll") != "" && !job.Status.Finished() {
		return s.answerJob(c, job)
	}
	view := s.render(job)
	if c.QueryParam("include") == "data" && job.Status == connector.StatusCompleted && view.Result != nil {
		return s.answerWithData(c, view)
	}
	return c.JSON(http.StatusOK, view)
}

// checkInclude refuses an include other than data: a typo would otherwise
// quietly answer without the file the flow expects.
func checkInclude(c echo.Context) error {
	if v, ok := c.QueryParams()["include"]; ok && (len(v) != 1 || v[0] != "data") {
		return fieldError("include", "must be data (or left out)")
	}
	return nil
}

func resultGone(err error, id string) error {
	if isCode(err, connector.ENOTFOUND) {
		return connector.Errorf(connector.ENOTFOUND, "the compressed file of job %s has expired", id)
	}
	return err
}

// listJobsPage is the body of GET /v1/jobs.
type listJobsPage struct {
	Jobs       []*connector.Job `json:"jobs"`
	NextCursor string           `json:"next_cursor,omitempty"` // absent on the last page, as documented
}

// listJobs is GET /v1/jobs: newest first, for polling triggers.
func (s *Server) listJobs(c echo.Context) error {
	filter := connector.JobFilter{Status: connector.JobStatus(c.QueryParam("status")), Limit: 20, Cursor: c.QueryParam("cursor")}
	if filter.Status != "" && !filter.Status.Valid() {
		return fieldError("status", "must be one of: queued, processing, completed, failed")
	}
	if raw := c.QueryParam("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > 100 {
			return fieldError("limit", "must be a whole number from 1 to 100")
		}
		filter.Limit = n
	}
	if filter.Cursor != "" {
		// Only the canonical form the API hands out: {…} or upper case
		// would sort elsewhere and page from the wrong place.
		if id, err := uuid.Parse(filter.Cursor); err != nil || id.String() != filter.Cursor {
			return fieldError("cursor", "is not a cursor this API returned")
		}
	}
	page, err := s.cfg.Jobs.ListJobs(c.Request().Context(), s.owner(apiKey(c)), filter)
	if err != nil {
		return err
	}
	out := listJobsPage{Jobs: make([]*connector.Job, 0, len(page.Jobs)), NextCursor: page.NextCursor}
	for _, j := range page.Jobs {
		out.Jobs = append(out.Jobs, s.render(j))
	}
	return c.JSON(http.StatusOK, out)
}

// getJobFile is GET /v1/jobs/:id/file, with the key or a signed token.
func (s *Server) getJobFile(c echo.Context) error {
	ctx := c.Request().Context()
	id := c.Param("id")
	notFound := connector.Errorf(connector.ENOTFOUND, "job %s not found", id)
	var job *connector.Job
	var err error
	if token := c.QueryParam("token"); token != "" {
		if !s.cfg.Keyring.VerifyFileToken(id, token, s.cfg.Now()) {
			return connector.Errorf(connector.ENOTFOUND, "this file link is invalid or has expired")
		}
		job, err = s.cfg.Jobs.GetJob(ctx, id)
	} else if key := headerKey(c); key == "" {
		return errNoKey
	} else if aerr := s.authenticate(c, key); aerr != nil {
		return aerr
	} else {
		c.Set(ctxAPIKey, key)
		job, err = s.ownedJob(c) // one read serves the owner check and the answer
	}
	if err != nil {
		return err
	}
	if job.Status != connector.StatusCompleted || job.Result == nil {
		return notFound
	}
	blob, err := s.cfg.Blobs.OpenBlob(ctx, connector.OutputBlobKey(id))
	if err != nil {
		return resultGone(err, id)
	}
	defer blob.Close()
	h := c.Response().Header()
	h.Set(echo.HeaderContentDisposition, mimeDisposition(job.Result.Filename))
	h.Set("Cache-Control", "private, max-age=3600")
	h.Set(echo.HeaderContentLength, strconv.FormatInt(blob.Size, 10))
	// Streamed from the blob store: a read error after the first bytes can
	// only cut the answer short (the length tells the client).
	return c.Stream(http.StatusOK, job.Result.MIMEType, blob)
}

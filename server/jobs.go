package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/app"
)

// createJob is POST /v1/jobs: a job, or a set when the request has
// variants.
func (s *Server) createJob(c echo.Context) error {
	return s.create(c, s.readJobRequest)
}

// create binds a create request with read and makes what it asks for.
func (s *Server) create(c echo.Context, read func(echo.Context) (*jobRequest, error)) error {
	if dry, err := wantsDryRun(c); dry || err != nil {
		if err != nil {
			return err
		}
		return s.dryRunOf(c, read) // dryrun.go
	}
	wait, err := s.parseWait(c)
	if err != nil {
		return err
	}
	include, err := createInclude(c)
	if err != nil {
		return err
	}
	key, in, release, err := bindRequest(s, c, read)
	if err != nil {
		return err
	}
	release()
	if in.Variants != nil {
		if include == "data" {
			return fieldError("include", "must be jobs (or left out) for a set: each variant's file is at its result.file_url")
		}
		return s.makeSet(c, key, in, wait, include == connector.IncludeJobs) // sets.go
	}
	if include == connector.IncludeJobs {
		return fieldError("include", "must be data (or left out) for a job: jobs is for a set (variants)")
	}
	watch := s.newJobWatch(c.Request().Context(), wait)
	defer watch.stop()
	job, replay, err := s.cfg.Maker.CreateJob(s.requestContext(c), s.jobRequestFor(key, c.Request().Header.Get("Idempotency-Key"), in, watch))
	if err != nil {
		return err
	}
	s.withJob(c, job.ID)
	if !replay {
		s.logger(c).Info("job created", "input", job.Input.Kind, "size", job.Input.Size)
		s.cfg.OnJobCreated(job.Input.Kind)
	}
	job, err = s.awaitJob(c.Request().Context(), job, watch, wait)
	if errors.Is(err, context.Canceled) {
		return nil // the caller went away
	}
	if err != nil {
		return err
	}
	return s.answerJob(c, job)
}

// jobRequestFor is the creation service's request for a bound job request
// of key, watched before it is queued when watch is set.
func (s *Server) jobRequestFor(key, idempotencyKey string, in *jobRequest, watch *jobWatch) *app.JobRequest {
	r := &app.JobRequest{Owner: s.owner(key), Key: key, IdempotencyKey: idempotencyKey,
		Input: in.appInput(), CallbackURL: in.CallbackURL}
	if r.IdempotencyKey != "" {
		r.Fingerprint = in.fingerprint()
	}
	if watch != nil {
		r.BeforeQueue = watch.beforeQueue
	}
	return r
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
	job, err := s.cfg.Jobs.Get(c.Request().Context(), c.Param("id"))
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

// createInclude reads a create request's ?include=: data (a job's file in
// its answer) or jobs (a set's jobs in its answer); which one the request
// may take is known once it is read.
func createInclude(c echo.Context) (string, error) {
	v, ok := c.QueryParams()["include"]
	if !ok {
		return "", nil
	}
	if len(v) != 1 || (v[0] != "data" && v[0] != connector.IncludeJobs) {
		return "", fieldError("include", "must be data for a job, jobs for a set (or left out)")
	}
	return v[0], nil
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
	filter := connector.JobFilter{Status: connector.JobStatus(c.QueryParam("status"))}
	if filter.Status != "" && !filter.Status.Valid() {
		return fieldError("status", "must be one of: queued, processing, completed, failed")
	}
	var err error
	if filter.Limit, filter.Cursor, err = idPage(c); err != nil {
		return err
	}
	page, err := s.cfg.Jobs.List(c.Request().Context(), s.owner(apiKey(c)), filter)
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
	// With the key, one read serves the owner check and the answer.
	job, err := byTokenOrKey(s, c, signedLink{"file", s.cfg.Keyring.VerifyFileToken}, s.cfg.Jobs.Get, s.ownedJob)
	if err != nil {
		return err
	}
	if job.Status != connector.StatusCompleted || job.Result == nil {
		return notFound
	}
	blob, err := s.cfg.Blobs.Open(ctx, connector.OutputBlobKey(id))
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

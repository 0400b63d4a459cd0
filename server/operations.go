package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/app"
	"github.com/imgflow/imgflow/internal/chunkbuf"
	"github.com/imgflow/imgflow/internal/keycheck"
	"github.com/imgflow/imgflow/mcp"
)

// Operations are the API's operations for an in-process caller (the MCP
// server's tools): a request bound and checked as the REST body is, the
// creation service, the store's wait and the API's rendering, with no HTTP
// between them. It implements mcp.Backend.
type Operations struct{ s *Server }

// Operations returns the API's operations.
func (s *Server) Operations() *Operations { return &Operations{s: s} }

var _ mcp.Backend = (*Operations)(nil)

// Compress makes a job and waits up to req.Wait for it.
func (o *Operations) Compress(ctx context.Context, key string, req mcp.ImageRequest) (*connector.Job, error) {
	s := o.s
	in, err := o.bindImage(ctx, key, req)
	if err != nil {
		return nil, err
	}
	if in.Variants != nil {
		return nil, fieldError("variants", "is compress_variants' argument: it makes a set of sizes")
	}
	watch := s.newJobWatch(ctx, req.Wait)
	defer watch.stop()
	job, replay, err := s.cfg.Maker.CreateJob(ctx, s.jobRequestFor(key, req.IdempotencyKey, in, watch))
	if err != nil {
		return nil, uploadNames(err, req.Upload != nil, "")
	}
	if !replay {
		keycheck.LoggerOf(ctx, s.log).Info("job created", "job_id", job.ID, "input", job.Input.Kind, "size", job.Input.Size)
		s.cfg.OnJobCreated(job.Input.Kind)
	}
	return o.wait(ctx, key, job, watch, req.Wait)
}

// wait waits up to wait for an unfinished job (awaitJob). A completed
// job's balance updates the key's cached account (check_account answers
// from it).
func (o *Operations) wait(ctx context.Context, key string, job *connector.Job, watch *jobWatch, wait time.Duration) (*connector.Job, error) {
	job, err := o.s.awaitJob(ctx, job, watch, wait)
	if err != nil {
		return nil, err
	}
	if job.Status == connector.StatusCompleted && job.DeduplicatedFrom == "" && job.Result != nil && job.Result.CreditsRemaining != nil {
		o.s.cfg.Keys.NoteBalance(ctx, key, *job.Result.CreditsRemaining)
	}
	return o.s.render(job), nil
}

// CompressMany makes a batch and waits up to req.Wait for it.
func (o *Operations) CompressMany(ctx context.Context, key string, req mcp.BatchRequest) (*connector.BatchAnswer, error) {
	s := o.s
	if s.cfg.Batches == nil {
		return nil, connector.Errorf(connector.ENOTFOUND, "batches are not served here")
	}
	if err := s.cfg.Keys.Known(ctx, key); err != nil {
		return nil, err
	}
	if len(req.Fields) > maxBatchJSONBody {
		return nil, batchTooLarge(errTooLarge)
	}
	in, err := decodeJSONBatch(bytes.NewReader(req.Fields))
	if err != nil {
		return nil, uploadNames(err, len(req.Uploads) > 0, "items")
	}
	if in.APIKey != "" {
		return nil, fieldError("api_key", "is not an argument: the key is the connection's")
	}
	for i, up := range req.Uploads {
		if i < 0 || i >= len(in.Items) {
			return nil, fieldError("items", "an upload names no item")
		}
		if err := readUpload(in.Items[i], up); err != nil {
			return nil, itemError(i, uploadNames(err, true, ""))
		}
	}
	if err := s.checkBatchRequest(in); err != nil {
		return nil, uploadNames(err, len(req.Uploads) > 0, "items")
	}
	r := &app.BatchRequest{Owner: s.owner(key), Key: key, IdempotencyKey: req.IdempotencyKey,
		Items: make([]app.Input, len(in.Items)), CallbackURL: in.CallbackURL, Metadata: in.Metadata, Dedupe: in.Dedupe}
	for i, item := range in.Items {
		r.Items[i] = item.appInput()
	}
	if r.IdempotencyKey != "" {
		r.Fingerprint = in.fingerprint()
	}
	b, replay, err := s.cfg.Maker.CreateBatch(ctx, r)
	if err != nil {
		return nil, uploadNames(serviceError(err), len(req.Uploads) > 0, "items")
	}
	in.Items = nil // the bytes are stored: let them go while the batch runs
	if !replay {
		keycheck.LoggerOf(ctx, s.log).Info("batch created", "batch_id", b.ID, "items", len(b.JobIDs))
		for _, in := range r.Items {
			s.cfg.OnJobCreated(in.Kind)
		}
	}
	if b, err = s.awaitBatch(ctx, b, req.Wait); err != nil {
		return nil, err
	}
	jobs, err := s.batchJobs(ctx, b)
	if err != nil {
		return nil, err
	}
	return &connector.BatchAnswer{Batch: s.renderBatch(b), Jobs: jobs}, nil
}

// GetJob is the key's job, waited for up to wait.
func (o *Operations) GetJob(ctx context.Context, key, id string, wait time.Duration) (*connector.Job, error) {
	s := o.s
	if err := s.cfg.Keys.Known(ctx, key); err != nil {
		return nil, err
	}
	job, err := o.ownedJob(ctx, key, id)
	if err != nil {
		return nil, err
	}
	return o.wait(ctx, key, job, nil, wait)
}

func (o *Operations) ownedJob(ctx context.Context, key, id string) (*connector.Job, error) {
	job, err := o.s.cfg.Jobs.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	if job.Owner != o.s.owner(key) {
		return nil, connector.Errorf(connector.ENOTFOUND, "job %s not found", id)
	}
	return job, nil
}

// ListJobs is the key's jobs, newest first.
func (o *Operations) ListJobs(ctx context.Context, key string, f connector.JobFilter) (*connector.JobList, error) {
	s := o.s
	if err := s.cfg.Keys.Known(ctx, key); err != nil {
		return nil, err
	}
	if f.Status != "" && !f.Status.Valid() {
		return nil, fieldError("status", "must be one of: queued, processing, completed, failed")
	}
	page, err := s.cfg.Jobs.List(ctx, s.owner(key), f)
	if err != nil {
		return nil, err
	}
	out := &connector.JobList{Jobs: make([]*connector.Job, 0, len(page.Jobs)), NextCursor: page.NextCursor}
	for _, j := range page.Jobs {
		out.Jobs = append(out.Jobs, s.render(j))
	}
	return out, nil
}

// DryRun checks an image as the job would, charging nothing.
func (o *Operations) DryRun(ctx context.Context, key string, req mcp.ImageRequest) (*connector.ImageCheck, error) {
	s := o.s
	in, err := o.bindImage(ctx, key, req)
	if err != nil {
		return nil, err
	}
	check, err := s.checkImage(ctx, key, in)
	return check, uploadNames(err, req.Upload != nil, "")
}

// Account is the key's account as last checked.
func (o *Operations) Account(ctx context.Context, key string) (*connector.Account, error) {
	return o.s.cfg.Keys.Account(ctx, key)
}

// OpenJobFile opens a completed job's compressed file.
func (o *Operations) OpenJobFile(ctx context.Context, key, id string) (*connector.Blob, error) {
	job, err := o.ownedJob(ctx, key, id)
	if err != nil {
		return nil, err
	}
	if job.Status != connector.StatusCompleted || job.Result == nil {
		return nil, connector.Errorf(connector.ENOTFOUND, "job %s has no compressed file", id)
	}
	blob, err := o.s.cfg.Blobs.Open(ctx, connector.OutputBlobKey(id))
	if err != nil {
		return nil, resultGone(err, id)
	}
	return blob, nil
}

// bindImage checks the key and binds its request as the REST body is
// bound.
func (o *Operations) bindImage(ctx context.Context, key string, req mcp.ImageRequest) (*jobRequest, error) {
	if err := o.s.cfg.Keys.Known(ctx, key); err != nil {
		return nil, err
	}
	return o.s.bindImage(req.Fields, req.Upload, "")
}

// bindImage binds a job request from its JSON fields and, when given, an
// uploaded image, and checks it as the REST request is checked.
func (s *Server) bindImage(fields []byte, up *mcp.Upload, prefix string) (*jobRequest, error) {
	if len(fields) == 0 {
		fields = []byte("{}")
	}
	in, err := decodeJSONJob(bytes.NewReader(fields), int64(len(fields)), nil)
	if err != nil {
		return nil, err
	}
	if in.APIKey != "" {
		return nil, fieldError("api_key", "is not an argument: the key is the connection's")
	}
	if up != nil {
		if err := readUpload(in, up); err != nil {
			return nil, err
		}
	}
	return in, uploadNames(s.checkJobRequest(in), up != nil, prefix)
}

// readUpload reads an uploaded image into the request, hashing it as it
// streams in: the one read of the upload.
func readUpload(in *jobRequest, up *mcp.Upload) error {
	if up.Size > connector.MaxImageSize {
		return errTooLarge
	}
	buf := chunkbuf.New(up.Size)
	in.digest = sha256.New()
	n, err := buf.ReadFrom(io.TeeReader(io.LimitReader(up, connector.MaxImageSize+1), in.digest))
	switch {
	case err != nil:
		return err
	case n > connector.MaxImageSize:
		return errTooLarge
	case n == 0:
		return fieldError("file", "the upload is empty: PUT the image's bytes first")
	}
	in.image, in.kind = buf, connector.InputUpload
	if in.Filename == "" {
		in.Filename = up.Name
	}
	return nil
}

// uploadNames names an uploaded image as the tool does ("upload"), where
// the REST API's binding names the file part ("file").
func uploadNames(err error, uploaded bool, _ string) error {
	var e *connector.Error
	if !uploaded || !errors.As(err, &e) {
		return err
	}
	out := *e
	out.Message = renameFile(e.Message)
	out.Details = make([]connector.FieldError, len(e.Details))
	for i, d := range e.Details {
		out.Details[i] = connector.FieldError{Field: renameFile(d.Field), Message: renameFile(d.Message)}
	}
	return &out
}

func renameFile(s string) string {
	if s == "file" {
		return "upload"
	}
	s = strings.ReplaceAll(s, ".file", ".upload")
	s = strings.ReplaceAll(s, "a file upload", "upload")
	return strings.ReplaceAll(s, "file:", "upload:")
}

// CompressVariants makes a responsive set and waits up to req.Wait for it.
func (o *Operations) CompressVariants(ctx context.Context, key string, req mcp.ImageRequest) (*connector.VariantSetAnswer, error) {
	s := o.s
	if s.cfg.Batches == nil {
		return nil, connector.Errorf(connector.ENOTFOUND, "sets are not served here")
	}
	if err := s.cfg.Keys.Known(ctx, key); err != nil {
		return nil, err
	}
	in, err := s.bindImage(req.Fields, req.Upload, "")
	if err != nil {
		return nil, err
	}
	if in.Variants == nil {
		return nil, fieldError("variants", "is required: the sizes to make, such as [{\"id\": \"sm\", \"resize\": \"320x\"}]")
	}
	r := &app.SetRequest{Owner: s.owner(key), Key: key, IdempotencyKey: req.IdempotencyKey, Input: in.appInput(),
		Variants: in.Variants, CallbackURL: in.CallbackURL}
	if r.IdempotencyKey != "" {
		r.Fingerprint = in.fingerprint()
	}
	b, replay, err := s.cfg.Maker.CreateSet(ctx, r)
	if err != nil {
		return nil, uploadNames(serviceError(err), req.Upload != nil, "")
	}
	if !replay {
		keycheck.LoggerOf(ctx, s.log).Info("variant set created", "batch_id", b.ID, "variants", len(b.JobIDs))
		s.cfg.OnJobCreated(in.kind)
	}
	if req.Wait > 0 && b.Status != connector.BatchFinished {
		if b, err = s.awaitBatch(ctx, b, req.Wait); err != nil {
			return nil, err
		}
	}
	view := s.renderBatch(b)
	jobs, err := s.batchJobs(ctx, view)
	if err != nil {
		return nil, err
	}
	return &connector.VariantSetAnswer{VariantSet: connector.NewVariantSet(view, jobs), Jobs: jobs}, nil
}

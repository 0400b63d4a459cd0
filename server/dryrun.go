package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/app"
)

// The dry run, POST /v1/jobs?dry_run=1 (or POST /v1/jobs/dry-run, the same
// for platforms whose files key operations by method and path, as Power
// Automate's swagger does): the same body as a job, checked as
// fully as the job would be (the key and its balance, the URL fetched
// through the guard, size, type, a whole file, dimensions), answered with
// what the job would cost. Nothing is created, queued or charged, and a
// request the job would refuse gets the job's error and status; an image
// the compression API would refuse gets the code the job would fail with.

// wantsDryRun reads ?dry_run: 1/true runs one, 0/false or absent does not.
func wantsDryRun(c echo.Context) (bool, error) {
	raw, present := c.QueryParams()["dry_run"]
	if !present {
		return false, nil
	}
	if len(raw) == 1 {
		switch strings.ToLower(raw[0]) {
		case "1", "true", "":
			return true, nil
		case "0", "false":
			return false, nil
		}
	}
	return false, fieldError("dry_run", "must be 1 (or true) to check the job without running it, or 0")
}

// dryRun is POST /v1/jobs?dry_run=1 and POST /v1/jobs/dry-run.
func (s *Server) dryRun(c echo.Context) error {
	return s.dryRunOf(c, s.readJobRequest)
}

// dryRunOf is the dry run of a create request bound with read.
func (s *Server) dryRunOf(c echo.Context, read func(echo.Context) (*jobRequest, error)) error {
	if _, err := s.parseWait(c); err != nil { // refused as the job would be
		return err
	}
	key, in, release, err := bindRequest(s, c, read)
	if err != nil {
		return err
	}
	release()
	answer, err := s.checkImage(s.requestContext(c), key, in)
	if err != nil {
		return err
	}
	s.logger(c).Info("dry run", "input", in.kind, "size", answer.Input.Size, "would_charge", answer.WouldCharge)
	return c.JSON(http.StatusOK, answer)
}

// checkImage is the dry run of a bound job request of key: admitted as the
// job would be, its image fetched or read, checked and priced.
func (s *Server) checkImage(ctx context.Context, key string, in *jobRequest) (*connector.ImageCheck, error) {
	if err := s.cfg.Maker.Admit(ctx, key,
		app.FieldURL{Field: "image_url", URL: in.ImageURL}, app.FieldURL{Field: "callback_url", URL: in.CallbackURL}); err != nil {
		return nil, err
	}
	var bytes connector.Bytes = in.image
	digest := in.imageSHA256()
	if in.kind == connector.InputURL {
		if s.cfg.Fetcher == nil {
			return nil, connector.Errorf(connector.EINTERNAL, "this server cannot fetch image URLs for a dry run")
		}
		img, err := s.cfg.Fetcher.FetchImage(ctx, in.ImageURL)
		if err != nil {
			return nil, err
		}
		bytes, digest = img.Data, img.SHA256
	}
	info, output, err := checkTransformed(bytes, in.transform) // transforminput.go
	if err != nil {
		return nil, err
	}
	// The balance now, not the preflight's cached one: a flow asks before
	// spending it.
	acct, err := s.cfg.Keys.Refresh(ctx, key)
	if err != nil {
		return nil, err
	}
	answer := connector.ImageCheck{CreditsRemaining: acct.CreditsRemaining,
		Input:  connector.ImageCheckInput{Type: info.Type, Size: info.Size, Width: info.Width, Height: info.Height, SHA256: digest},
		Output: output}
	if len(in.Variants) == 0 {
		one, err := s.checkMaking(ctx, key, bytes, digest, in.transform, in.Dedupe)
		if err != nil {
			return nil, err
		}
		answer.WouldCharge, answer.DeduplicatedFrom, answer.Target = one.WouldCharge, one.DeduplicatedFrom, one.Target
		return &answer, nil
	}
	// A set: each variant is a job of its own (checked, deduplicated and
	// priced alone), made from the one source.
	for _, v := range in.Variants {
		_, out, err := checkTransformed(bytes, v.Transform)
		if err != nil {
			return nil, err
		}
		one, err := s.checkMaking(ctx, key, bytes, digest, v.Transform, in.Dedupe)
		if err != nil {
			return nil, err
		}
		one.ID, one.Output = v.ID, out
		answer.Variants = append(answer.Variants, *one)
		answer.WouldCharge += one.WouldCharge
	}
	return &answer, nil
}

// checkMaking is what one job of key with this image and transform would
// cost: a credit, or none when it would complete from an identical job's
// result or fail target_unreachable.
func (s *Server) checkMaking(ctx context.Context, key string, bytes connector.Bytes, digest string, t connector.Transform, dedupe *bool) (*connector.VariantCheck, error) {
	check := &connector.VariantCheck{WouldCharge: 1}
	var err error
	if dedupe == nil || *dedupe {
		if check.DeduplicatedFrom, err = s.dedupeSource(ctx, s.owner(key), digest, t); err != nil {
			return nil, err
		}
	}
	if check.DeduplicatedFrom != "" {
		check.WouldCharge = 0
	}
	if check.Target, err = checkTarget(bytes, t); err != nil { // transforminput.go
		return nil, err
	}
	if check.Target != nil && !check.Target.Reachable {
		check.WouldCharge = 0 // the job would fail target_unreachable, uncharged
	}
	return check, nil
}

// dedupeSource is the completed job a job of owner with this image would
// complete from ("" when none, or dedupe is off): the index's entry, or
// the claimant's, if that job is still there and completed (the worker also
// checks its file). A claimant still compressing does not count: it may fail.
func (s *Server) dedupeSource(ctx context.Context, owner, digest string, t connector.Transform) (string, error) {
	if s.cfg.Dedupe == nil || digest == "" {
		return "", nil
	}
	k := connector.DedupeKey{Owner: owner, SHA256: digest, Options: connector.DedupeOptions(&connector.Job{Transform: t})}
	id, err := s.cfg.Dedupe.Source(ctx, k)
	if err != nil || id == "" {
		return "", err
	}
	src, err := s.cfg.Jobs.Get(ctx, id)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if src.Owner != owner || src.Status != connector.StatusCompleted || src.Result == nil {
		return "", nil
	}
	if src.DeduplicatedFrom != "" {
		return src.DeduplicatedFrom, nil // the job that was charged, as the job would name it
	}
	return src.ID, nil
}

// parseDedupe reads a multipart "dedupe" part (JSON sends a boolean).
func (in *jobRequest) parseDedupe() error {
	if in.dedupeText == "" {
		return nil
	}
	var v bool
	switch strings.ToLower(in.dedupeText) {
	case "true", "1":
		v = true
	case "false", "0":
	default:
		return fieldError("dedupe", "must be true or false")
	}
	in.Dedupe = &v
	return nil
}

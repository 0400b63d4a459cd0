package server

import (
	"context"
	"errors"
	"log/slog"

	"github.com/imgflow/imgflow/internal/app"
)

// The API makes jobs and batches through the creation service
// (internal/app): the handlers bind, call it and render. This file is the
// glue: the service built from the server's Config, and requests turned
// into its inputs.

// newJobService builds the creation service on the server's stores.
func newJobService(cfg *Config, s *Server) *app.JobService {
	return app.New(app.Config{
		Jobs:            cfg.Jobs,
		Batches:         cfg.Batches, // nil stays nil: no batch routes
		Idempotency:     cfg.Idempotency,
		Inputs:          cfg.InputBlobs,
		Queue:           cfg.Queue,
		Keyring:         cfg.Keyring,
		CheckURL:        cfg.CheckURL,
		Preflight:       func(ctx context.Context, key string) error { return s.checkKey(ctx, loggerOf(ctx, s.log), key) },
		MaxJobsPerKey:   cfg.MaxJobsPerKey,
		InputTTL:        cfg.ResultTTL,
		IdempotencyWait: cfg.IdempotencyInFlightWait,
		Now:             cfg.Now,
		Logger:          cfg.Logger,
	})
}

// Close ends the server's background work (the creation service's
// retries after a Redis hiccup); call it after the HTTP server stopped.
func (s *Server) Close() { s.jobs.Close() }

// ctxLogKey carries a request's logger into the service's calls back
// (the preflight's log lines keep the request id).
type ctxLogKey struct{}

func withLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, ctxLogKey{}, log)
}

func loggerOf(ctx context.Context, fallback *slog.Logger) *slog.Logger {
	if l, ok := ctx.Value(ctxLogKey{}).(*slog.Logger); ok {
		return l
	}
	return fallback
}

// appInput is a bound job request (or batch item) as the service takes it.
func (in *jobRequest) appInput() app.Input {
	out := app.Input{Kind: in.kind, URL: in.ImageURL, Filename: in.Filename, Metadata: in.Metadata, Dedupe: in.Dedupe,
		Transform: in.transform}
	if in.image != nil {
		out.Image = in.image
		out.SHA256 = in.imageSHA256()
	}
	return out
}

// serviceError names the item of a batch an error is about, as the
// request's own checks do.
func serviceError(err error) error {
	var ie *app.ItemError
	if errors.As(err, &ie) {
		return itemError(ie.Index, ie.Err)
	}
	return err
}

package server

import (
	"errors"

	"github.com/imgflow/imgflow/internal/app"
)

// The API makes jobs and batches through the creation service
// (internal/app, Config.Service): the handlers bind, call it and render.
// This file turns bound requests into its inputs.

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

package worker

import (
	"bytes"
	"context"
	"io"
	"math"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
)

// The transform step of the job's life (connector.Transform: resize,
// convert, preserve; HEIC input), after the dedupe look-up and before the
// one upstream call, so a transform costs no credit of its own:
//
//	get input → dedupe → transform → begin call → call → restore metadata → keep
//
// A job without options and with an image the compression API takes skips
// both steps untouched: it costs what it always cost. Anything that cannot
// apply (libvips absent, an unreadable image, a result over the size limit)
// fails the job here, before the call: nothing is charged.

// transform returns the image to send (the input itself when there is
// nothing to do) and the input record completed with what the image is.
func (w *Worker) transform(ctx context.Context, a *run, img *image, in connector.JobInput) (*image, connector.JobInput, error) {
	t := a.transformLeft()
	if t.IsZero() && !imaging.IsHEIF(img.mimeType) {
		return img, in, nil
	}
	out, in, err := w.transformed(ctx, a, img, in, t)
	if err != nil {
		w.callNotMade(ctx, a) // begun with the start, never made
	}
	return out, in, err
}

// transformCallTime is what a run keeps of its deadline for the call and
// its end after the transform: the transform is stopped before.
const transformCallTime = 45 * time.Second

func (w *Worker) transformed(ctx context.Context, a *run, img *image, in connector.JobInput, t connector.Transform) (*image, connector.JobInput, error) {
	if err := imaging.Available(); err != nil {
		return nil, in, imaging.Unavailable(err)
	}
	data, err := io.ReadAll(io.LimitReader(img, connector.MaxImageSize+1))
	if err != nil || img.readErr != nil {
		return nil, in, storedImageError(err)
	}
	var meta []byte // read before the pixel step: metadata over its bounds fails the job first
	if len(t.Preserve) > 0 {
		if meta, err = imaging.PreservedMetadata(data, imaging.OutputType(img.mimeType, t), t.Preserve); err != nil {
			return nil, in, err
		}
	}
	var res *imaging.Result
	var fitted *imaging.Fit
	needed := imaging.Needed(img.mimeType, t) ||
		(img.mimeType != "image/jpeg" && imaging.Orientation(data) != 1) // the API orients JPEG only
	if t.Target != nil {
		if deadline, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-transformCallTime))
			defer cancel()
		}
		res, fitted, err = w.fit(ctx, data, img.mimeType, t, int64(len(meta)))
	} else if needed {
		if deadline, ok := ctx.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, deadline.Add(-transformCallTime))
			defer cancel()
		}
		res, err = imaging.ApplyContext(ctx, data, t, connector.MaxImageSize)
	} else { // preserve alone: the bytes go as they are
		var info imaging.Info
		info, err = imaging.Probe(data)
		res = &imaging.Result{Data: data, Input: info, Output: info}
	}
	if err != nil {
		return nil, in, err
	}
	a.log.Debug("transformed", "input_type", res.Input.Type, "input_width", res.Input.Width, "input_height", res.Input.Height,
		"output_type", res.Output.Type, "output_width", res.Output.Width, "output_height", res.Output.Height, "size", len(res.Data))
	in.Type, in.Width, in.Height = res.Input.Type, res.Input.Width, res.Input.Height
	out := &image{mimeType: res.Output.Type, size: int64(len(res.Data)), sha256: img.sha256, body: bytes.NewReader(res.Data),
		shape: &res.Output, metadata: meta, fitted: fitted}
	if fitted != nil {
		out.source, out.candidate = data, res.Data
	}
	return out, in, nil
}

// restoreMetadata completes the compression API's answer for a transformed
// image: the metadata groups the job keeps, written into the compressed
// file (the API drops all metadata), its dimensions, and the sizes
// measured against the image the flow sent rather than the intermediate
// one.
//
// The answer is charged already: a file the metadata cannot be written
// into (the API answered another type) keeps the answer as it came, and
// says so in the log.
func restoreMetadata(a *run, img *image, in connector.JobInput, c *connector.Compressed) {
	if img.shape == nil {
		return
	}
	if len(img.metadata) > 0 {
		data, err := imaging.WithMetadata(readBytes(c.Data), img.shape.Type, img.metadata)
		if err != nil {
			a.log.Warn("the kept metadata could not be written into the compressed image; it goes without", "err", err)
		} else {
			c.Data = bytes.NewReader(data)
			c.CompressedSize = int64(len(data))
		}
	}
	c.Width, c.Height = img.shape.Width, img.shape.Height
	if in.Size > 0 {
		c.OriginalSize = in.Size
		c.CompressionRatio = math.Round((1-float64(c.CompressedSize)/float64(in.Size))*10000) / 100
	}
}

// readBytes copies b into one slice.
func readBytes(b connector.Bytes) []byte {
	out := make([]byte, b.Size())
	n, _ := b.ReadAt(out, 0)
	return out[:n]
}

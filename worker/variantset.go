package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
)

// The set step: the "get input" of a responsive set's variant
// (connector.VariantSet). The set's source is fetched (or read) once and
// decoded once for all its variants, by whichever variant's run comes
// first: it claims the set for a short, renewed lease, makes every
// variant's input (imaging.Variants: one decode with shrink-on-load to the
// largest, each variant resized from those pixels), stores them, and
// writes the set ready last. The other variants' runs wait for that
// (woken at once in the claimant's process, polling in another), then
// take their own input; a run whose claimant died takes the claim over
// when its lease lapses. A source that cannot be made (a broken image, a
// URL that serves none) is written ready with its error: every variant
// fails with it, uncharged, without fetching again.
//
//	claim → fetch or read the source → decode once → each variant's input → ready
//
// What follows is each variant's own life, as any job's: dedupe (on the
// source's digest and the variant's options), the transform step with
// what is left of its options (target; resize and convert are done), the
// one call, its credit.
//
// A variant that keeps metadata, or does not resize, is made from the
// source as it came (its transform step decodes it): the shared pixels
// carry no metadata, and a full-size variant has nothing to share.

// setClaimLease is how long a set's claim holds unrenewed: its holder
// renews it every third of it while it makes the set.
const setClaimLease = 15 * time.Second

// setInputTTL bounds the life of a set's made inputs: they are read by
// the set's runs, which start within it unless the queue is days behind.
const setInputTTL = 24 * time.Hour

// setReady is what the set step wrote once the set's inputs are made.
type setReady struct {
	// SHA256, Size and MIMEType are the source's.
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
	MIMEType string `json:"mime_type"`
	// Filename is the fetched source's name ("" for an upload: its own).
	Filename string `json:"filename,omitempty"`
	// Made are the variants made from the shared pixels, by job id: their
	// input is setInputKey(job id). A variant absent here is made from the
	// source (setSourceKey).
	Made map[string]imaging.Info `json:"made,omitempty"`
	// Error is why the source could not be made: every variant fails
	// with it.
	Error *connector.JobError `json:"error,omitempty"`
}

func setReadyKey(batchID string) string  { return "set:ready:" + batchID }
func setSourceKey(batchID string) string { return "set:src:" + batchID }
func setInputKey(jobID string) string    { return "set:in:" + jobID }

// setClaimKey is the Redis key of a set's claim.
func (w *Worker) setClaimKey(batchID string) string {
	return "imgflow:setclaim:{" + w.cfg.Queue + "}:" + batchID
}

// variantInput is getInput for a set's variant: its image (made from the
// shared pixels, or the source as it came) and its input record, telling
// the source. It waits for another run making the set, at most until ctx
// ends.
func (w *Worker) variantInput(ctx context.Context, r *run) (*image, connector.JobInput, error) {
	if r.opened != nil { // the first variant's input is the source: read by the set step
		r.opened.Close()
		r.opened = nil
	}
	setID := r.job.BatchID
	made, release := w.sets.watch(setID)
	defer release()
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		data, err := connector.ReadBlob(ctx, w.cfg.Blobs, setReadyKey(setID))
		if err == nil {
			var ready setReady
			if err := json.Unmarshal(data, &ready); err != nil {
				return nil, r.job.Input, &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
			}
			return w.madeVariant(ctx, r, &ready)
		}
		if connector.ErrorCodeOf(err) != connector.ENOTFOUND {
			return nil, r.job.Input, err
		}
		claimed, err := w.rdb.SetNX(ctx, w.setClaimKey(setID), r.jobID, setClaimLease).Result()
		if err != nil {
			return nil, r.job.Input, &connector.Error{Code: connector.EUNAVAILABLE, Message: "Redis is unavailable", Err: err, Retryable: true}
		}
		if claimed {
			// Made by the claimant before this one, between the read of
			// the set above and this claim: its first variant may have
			// ended since, its input (the source) gone with it, and a
			// second making would write over the set with "expired".
			if _, err := connector.ReadBlob(ctx, w.cfg.Blobs, setReadyKey(setID)); err == nil {
				w.rdb.Del(context.WithoutCancel(ctx), w.setClaimKey(setID))
				continue
			}
			err := w.makeSet(ctx, r)
			w.rdb.Del(context.WithoutCancel(ctx), w.setClaimKey(setID))
			if err != nil {
				return nil, r.job.Input, err
			}
			w.sets.ready(setID)
			continue
		}
		select {
		case <-ctx.Done():
			return nil, r.job.Input, ctx.Err()
		case <-made:
			made = nil // once: a nil channel never fires again
		case <-time.After(wait):
		}
	}
}

// makeSet is the claimant's work: the source once, every variant's input,
// then the set ready. A failure that another run may not meet (Redis, a
// fetch that may pass) returns for the run's retry; one that every run
// would meet is written ready, as the set's error.
func (w *Worker) makeSet(ctx context.Context, r *run) error {
	renewCtx, stopRenew := context.WithCancel(ctx)
	defer stopRenew()
	go func() {
		t := time.NewTicker(setClaimLease / 3)
		defer t.Stop()
		for {
			select {
			case <-renewCtx.Done():
				return
			case <-t.C:
				w.rdb.Expire(renewCtx, w.setClaimKey(r.job.BatchID), setClaimLease)
			}
		}
	}()
	b, err := w.cfg.Batches.Get(ctx, r.job.BatchID)
	if err != nil {
		return err
	}
	jobs, err := w.cfg.Batches.GetJobs(ctx, b.JobIDs)
	if err != nil {
		return err
	}
	ready, source, err := w.setSource(ctx, r, b, jobs)
	if err == nil {
		err = w.makeVariants(ctx, r, ready, source, jobs)
	}
	if err != nil {
		if retryable(err) {
			return err
		}
		r.log.Info("the set's source cannot be made: every variant fails with it", "batch_id", b.ID, "err", err)
		ready = &setReady{Error: connector.JobErrorFrom(err)}
	}
	data, err := json.Marshal(ready)
	if err != nil {
		return err
	}
	return w.cfg.Blobs.Put(ctx, setReadyKey(b.ID), bytes.NewReader(data), int64(len(data)), setInputTTL)
}

// setSource gets the set's source: fetched from its URL through the SSRF
// guard, or read from the first variant's input.
func (w *Worker) setSource(ctx context.Context, r *run, b *connector.Batch, jobs []*connector.Job) (*setReady, []byte, error) {
	in := r.job.Input
	ready := &setReady{}
	var data []byte
	if in.Kind == connector.InputURL {
		fetched, err := w.cfg.Fetcher.FetchImage(ctx, in.URL)
		if err != nil {
			return nil, nil, err
		}
		data = make([]byte, fetched.Data.Size())
		if _, err := fetched.Data.ReadAt(data, 0); err != nil && err != io.EOF {
			return nil, nil, err
		}
		ready.SHA256, ready.Filename = fetched.SHA256, fetched.Filename
	} else {
		var err error
		if data, err = connector.ReadBlob(ctx, w.cfg.Blobs, connector.InputBlobKey(b.JobIDs[0])); err != nil {
			return nil, nil, storedImageError(err)
		}
		if jobs[0] != nil {
			ready.SHA256 = jobs[0].Input.SHA256
		}
	}
	ready.Size, ready.MIMEType = int64(len(data)), connector.SniffInputType(data)
	if ready.MIMEType == "" {
		return nil, nil, connector.Errorf(connector.EFORMAT, "the image is not a PNG, JPEG, WebP, AVIF or HEIC file")
	}
	return ready, data, nil
}

// makeVariants makes and stores the inputs of the variants that share the
// decode, and stores the source for the others.
func (w *Worker) makeVariants(ctx context.Context, r *run, ready *setReady, source []byte, jobs []*connector.Job) error {
	var ids []string
	var ts []connector.Transform
	fromSource := false
	for _, j := range jobs {
		switch {
		case j == nil:
		case sharesDecode(j.Transform):
			ids, ts = append(ids, j.ID), append(ts, j.Transform)
		default:
			fromSource = true
		}
	}
	if len(ts) > 0 {
		if err := imaging.Available(); err != nil {
			return imaging.Unavailable(err)
		}
		start := time.Now()
		made, err := imaging.Variants(ctx, source, ts, connector.MaxImageSize)
		if err != nil {
			return err
		}
		r.log.Debug("set decoded once", "variants", len(made), "took", time.Since(start))
		ready.Made = make(map[string]imaging.Info, len(made))
		for i, res := range made {
			if err := w.cfg.Blobs.Put(ctx, setInputKey(ids[i]), bytes.NewReader(res.Data), int64(len(res.Data)), setInputTTL); err != nil {
				return err
			}
			ready.Made[ids[i]] = res.Output
		}
	}
	if fromSource {
		return w.cfg.Blobs.Put(ctx, setSourceKey(r.job.BatchID), bytes.NewReader(source), int64(len(source)), setInputTTL)
	}
	return nil
}

// sharesDecode reports whether a variant is made from the set's shared
// pixels: it resizes, and keeps no metadata.
func sharesDecode(t connector.Transform) bool { return t.Resize != nil && len(t.Preserve) == 0 }

// madeVariant opens the variant's input as the set step made it.
func (w *Worker) madeVariant(ctx context.Context, r *run, ready *setReady) (*image, connector.JobInput, error) {
	in := r.job.Input
	if ready.Error != nil {
		return nil, in, &connector.Error{Code: ready.Error.Code, Message: ready.Error.Message, UpstreamStatus: ready.Error.UpstreamStatus}
	}
	shape, made := ready.Made[r.jobID]
	key := setSourceKey(r.job.BatchID)
	if made {
		key = setInputKey(r.jobID)
	}
	img, err := openBlobImage(ctx, w.cfg.Blobs, key)
	if err != nil {
		return nil, in, err
	}
	img.sha256 = ready.SHA256
	if made {
		img.shape = &shape
		r.variantMade = true
	}
	if in.Filename == "" {
		in.Filename = ready.Filename
	}
	in.Size, in.MIMEType, in.SHA256 = ready.Size, ready.MIMEType, ready.SHA256
	in.Filename = variantFilename(filenameFor(in.Filename, ready.MIMEType), r.job.Variant)
	return img, in, nil
}

// variantFilename is name with the variant's id before its extension
// ("photo.jpg", "sm": "photo-sm.jpg").
func variantFilename(name, id string) string {
	ext := path.Ext(name)
	return strings.TrimSuffix(name, ext) + "-" + id + ext
}

// openBlobImage opens a stored image by its blob key.
func openBlobImage(ctx context.Context, blobs connector.BlobStore, key string) (*image, error) {
	blob, err := blobs.Open(ctx, key)
	if err != nil {
		return nil, storedImageError(err)
	}
	head := make([]byte, min(blob.Size, connector.SniffLen))
	if _, err := io.ReadFull(blob, head); err != nil {
		blob.Close()
		return nil, storedImageError(err)
	}
	return &image{mimeType: connector.SniffInputType(head), size: blob.Size,
		body: io.MultiReader(bytes.NewReader(head), blob), closer: blob}, nil
}

// transformLeft is what the transform step still does to the run's image:
// the job's options, less the resize and conversion the set step made.
func (r *run) transformLeft() connector.Transform {
	t := r.job.Transform
	if r.variantMade {
		t.Resize, t.Convert = nil, nil
	}
	return t
}

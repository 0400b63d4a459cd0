// Package compresscli is `imgflow compress`: it compresses files, folders
// and globs through an imgflow API, as batches, and writes the results
// under --out (keeping relative paths) or in place (only when smaller).
// It is a client of the public HTTP API only, never of Redis, so it works
// against any deployment.
//
// A run reads as: collect the files (files.go: supported types only, the
// output folder and symlinks leading out passed over, and named) → hash
// them (one unreadable fails alone) → skip those an earlier run did →
// follow those an earlier run sent → resend the batches an earlier run was
// sending when it stopped, under the same key → send the rest as batches
// (at most 100 files, 60 MB each, under an Idempotency-Key made from their
// content, names and order) → poll the batches and write each result as it
// comes, as the user's file (write.go: the original's mode, owner, and
// with --keep-mtime its time; an atomic rename) → summary. Its state
// (.imgflow-compress.json beside the results, or the user cache folder for
// --in-place) is saved as it goes, a batch before its request is sent, so
// Ctrl-C, then the same command again, charges nothing twice.
//
// Tests: go test ./internal/compresscli/ builds imgflow and runs the
// command against a real `imgflow dev` (dev_test.go). Figures: bench.sh,
// in BENCHMARK.md "CLI".
package compresscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
)

// Options configure a run; cmd_compress.go fills them from flags.
type Options struct {
	API     string // --api, base URL of the imgflow API
	Key     string // from IMGFLOW_API_KEY or the first line of stdin
	Out     string // --out DIR
	InPlace bool   // --in-place
	JSON    bool   // --json: JSON lines instead of text lines
	// KeepMtime (--keep-mtime) gives each result its original's
	// modification time, as jpegoptim --preserve does.
	KeepMtime bool
	// FollowSymlinks (--follow-symlinks) follows symlinks that lead out of
	// a folder argument; without it they are named and passed over.
	FollowSymlinks bool
	// Fields are text fields sent with every batch (what other flags of
	// the command ask of the API, e.g. transforms); they are part of each
	// batch's Idempotency-Key, so other options are other work.
	Fields url.Values
	Paths  []string
	// Terminal draws a progress bar on Stderr instead of a line per file.
	Terminal       bool
	Stdout, Stderr io.Writer
	// PollEvery is how often unfinished batches are read. Default 300ms.
	PollEvery time.Duration
	// Transform resizes, converts and keeps metadata (transform.go).
	Transform Transform
	// Variants (--variants) makes each file a responsive set
	// (variants.go): a result per variant.
	Variants []connector.Variant
}

// Batch limits: the API takes 100 files and 64 MiB per multipart batch.
const (
	batchFiles = 100
	batchBytes = 60 << 20
)

var (
	// ErrInterrupted is returned when ctx ended before every file was done.
	ErrInterrupted = errors.New("interrupted")
	// ErrNoImages is returned when the arguments name no file to compress.
	ErrNoImages = errors.New("nothing to compress")
)

// run is one run's working set.
type run struct {
	o       Options
	c       *client
	st      *state
	rep     reporter
	sum     Summary
	waiting map[string]*file // job id → its file
	batches map[string][]string
	dirty   bool
	names   *connector.Names // the results' paths given (names.go)
}

// Run compresses the files and reports them; the Summary counts what
// happened, also when the error is ErrInterrupted.
func Run(ctx context.Context, o Options) (Summary, error) {
	started := time.Now()
	if o.InPlace == (o.Out != "") {
		return Summary{}, &UsageError{"give exactly one of --out DIR and --in-place"}
	}
	if err := o.Transform.check(o.InPlace); err != nil {
		return Summary{}, err
	}
	if len(o.Variants) > 0 && (o.InPlace || !o.Transform.IsZero()) {
		return Summary{}, &UsageError{"--variants writes a file per variant, each with its own options: use --out DIR, without --resize, --convert or --preserve"}
	}
	o.Fields = o.Transform.addFields(o.Fields)
	if len(o.Paths) == 0 {
		return Summary{}, &UsageError{"name at least one file, folder or glob"}
	}
	if o.PollEvery <= 0 {
		o.PollEvery = 300 * time.Millisecond
	}
	found, err := collect(o.Paths, o.Out, o.FollowSymlinks)
	if err != nil {
		return Summary{}, err
	}
	if len(found.files) == 0 {
		passedOver(o, found)
		return Summary{Unsupported: len(found.unsupported)}, fmt.Errorf("%w: no %s file in %s", ErrNoImages, formatNames(), strings.Join(o.Paths, ", "))
	}
	c := &client{api: strings.TrimRight(o.API, "/"), key: o.Key, http: newHTTPClient()}
	if err := c.health(ctx); err != nil {
		if ctx.Err() != nil {
			return Summary{}, ErrInterrupted
		}
		return Summary{}, err // one line, before anything else is printed
	}
	passedOver(o, found)
	path, err := stateFile(o.Out, o.InPlace)
	if err != nil {
		return Summary{}, err
	}
	path = o.Transform.statePath(path) // other options: another run's record
	st, err := loadState(path)
	if err != nil {
		return Summary{}, err
	}
	r := &run{o: o, c: c, st: st,
		rep: newReporter(o, len(found.files)), waiting: map[string]*file{}, batches: map[string][]string{}}
	r.sum.Total, r.sum.Unsupported = len(found.files), len(found.unsupported)
	r.plan(found.files)
	if len(o.Variants) > 0 {
		err = r.runVariants(ctx, found.files)
	} else {
		err = r.all(ctx, found.files)
	}
	if serr := r.st.save(); serr != nil && err == nil {
		err = serr
	}
	interrupted := ctx.Err() != nil
	r.rep.finish(r.sum, time.Since(started), interrupted)
	if interrupted {
		return r.sum, ErrInterrupted
	}
	return r.sum, err
}

// passedOver names, before anything else, the files a folder held that
// are not sent: types the API does not compress, and symlinks leading out.
func passedOver(o Options, f *found) {
	if n := len(f.unsupported); n > 0 {
		fmt.Fprintf(o.Stderr, "skipped %d %s: %s — not %s\n", n, plural(n, "file"), names(f.unsupported), formatNames())
		if o.JSON {
			for _, p := range f.unsupported {
				data, _ := json.Marshal(result{File: p, Status: "unsupported", Error: "not " + formatNames()})
				fmt.Fprintf(o.Stdout, "%s\n", data)
			}
		}
	}
	if n := len(f.outside); n > 0 {
		fmt.Fprintf(o.Stderr, "not followed: %d %s leading out of the folder: %s (--follow-symlinks follows them)\n", n, plural(n, "symlink"), names(f.outside))
	}
}

// names lists paths by base name, the first ten.
func names(paths []string) string {
	var b []string
	for i, p := range paths {
		if i == 10 {
			b = append(b, fmt.Sprintf("and %d more", len(paths)-10))
			break
		}
		b = append(b, filepath.Base(p))
	}
	return strings.Join(b, ", ")
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// all sorts the files, sends the new ones and waits for every result.
func (r *run) all(ctx context.Context, files []*file) error {
	var send []*file
	for _, f := range files {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err := hashFile(f); err != nil {
			r.report(result{File: f.Path, Status: "failed", ErrorCode: "unreadable", Error: reason(err)})
			continue
		}
		fs := r.st.of(f)
		switch {
		case r.st.done(f) && (r.o.InPlace || exists(f.Dest)):
			r.report(result{File: f.Path, Status: "skipped"})
		case f.Size > maxImageSize:
			r.report(result{File: f.Path, Status: "failed", ErrorCode: "too_large", Error: "over the 10 MiB limit"})
		case f.Size == 0:
			r.report(result{File: f.Path, Status: "failed", ErrorCode: "invalid_input", Error: "the file is empty"})
		case fs.JobID != "" && fs.SentHash == f.Hash:
			r.waiting[fs.JobID] = f // sent by an earlier run: follow that job
			r.batches[""] = append(r.batches[""], fs.JobID)
		default:
			send = append(send, f)
		}
	}
	for _, chunk := range r.resend(send) {
		if err := r.send(ctx, chunk); err != nil {
			return err
		}
		send = without(send, chunk)
	}
	for _, chunk := range chunks(send) {
		if err := r.send(ctx, chunk); err != nil {
			return err
		}
	}
	return r.wait(ctx)
}

// wait polls the unfinished batches (and jobs followed from an earlier
// run) and takes each result as it comes.
func (r *run) wait(ctx context.Context) error {
	t := time.NewTicker(r.o.PollEvery)
	defer t.Stop()
	for len(r.waiting) > 0 {
		for id, jobIDs := range r.batches {
			var jobs []*job
			var err error
			if id == "" {
				jobs, err = r.followed(ctx, jobIDs)
			} else {
				jobs, err = r.c.batchJobs(ctx, id)
			}
			var ue *UnreachableError
			if errors.As(err, &ue) {
				return err // the files sent are followed by the next run
			}
			if err != nil && ctx.Err() == nil {
				fmt.Fprintf(r.o.Stderr, "reading results failed, retrying: %v\n", err)
			}
			left := jobIDs[:0]
			for _, j := range jobs {
				f := r.waiting[j.ID]
				if f == nil {
					continue
				}
				if !j.finished() {
					left = append(left, j.ID)
					continue
				}
				if err := r.take(ctx, f, j); err != nil {
					return err
				}
			}
			if err == nil {
				r.batches[id] = left
			}
		}
		if r.dirty {
			if err := r.st.save(); err != nil {
				return err
			}
			r.dirty = false
		}
		if len(r.waiting) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// followed reads the jobs an earlier run sent; one that expired is
// reported failed, to be sent again by the next run.
func (r *run) followed(ctx context.Context, ids []string) ([]*job, error) {
	var out []*job
	for _, id := range ids {
		j, err := r.c.getJob(ctx, id)
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			j = &job{ID: id, Status: "failed"}
			j.Error = &struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			}{"not_found", "the job an earlier run sent has expired; run again to send the file anew"}
		} else if err != nil {
			return out, err
		}
		out = append(out, j)
	}
	return out, nil
}

// take writes a finished job's result and records the file done. The
// result is written when it is smaller, when a transform was asked, or
// when its type is not the input's (a HEIC photo's JPEG): what was asked
// is always in the result. Otherwise the original is kept: in place it
// stays, under --out it is copied; either way stripped of its metadata,
// losslessly (imaging.Strip), as results carry none unless asked.
func (r *run) take(ctx context.Context, f *file, j *job) error {
	delete(r.waiting, j.ID)
	fs := r.st.of(f)
	fs.JobID, fs.SentHash = "", ""
	r.dirty = true
	if j.Status != "completed" || j.Result == nil {
		res := result{File: f.Path, Status: "failed", ErrorCode: "failed", Error: "the job failed"}
		if j.Error != nil {
			res.ErrorCode, res.Error = j.Error.Code, j.Error.Message
		}
		r.report(res)
		return nil
	}
	dest := r.destFor(f, j.Result.MIMEType)
	tmp, err := r.c.download(ctx, j, dest)
	if err != nil {
		var ue *UnreachableError
		if errors.As(err, &ue) || ctx.Err() != nil {
			fs.JobID, fs.SentHash = j.ID, f.Hash // followed again by the next run
			return err
		}
		r.report(result{File: f.Path, Status: "failed", ErrorCode: "download_failed", Error: err.Error()})
		return nil
	}
	res := result{File: f.Path, Status: "compressed", OriginalSize: f.Size, CompressedSize: j.Result.CompressedSize, Output: dest}
	info, err := os.Stat(tmp)
	if err == nil {
		res.CompressedSize = info.Size()
	}
	sameType := f.Type == "" || j.Result.MIMEType == "" || j.Result.MIMEType == f.Type
	written := res.CompressedSize // the size of what dest now holds
	switch {
	case err != nil:
		os.Remove(tmp)
	case res.CompressedSize < f.Size || !r.o.Transform.IsZero() || !sameType:
		err = install(tmp, dest, f.Info, r.o.KeepMtime)
	default: // not smaller: the original, stripped of its metadata
		res.Status = "kept"
		os.Remove(tmp)
		written, err = r.keepOriginal(f, dest)
	}
	if err != nil {
		r.report(result{File: f.Path, Status: "failed", ErrorCode: "write_failed", Error: err.Error()})
		return nil
	}
	fs.Done, fs.Output = []string{f.Hash}, dest
	if r.o.InPlace && written != f.Size {
		if h, err := hashOf(dest); err == nil {
			if dest == f.Real {
				fs.Done = append(fs.Done, h) // the replaced file is done too
			} else {
				// A result beside its input is no new input for the next run.
				r.st.Files[realPath(dest)] = &fileState{Done: []string{h}, Output: dest}
			}
		}
	}
	r.report(res)
	return nil
}

// keepOriginal writes f's original, stripped of its metadata, as its
// result: under --out always, in place only when stripping removed
// something. It returns the size written.
func (r *run) keepOriginal(f *file, dest string) (int64, error) {
	data, err := os.ReadFile(f.Real)
	if err != nil {
		return 0, err
	}
	stripped, removed := imaging.Strip(data)
	if r.o.InPlace && !removed {
		return f.Size, nil // the file stays as it is
	}
	return int64(len(stripped)), writeBytes(stripped, dest, f.Info, r.o.KeepMtime)
}

func (r *run) report(res result) {
	r.sum.add(res)
	r.rep.file(res, r.sum)
}

// outPath is where f's result goes.
func (r *run) outPath(f *file) string {
	if r.o.InPlace {
		return f.Real // through a symlink: the file it names
	}
	return filepath.Join(r.o.Out, f.Rel)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func hashOf(path string) (string, error) {
	f := &file{Path: path, Real: path}
	err := hashFile(f)
	return f.Hash, err
}

// busyWait is how long a batch refused for the key's unfinished jobs waits
// before it is sent again.
const busyWait = 2 * time.Second

// busyKey reports a refusal because the key has its limit of unfinished
// jobs (429 too_many_jobs): its earlier batches are still running.
func busyKey(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests && ae.Body.Code == connector.ETOOMANY
}

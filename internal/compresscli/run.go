// Package compresscli is `imgflow compress`: it compresses files, folders
// and globs through an imgflow API, as batches, and writes the results
// under --out (keeping relative paths) or in place (only when smaller).
// It is a client of the public HTTP API only, never of Redis, so it works
// against any deployment.
//
// A run reads as: collect the files → skip those an earlier run did →
// follow those an earlier run sent → send the rest as batches (at most 100
// files, 60 MB each, under an Idempotency-Key made from their content) →
// poll the batches and write each result as it comes → summary. Its state
// (.imgflow-compress.json beside the results, or the user cache folder for
// --in-place) is saved as it goes, so Ctrl-C, then the same command again,
// charges nothing twice.
//
// Tests: go test ./internal/compresscli/ (against a whole imgflow over
// real HTTP, in cmd_compress_test.go at the repository root).
package compresscli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Options configure a run; cmd_compress.go fills them from flags.
type Options struct {
	API     string // --api, base URL of the imgflow API
	Key     string // from IMGFLOW_API_KEY or the first line of stdin
	Out     string // --out DIR
	InPlace bool   // --in-place
	JSON    bool   // --json: JSON lines instead of text lines
	Paths   []string
	// Terminal draws a progress bar on Stderr instead of a line per file.
	Terminal       bool
	Stdout, Stderr io.Writer
	// PollEvery is how often unfinished batches are read. Default 300ms.
	PollEvery time.Duration
}

// Batch limits: the API takes 100 files and 64 MiB per multipart batch.
const (
	batchFiles = 100
	batchBytes = 60 << 20
)

// ErrInterrupted is returned when ctx ended before every file was done.
var ErrInterrupted = errors.New("interrupted")

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
}

// Run compresses the files and reports them; the Summary counts what
// happened, also when the error is ErrInterrupted.
func Run(ctx context.Context, o Options) (Summary, error) {
	started := time.Now()
	if o.InPlace == (o.Out != "") {
		return Summary{}, errors.New("give exactly one of --out DIR and --in-place")
	}
	if len(o.Paths) == 0 {
		return Summary{}, errors.New("name at least one file, folder or glob")
	}
	if o.PollEvery <= 0 {
		o.PollEvery = 300 * time.Millisecond
	}
	files, err := collect(o.Paths)
	if err != nil {
		return Summary{}, err
	}
	for _, f := range files {
		if err := hashFile(f); err != nil {
			return Summary{}, err
		}
	}
	path, err := stateFile(o.Out, o.InPlace)
	if err != nil {
		return Summary{}, err
	}
	st, err := loadState(path)
	if err != nil {
		return Summary{}, err
	}
	r := &run{o: o, c: &client{api: strings.TrimRight(o.API, "/"), key: o.Key, http: newHTTPClient()}, st: st,
		rep: newReporter(o, len(files)), waiting: map[string]*file{}, batches: map[string][]string{}}
	r.sum.Total = len(files)
	err = r.all(ctx, files)
	if serr := r.st.save(); serr != nil && err == nil {
		err = serr
	}
	r.rep.finish(r.sum, time.Since(started))
	if ctx.Err() != nil {
		return r.sum, ErrInterrupted
	}
	return r.sum, err
}

// all sorts the files, sends the new ones and waits for every result.
func (r *run) all(ctx context.Context, files []*file) error {
	var send []*file
	for _, f := range files {
		fs := r.st.of(f)
		switch {
		case r.st.done(f) && (r.o.InPlace || exists(r.outPath(f))):
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
	for _, chunk := range chunks(send) {
		if err := r.send(ctx, chunk); err != nil {
			return err
		}
	}
	return r.wait(ctx)
}

// chunks splits files into batches the API takes.
func chunks(files []*file) [][]*file {
	var out [][]*file
	var cur []*file
	var size int64
	for _, f := range files {
		if len(cur) == batchFiles || (len(cur) > 0 && size+f.Size > batchBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, f)
		size += f.Size
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// send makes one batch of files and records each file's job. A refused
// batch fails its files; a refused key stops the run.
func (r *run) send(ctx context.Context, files []*file) error {
	h := sha256.New()
	io.WriteString(h, "imgflow-compress/1\n")
	for _, f := range files {
		fmt.Fprintf(h, "%s %s\n", f.Hash, filepath.Base(f.Path))
	}
	key := "compress-" + hex.EncodeToString(h.Sum(nil))[:40]
	b, err := r.c.createBatch(ctx, files, key)
	for busyKey(err) && ctx.Err() == nil {
		// The key's earlier batches still hold its places under the
		// server's cap of unfinished jobs (IMGFLOW_MAX_JOBS_PER_KEY): this
		// batch waits for them to drain, then goes (same key: made once).
		select {
		case <-ctx.Done():
		case <-time.After(busyWait):
		}
		if ctx.Err() == nil {
			b, err = r.c.createBatch(ctx, files, key)
		}
	}
	var jobs []*job
	if err == nil {
		jobs, err = r.c.batchJobs(ctx, b.ID)
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var ae *apiError
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			return fmt.Errorf("the API refused the key: %w", err)
		}
		code := "request_failed"
		if errors.As(err, &ae) {
			code = ae.Code
		}
		for _, f := range files {
			r.report(result{File: f.Path, Status: "failed", ErrorCode: code, Error: err.Error()})
		}
		return nil
	}
	for _, j := range jobs {
		if j.Index == nil || *j.Index >= len(files) {
			continue
		}
		f := files[*j.Index]
		fs := r.st.of(f)
		fs.JobID, fs.SentHash = j.ID, f.Hash
		r.waiting[j.ID] = f
		r.batches[b.ID] = append(r.batches[b.ID], j.ID)
	}
	return r.st.save()
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

// take writes a finished job's result (only when smaller, in place; the
// original's copy under --out when the result is not smaller) and records
// the file done.
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
	dest := r.outPath(f)
	tmp, err := r.c.download(ctx, j, dest)
	if err != nil {
		r.report(result{File: f.Path, Status: "failed", ErrorCode: "download_failed", Error: err.Error()})
		return nil
	}
	res := result{File: f.Path, Status: "compressed", OriginalSize: f.Size, CompressedSize: j.Result.CompressedSize, Output: dest}
	info, err := os.Stat(tmp)
	if err == nil {
		res.CompressedSize = info.Size()
	}
	switch {
	case err != nil:
	case res.CompressedSize < f.Size:
		err = os.Rename(tmp, dest)
	case r.o.InPlace: // not smaller: the file stays as it is
		res.Status = "kept"
		os.Remove(tmp)
	default: // not smaller: --out gets the original
		res.Status = "kept"
		os.Remove(tmp)
		err = copyTo(f.Path, dest)
	}
	if err != nil {
		os.Remove(tmp)
		r.report(result{File: f.Path, Status: "failed", ErrorCode: "write_failed", Error: err.Error()})
		return nil
	}
	fs.Done = []string{f.Hash}
	if r.o.InPlace && res.Status == "compressed" {
		if h, err := hashOf(dest); err == nil {
			fs.Done = append(fs.Done, h) // the replaced file is done too
		}
	}
	r.report(res)
	return nil
}

func (r *run) report(res result) {
	r.sum.add(res)
	r.rep.file(res, r.sum)
}

// outPath is where f's result goes.
func (r *run) outPath(f *file) string {
	if r.o.InPlace {
		return f.Path
	}
	return filepath.Join(r.o.Out, f.Rel)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func copyTo(src, dest string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dest)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func hashOf(path string) (string, error) {
	f := &file{Path: path}
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
	return errors.As(err, &ae) && ae.Status == http.StatusTooManyRequests && ae.Code == "too_many_jobs"
}

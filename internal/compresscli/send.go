package compresscli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// Sending a batch so that it is paid once: its files, names, order and
// options make its Idempotency-Key; it is recorded as pending with that key
// before its request goes, so a run stopped before the answer (Ctrl-C,
// a crash) is resent by the next one under the same key, and the API
// answers with the batch it made, if it made one.

// busyTries is how many times a batch the API answers 409 (the same
// Idempotency-Key still in flight: the request a Ctrl-C cut short) or 503
// is sent again, after the answer's Retry-After.
const busyTries = 30

// sendGrace is how long a batch request under way when the run is
// interrupted may still take to be answered.
const sendGrace = 5 * time.Second

// resend is the batches an earlier run was sending when it stopped, each
// with the same files in the same order (so the same Idempotency-Key), as
// far as those files are still to send unchanged; the others are
// forgotten.
func (r *run) resend(send []*file) [][]*file {
	byReal := map[string]*file{}
	for _, f := range send {
		byReal[f.Real] = f
	}
	var out [][]*file
	keys := make([]string, 0, len(r.st.Pending))
	for k := range r.st.Pending {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var files []*file
		for _, p := range r.st.Pending[k] {
			if f := byReal[p]; f != nil {
				files = append(files, f)
			}
		}
		if len(files) == len(r.st.Pending[k]) && batchKey(files, r.o.Fields) == k {
			out = append(out, files)
			for _, f := range files {
				delete(byReal, f.Real)
			}
		} else {
			delete(r.st.Pending, k)
		}
	}
	return out
}

func without(files, drop []*file) []*file {
	gone := map[*file]bool{}
	for _, f := range drop {
		gone[f] = true
	}
	var out []*file
	for _, f := range files {
		if !gone[f] {
			out = append(out, f)
		}
	}
	return out
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

// batchKey is the Idempotency-Key of a batch of files: made from their
// content, names and order and the run's fields, so that the same work is
// the same key on every run, and the API answers a resent batch with the
// one it made.
func batchKey(files []*file, fields url.Values) string {
	h := sha256.New()
	io.WriteString(h, "imgflow-compress/1\n")
	for _, f := range files {
		fmt.Fprintf(h, "%s %s\n", f.Hash, filepath.Base(f.Path))
	}
	if len(fields) > 0 {
		fmt.Fprintf(h, "fields %s\n", fields.Encode())
	}
	return "compress-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// send makes one batch of files and records each file's job. A file that
// cannot be read fails alone, with its reason, and the batch goes without
// it; a refused batch fails its files with the API's reason; a refused key
// or an unreachable API stops the run.
func (r *run) send(ctx context.Context, files []*file) (err error) {
	// A batch being uploaded when Ctrl-C comes is given sendGrace to be
	// answered and recorded: the next run then follows its jobs instead of
	// relying on the API to have kept (and not charged) a batch whose
	// request was cut.
	interrupted := ctx
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stopGrace := context.AfterFunc(interrupted, func() { time.AfterFunc(sendGrace, cancel) })
	defer stopGrace()
	defer func() {
		if err == nil {
			err = interrupted.Err()
		}
	}()
	var b *batch
	var key string
	for try := 0; len(files) > 0; try++ {
		var readers []io.Reader
		var opened []*os.File
		var ok []*file
		for _, f := range files {
			fh, err := os.Open(f.Real)
			if err != nil {
				r.report(result{File: f.Path, Status: "failed", ErrorCode: "unreadable", Error: reason(err)})
				continue
			}
			opened, ok, readers = append(opened, fh), append(ok, f), append(readers, fh)
		}
		if len(ok) != len(files) && key != "" {
			delete(r.st.Pending, key)
		}
		files = ok
		if len(files) == 0 {
			break
		}
		if interrupted.Err() != nil {
			return interrupted.Err() // not started: nothing to finish
		}
		key = batchKey(files, r.o.Fields)
		r.st.pend(key, files)
		err = r.st.save()
		var bad *file
		if err == nil {
			b, bad, err = r.c.createBatch(ctx, files, readers, r.o.Fields, key)
		}
		for _, fh := range opened {
			fh.Close()
		}
		var ae *apiError
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return ctx.Err()
		case bad != nil:
			r.report(result{File: bad.Path, Status: "failed", ErrorCode: "unreadable", Error: reason(err)})
			delete(r.st.Pending, key)
			files = without(files, []*file{bad})
			continue
		case busyKey(err) && errors.As(err, &ae):
			// The key's earlier batches still hold its places under the
			// server's cap of unfinished jobs (IMGFLOW_MAX_JOBS_PER_KEY): this
			// batch waits for them to drain, then goes (same key: made once).
			if err := pause(interrupted, max(ae.RetryAfter, busyWait)); err != nil {
				return err
			}
			try--
			continue
		case errors.As(err, &ae) && (ae.Status == http.StatusConflict || ae.Status == http.StatusServiceUnavailable) && try < busyTries:
			if err := pause(interrupted, max(ae.RetryAfter, time.Second)); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return r.refused(files, key, err)
		}
		break
	}
	if b == nil {
		return r.st.save()
	}
	jobs, err := r.c.batchJobs(ctx, b.ID)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return r.refused(files, key, err)
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
	delete(r.st.Pending, key)
	return r.st.save()
}

// refused ends a batch the API did not take: an unreachable API or a
// refused key stops the run (the batch stays pending, to be resent with
// its key); any other answer fails its files with the API's reason.
func (r *run) refused(files []*file, key string, err error) error {
	var ue *UnreachableError
	if errors.As(err, &ue) {
		return err
	}
	var ae *apiError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		return fmt.Errorf("the API refused the key: %w", err)
	}
	delete(r.st.Pending, key)
	code := "request_failed"
	if errors.As(err, &ae) && ae.Body.Code != "" {
		code = string(ae.Body.Code)
	}
	for _, f := range files {
		r.report(result{File: f.Path, Status: "failed", ErrorCode: code, Error: err.Error()})
	}
	return r.st.save()
}

func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

package compresscli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// client speaks imgflow's public HTTP API, nothing else, so the command
// works against any deployment.
type client struct {
	api  string // base URL, without a trailing slash
	key  string
	http *http.Client
}

// batch and job are the parts of the API's answers the command reads.
type batch struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

type job struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Index  *int   `json:"index"`
	Result *struct {
		OriginalSize   int64  `json:"original_size"`
		CompressedSize int64  `json:"compressed_size"`
		FileURL        string `json:"file_url"`
		MIMEType       string `json:"mime_type"`
	} `json:"result"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (j *job) finished() bool { return j.Status == "completed" || j.Status == "failed" }

// apiError is an answer other than the one expected.
type apiError struct {
	Status int
	// Body is what the API said (zero when it said nothing readable).
	Body       connector.ErrorBody
	RetryAfter time.Duration
}

func (e *apiError) Error() string {
	if e.Body.Error == "" {
		return fmt.Sprintf("the API answered %d", e.Status)
	}
	return fmt.Sprintf("%s (%d %s)", e.Body.Error, e.Status, e.Body.Code)
}

func (c *client) do(req *http.Request, want int, into any) error {
	req.Header.Set("X-API-Key", c.key)
	res, err := c.http.Do(req)
	if err != nil {
		return c.transportError(req.Context(), err)
	}
	defer res.Body.Close()
	if res.StatusCode != want && !(want == http.StatusAccepted && res.StatusCode == http.StatusOK) {
		e := &apiError{Status: res.StatusCode}
		json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(&e.Body)
		if s, err := strconv.Atoi(res.Header.Get("Retry-After")); err == nil && s > 0 {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		return e
	}
	return json.NewDecoder(res.Body).Decode(into)
}

// createBatch uploads files as one multipart batch, streamed from files
// the caller opened (never all in memory), under an Idempotency-Key: a
// retry, or a run resumed after Ctrl-C, with the same files gets the same
// batch and pays nothing more. A file that cannot be read mid-upload is
// returned as bad, with its reason, so the caller can fail it alone.
func (c *client) createBatch(ctx context.Context, files []*file, readers []io.Reader, fields url.Values, idemKey string) (b *batch, bad *file, err error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	var readErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, k := range sortedKeys(fields) { // the batch's options, before its files
			for _, v := range fields[k] {
				if err := mw.WriteField(k, v); err != nil {
					pw.CloseWithError(err)
					return
				}
			}
		}
		for i, f := range files {
			part, err := mw.CreateFormFile("file", filepath.Base(f.Path))
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := io.Copy(part, readers[i]); err != nil {
				bad, readErr = f, err
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/v1/batches", pr)
	if err != nil {
		pr.CloseWithError(err)
		<-done
		return nil, nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Idempotency-Key", idemKey)
	b = &batch{}
	err = c.do(req, http.StatusAccepted, b)
	pr.CloseWithError(errors.New("request ended"))
	<-done
	if err != nil && readErr != nil && ctx.Err() == nil {
		return nil, bad, readErr
	}
	if err != nil {
		return nil, nil, err
	}
	return b, nil, nil
}

func sortedKeys(v url.Values) []string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// batchJobs reads every job of a batch, in item order.
func (c *client) batchJobs(ctx context.Context, id string) ([]*job, error) {
	var all []*job
	cursor := ""
	for {
		u := c.api + "/v1/batches/" + url.PathEscape(id) + "/jobs?limit=100"
		if cursor != "" {
			u += "&cursor=" + url.QueryEscape(cursor)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		var page struct {
			Jobs       []*job `json:"jobs"`
			NextCursor string `json:"next_cursor"`
		}
		if err := c.do(req, http.StatusOK, &page); err != nil {
			return nil, err
		}
		all = append(all, page.Jobs...)
		if cursor = page.NextCursor; cursor == "" {
			return all, nil
		}
	}
}

// health checks that the API answers at all (GET /health, no key).
func (c *client) health(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.api+"/health", nil)
	if err != nil {
		return fmt.Errorf("--api %q: %w", c.api, err)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return c.transportError(ctx, err)
	}
	res.Body.Close()
	return nil
}

// getJob reads one job.
func (c *client) getJob(ctx context.Context, id string) (*job, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.api+"/v1/jobs/"+url.PathEscape(id), nil)
	if err != nil {
		return nil, err
	}
	var j job
	return &j, c.do(req, http.StatusOK, &j)
}

// download writes a job's result to a temporary file beside dest and
// returns its name; the caller installs or removes it.
func (c *client) download(ctx context.Context, j *job, dest string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.api+"/v1/jobs/"+url.PathEscape(j.ID)+"/file", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-API-Key", c.key)
	res, err := c.http.Do(req)
	if err != nil {
		return "", c.transportError(ctx, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", &apiError{Status: res.StatusCode, Body: connector.ErrorBody{Error: "could not download the result"}}
	}
	tmp, err := tempBeside(dest)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(tmp, res.Body); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", err
	}
	return tmp.Name(), tmp.Close()
}

// UnreachableError is the API not answering at all: the run stops with
// one line naming the address, not a line per file.
type UnreachableError struct {
	API string
	Err error
}

func (e *UnreachableError) Error() string {
	msg := fmt.Sprintf("cannot reach the imgflow API at %s (%s)", e.API, reason(e.Err))
	var op *net.OpError
	if errors.As(e.Err, &op) && op.Op == "dial" {
		msg += "; start one with `go run . dev` in the imgflow repository (or `imgflow dev`), or name yours with --api or IMGFLOW_API"
	}
	return msg
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// transportError is err from a request that got no answer: ctx's end, or
// the API unreachable.
func (c *client) transportError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return &UnreachableError{API: c.api, Err: err}
}

// newHTTPClient has timeouts for a stuck server, not for a slow upload.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ResponseHeaderTimeout: 2 * time.Minute,
		IdleConnTimeout:       30 * time.Second,
		MaxIdleConnsPerHost:   4,
	}}
}

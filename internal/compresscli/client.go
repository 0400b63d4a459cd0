package compresscli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"
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
	Status  int
	Code    string `json:"code"`
	Message string `json:"error"`
}

func (e *apiError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("the API answered %d", e.Status)
	}
	return fmt.Sprintf("%s (%d %s)", e.Message, e.Status, e.Code)
}

func (c *client) do(req *http.Request, want int, into any) error {
	req.Header.Set("X-API-Key", c.key)
	res, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != want && !(want == http.StatusAccepted && res.StatusCode == http.StatusOK) {
		e := &apiError{Status: res.StatusCode}
		json.NewDecoder(io.LimitReader(res.Body, 64<<10)).Decode(e)
		return e
	}
	return json.NewDecoder(res.Body).Decode(into)
}

// createBatch uploads files as one multipart batch, streamed (never all
// in memory), under an Idempotency-Key: a retry, or a run resumed after
// Ctrl-C, with the same files gets the same batch and pays nothing more.
func (c *client) createBatch(ctx context.Context, files []*file, idemKey string, t Transform) (*batch, error) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		if err := t.writeFields(mw); err != nil { // transform.go
			pw.CloseWithError(err)
			return
		}
		for _, f := range files {
			part, err := mw.CreateFormFile("file", filepath.Base(f.Path))
			if err == nil {
				err = copyFile(part, f.Path)
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.api+"/v1/batches", pr)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.Header.Set("Idempotency-Key", idemKey)
	var b batch
	if err := c.do(req, http.StatusAccepted, &b); err != nil {
		pr.CloseWithError(err)
		return nil, err
	}
	return &b, nil
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
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
// returns its name; the caller renames or removes it.
func (c *client) download(ctx context.Context, j *job, dest string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.api+"/v1/jobs/"+url.PathEscape(j.ID)+"/file", nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-API-Key", c.key)
	res, err := c.http.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return "", &apiError{Status: res.StatusCode, Message: "could not download the result"}
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*.part")
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

// newHTTPClient has timeouts for a stuck server, not for a slow upload.
func newHTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		ResponseHeaderTimeout: 2 * time.Minute,
		IdleConnTimeout:       30 * time.Second,
		MaxIdleConnsPerHost:   4,
	}}
}

package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/catalog"
	"github.com/imgflow/imgflow/connector"
)

// HTTPBackend is the Backend over the REST API's own http.Handler, called
// in-process (no network, no listener): a tool call is the REST request a
// flow would send, through the same routes, middleware and creation path,
// and its answer is the REST answer.
type HTTPBackend struct {
	API http.Handler
}

// NewHTTPBackend returns the Backend that dispatches to api.
func NewHTTPBackend(api http.Handler) *HTTPBackend { return &HTTPBackend{API: api} }

func (b *HTTPBackend) Compress(ctx context.Context, key string, req Request) (*connector.Job, error) {
	var job connector.Job
	err := b.call(ctx, key, http.MethodPost, "/v1/jobs?wait="+seconds(req.Wait), req.IdempotencyKey, req.Body, &job)
	return &job, err
}

func (b *HTTPBackend) CompressMany(ctx context.Context, key string, req Request) (*connector.BatchAnswer, error) {
	var batch connector.BatchAnswer
	q := url.Values{"wait": {seconds(req.Wait)}, "include": {connector.IncludeJobs}}
	err := b.call(ctx, key, http.MethodPost, "/v1/batches?"+q.Encode(), req.IdempotencyKey, req.Body, &batch)
	return &batch, err
}

func (b *HTTPBackend) GetJob(ctx context.Context, key, id string) (*connector.Job, error) {
	var job connector.Job
	err := b.call(ctx, key, http.MethodGet, "/v1/jobs/"+url.PathEscape(id), "", nil, &job)
	return &job, err
}

func (b *HTTPBackend) ListJobs(ctx context.Context, key string, f connector.JobFilter) (*connector.JobList, error) {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.Limit > 0 {
		q.Set("limit", strconv.Itoa(f.Limit))
	}
	if f.Cursor != "" {
		q.Set("cursor", f.Cursor)
	}
	var list connector.JobList
	err := b.call(ctx, key, http.MethodGet, "/v1/jobs?"+q.Encode(), "", nil, &list)
	return &list, err
}

func (b *HTTPBackend) DryRun(ctx context.Context, key string, req Request) (*connector.ImageCheck, error) {
	var check connector.ImageCheck
	err := b.call(ctx, key, http.MethodPost, catalog.DryRunPath, "", req.Body, &check)
	return &check, err
}

func (b *HTTPBackend) Account(ctx context.Context, key string) (*connector.AccountAnswer, error) {
	var acct connector.AccountAnswer
	err := b.call(ctx, key, http.MethodGet, "/v1/account", "", nil, &acct)
	return &acct, err
}

func (b *HTTPBackend) JobFile(ctx context.Context, key, id string) ([]byte, error) {
	rec, err := b.do(ctx, key, http.MethodGet, "/v1/jobs/"+url.PathEscape(id)+"/file", "", nil)
	if err != nil {
		return nil, err
	}
	return rec.body.Bytes(), nil
}

// call sends one request and decodes a 2xx answer into out.
func (b *HTTPBackend) call(ctx context.Context, key, method, target, idemKey string, body map[string]any, out any) error {
	rec, err := b.do(ctx, key, method, target, idemKey, body)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(rec.body.Bytes(), out); err != nil {
		return &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: err}
	}
	return nil
}

// do serves the request with the API handler; a 4xx or 5xx answer becomes
// the *connector.Error it was rendered from.
func (b *HTTPBackend) do(ctx context.Context, key, method, target, idemKey string, body map[string]any) (*recorder, error) {
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return nil, connector.Errorf(connector.EINVALID, "arguments could not be encoded: %v", err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(payload))
	if err != nil {
		return nil, connector.Errorf(connector.EINVALID, "bad request: %v", err)
	}
	req.ContentLength = int64(len(payload))
	req.Header.Set("X-API-Key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if idemKey != "" {
		req.Header.Set("Idempotency-Key", idemKey)
	}
	if c, ok := ctx.Value(callerKey{}).(caller); ok {
		req.RemoteAddr = c.remoteAddr
		if c.requestID != "" {
			req.Header.Set("X-Request-Id", c.requestID)
		}
		for _, h := range forwardedHeaders {
			if v := c.header.Get(h); v != "" {
				req.Header.Set(h, v)
			}
		}
	}
	rec := newRecorder()
	b.API.ServeHTTP(rec, req)
	if rec.status >= 400 {
		return nil, restError(rec)
	}
	return rec, nil
}

// forwardedHeaders are the MCP request's headers the REST request keeps,
// so per-client limits and logs see the same caller.
var forwardedHeaders = []string{"X-Forwarded-For", "X-Real-Ip", "User-Agent"}

// restError turns an error answer back into the domain error it came from.
func restError(rec *recorder) error {
	var body struct {
		Error            string                 `json:"error"`
		Code             connector.ErrorCode    `json:"code"`
		Details          []connector.FieldError `json:"details"`
		CreditsRemaining *int64                 `json:"credits_remaining"`
		UpstreamStatus   int                    `json:"upstream_status"`
	}
	if err := json.Unmarshal(rec.body.Bytes(), &body); err != nil || body.Code == "" {
		return &connector.Error{Code: connector.EINTERNAL, Message: "Internal error (HTTP " + strconv.Itoa(rec.status) + ")"}
	}
	e := &connector.Error{Code: body.Code, Message: body.Error, Details: body.Details,
		CreditsRemaining: body.CreditsRemaining, UpstreamStatus: body.UpstreamStatus}
	if s, err := strconv.Atoi(rec.header.Get("Retry-After")); err == nil {
		e.RetryAfter = time.Duration(s) * time.Second
		e.Retryable = true
	}
	return e
}

func seconds(d time.Duration) string { return strconv.Itoa(int(d / time.Second)) }

// recorder is an in-memory http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func newRecorder() *recorder { return &recorder{header: http.Header{}} }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// Flush is a no-op: the answer is read when the handler returns.
func (r *recorder) Flush() {}

// caller is the MCP request's client, carried to the REST requests it makes.
type caller struct {
	remoteAddr string
	header     http.Header
	requestID  string
}

type callerKey struct{}

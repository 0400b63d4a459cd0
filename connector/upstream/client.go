package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Default timeouts; see WithTimeouts.
const (
	DefaultCompressTimeout = 60 * time.Second
	DefaultCheckTimeout    = 10 * time.Second
)

// Limits on how much of an answer is read: a 200 of /compress carries up to
// 10 MiB as base64; anything else is a small JSON document.
const (
	maxCompressAnswer = 20 << 20
	maxSmallAnswer    = 1 << 20
)

// Client talks to the compression API. It is safe for concurrent use.
type Client struct {
	baseURL         string
	http            *http.Client
	compressTimeout time.Duration
	checkTimeout    time.Duration
	userAgent       string
}

var _ connector.Compressor = (*Client)(nil)

// Option configures a Client.
type Option func(*Client)

// WithHTTPClient sends requests through hc (its transport, its own
// Timeout if any) instead of a private default client.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithTimeouts bounds each call: compress for /compress (default 60s: the
// upload and a real compression of up to 10 MiB), check for /validate and
// /health (default 10s). Too low turns slow compressions into retries that
// may each cost a credit; zero keeps the default.
func WithTimeouts(compress, check time.Duration) Option {
	return func(c *Client) {
		if compress > 0 {
			c.compressTimeout = compress
		}
		if check > 0 {
			c.checkTimeout = check
		}
	}
}

// WithUserAgent sets the User-Agent header (default "imgflow").
func WithUserAgent(ua string) Option { return func(c *Client) { c.userAgent = ua } }

// New returns a client of the compression API at baseURL, for example
// "https://compress.example.com/api" (a trailing slash is ignored).
func New(baseURL string, opts ...Option) *Client {
	c := &Client{
		baseURL:         strings.TrimRight(baseURL, "/"),
		compressTimeout: DefaultCompressTimeout,
		checkTimeout:    DefaultCheckTimeout,
		userAgent:       "imgflow",
	}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		// Every call goes to one host, from up to IMGFLOW_CONCURRENCY tasks
		// at once: with Go's default of 2 idle connections per host, most
		// calls would open (and leave in TIME_WAIT) a connection of their own.
		t.MaxIdleConnsPerHost = maxIdleConnsPerHost
		// The request (headers and multipart body) leaves in writes of this
		// size: Go's 4 KiB default makes a 30 KiB image nine syscalls, and
		// on loopback or a fast link each one costs more than the bytes.
		t.WriteBufferSize = writeBufferSize
		c.http = &http.Client{Transport: t}
	}
	return c
}

// maxIdleConnsPerHost keeps enough connections to the compression API open
// for a busy worker's parallel calls.
const maxIdleConnsPerHost = 128

// writeBufferSize is the transport's write buffer per connection.
const writeBufferSize = 32 << 10

// do sends req and returns the answer's status, headers and body (at most
// limit bytes). A failure to get an answer is EUPSTREAM, Retryable.
func (c *Client) do(req *http.Request, limit int64, timeout time.Duration) (*http.Response, []byte, error) {
	resp, err := c.send(req, timeout)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := readAll(resp, limit)
	if err != nil {
		// The answer's status came: keep it. A 200 cut off mid-body was
		// charged, and the worker must not compress (and charge) again.
		e := networkError(req.Context(), err, timeout)
		e.UpstreamStatus = resp.StatusCode
		return nil, nil, e
	}
	return resp, body, nil
}

// send sends req and returns the answer with its body unread.
func (c *Client) send(req *http.Request, timeout time.Duration) (*http.Response, error) {
	req.Header.Set("User-Agent", c.userAgent)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, networkError(req.Context(), err, timeout)
	}
	return resp, nil
}

// readAll reads at most limit bytes of the answer, in one allocation when
// Content-Length is known.
func readAll(resp *http.Response, limit int64) ([]byte, error) {
	size := int64(bytes.MinRead)
	if resp.ContentLength > 0 && resp.ContentLength <= limit {
		size = resp.ContentLength + 1 // +1: ReadFrom wants room to see EOF
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	_, err := buf.ReadFrom(io.LimitReader(resp.Body, limit))
	return buf.Bytes(), err
}

// networkError says what went wrong without the request's details (the key
// travels in the body, and stays out of messages and logs alike).
func networkError(ctx context.Context, err error, timeout time.Duration) *connector.Error {
	msg := "could not reach the compression API"
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		msg = fmt.Sprintf("the compression API did not answer within %s", timeout)
	case ctx.Err() != nil:
		msg = "the request to the compression API was cancelled"
	}
	return &connector.Error{Code: connector.EUPSTREAM, Message: msg, Retryable: true, Err: err}
}

// errorBody is the contract's error body; credits_remaining comes with 429.
type errorBody struct {
	Error            string `json:"error"`
	CreditsRemaining *int64 `json:"credits_remaining"`
}

// parseErrorBody returns the body's error text, ok false when the body is
// not the contract's JSON (an HTML page from a proxy, say).
func parseErrorBody(body []byte) (errorBody, bool) {
	var eb errorBody
	if err := json.Unmarshal(body, &eb); err != nil || eb.Error == "" {
		return errorBody{}, false
	}
	return eb, true
}

// statusText is "502 Bad Gateway".
func statusText(status int) string {
	if t := http.StatusText(status); t != "" {
		return fmt.Sprintf("%d %s", status, t)
	}
	return fmt.Sprint(status)
}

// unexpected is an answer the contract does not explain: retryable.
func unexpected(status int, format string, args ...any) *connector.Error {
	return &connector.Error{
		Code:           connector.EUPSTREAM,
		Message:        fmt.Sprintf(format, args...),
		UpstreamStatus: status,
		Retryable:      true,
	}
}

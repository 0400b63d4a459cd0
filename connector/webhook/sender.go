package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
)

// maxAnswer is how much of a receiver's answer is read so that the
// connection can be reused.
const maxAnswer = 64 << 10

// SenderOptions configures a Sender. The zero value is a safe production
// setup.
type SenderOptions struct {
	// Allow names the non-public destinations deliveries may reach:
	// guard.Loopback() in dev, plus IMGFLOW_ALLOW_HOSTS. The zero value
	// allows public addresses only.
	Allow guard.Policy
	// Timeout bounds one delivery attempt, answer included. Default 15s.
	// Too high lets a slow receiver hold a worker; too low fails receivers
	// that do work before answering.
	Timeout time.Duration
	// UserAgent is sent with every delivery. Default "imgflow-webhooks".
	UserAgent string
}

// Sender posts signed events. It is safe for concurrent use.
type Sender struct {
	opts   SenderOptions
	client *http.Client
	now    func() time.Time
}

// Result is what one delivery attempt came to.
type Result struct {
	// Status is the receiver's HTTP status; 0 when none came back.
	Status int
	// RetryAfter is the receiver's Retry-After (seconds or HTTP date) on a
	// 429 or 503; 0 otherwise.
	RetryAfter time.Duration
	// Err is nil only for a 2xx answer. A refused URL is an EURLREFUSED
	// *connector.Error: retrying it will not help.
	Err error
	// Gone is set on 410: the receiver asks for no more deliveries.
	Gone bool
	// Duration is how long the attempt took, from sending the request to
	// the end of the answer's read.
	Duration time.Duration
	// Response is the start of the receiver's answer, at most
	// connector.MaxResponseSnippet bytes of valid UTF-8, for the delivery
	// log.
	Response string
}

// NewSender returns a Sender with opts, defaults filled in.
func NewSender(opts SenderOptions) *Sender {
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	if opts.UserAgent == "" {
		opts.UserAgent = "imgflow-webhooks"
	}
	return &Sender{
		opts: opts,
		client: &http.Client{
			Transport: guard.NewTransport(opts.Allow),
			// A redirect is an answer, not an instruction: following it
			// would re-send a signed body to a place nobody registered.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		now: time.Now,
	}
}

// Send POSTs body (JSON) to targetURL, signed with each of secrets (the
// current one first; during a rotation the previous one too, as Standard
// Webhooks allows) under msgID, which must stay the same across retries of
// one event. The URL, query
// string included, is used exactly as given (resume URLs carry their own
// signature there). Only a 2xx answer is a success.
func (s *Sender) Send(ctx context.Context, targetURL string, secrets []string, msgID string, body []byte) Result {
	if err := guard.CheckURL(ctx, targetURL, s.opts.Allow, nil); err != nil {
		return Result{Err: guard.ForField(err, "webhook URL")}
	}
	ts := s.now()
	sig, err := SignAll(secrets, msgID, ts, body)
	if err != nil {
		return Result{Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, targetURL, bytes.NewReader(body))
	if err != nil {
		return Result{Err: fmt.Errorf("webhook URL is not valid: %w", err)}
	}
	req.Header.Set(HeaderID, msgID)
	req.Header.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(HeaderSignature, sig)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", s.opts.UserAgent)

	start := s.now()
	resp, err := s.client.Do(req)
	if err != nil {
		return Result{Err: s.requestError(ctx, req.URL.Hostname(), err), Duration: s.now().Sub(start)}
	}
	defer resp.Body.Close()
	// The answer is read (up to maxAnswer) so the connection can be reused;
	// its start is kept for the delivery log.
	answer := io.LimitReader(resp.Body, maxAnswer)
	head, _ := io.ReadAll(io.LimitReader(answer, connector.MaxResponseSnippet))
	io.Copy(io.Discard, answer)

	res := Result{Status: resp.StatusCode, Duration: s.now().Sub(start), Response: snippet(head)}
	status := fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode <= 299:
		return res
	case resp.StatusCode >= 300 && resp.StatusCode <= 399:
		res.Err = fmt.Errorf("webhook URL answered %s; redirects are not followed", status)
	case resp.StatusCode == http.StatusGone:
		res.Gone = true
		res.Err = fmt.Errorf("webhook URL answered %s; no more deliveries", status)
	default:
		res.Err = fmt.Errorf("webhook URL answered %s", status)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		res.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), s.now())
	}
	return res
}

// requestError names the host and why no answer came (failureCause), not
// the internals.
func (s *Sender) requestError(ctx context.Context, host string, err error) error {
	var e *connector.Error
	if errors.As(err, &e) && e.Code == connector.EURLREFUSED {
		return guard.ForField(err, "webhook URL")
	}
	var netErr net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return fmt.Errorf("webhook URL host %s did not answer within %s", host, s.opts.Timeout)
	case ctx.Err() != nil:
		return fmt.Errorf("delivery to %s was cancelled", host)
	}
	return fmt.Errorf("could not deliver to %s: %s", host, failureCause(err))
}

package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/guard"
)

// requestError turns a failed request or body read into a *connector.Error
// whose message names the host, never the transport's internals (those go
// in Err, for logs).
func (f *Fetcher) requestError(ctx context.Context, host string, err error) error {
	var e *connector.Error
	if errors.As(err, &e) {
		// The guard's dial refusal, or checkRedirect's own error (which
		// already names its field).
		if e.Code == connector.EURLREFUSED && len(e.Details) == 0 {
			return guard.ForField(err, "image_url")
		}
		return e
	}
	fail := func(msg string, retryable bool) error {
		return &connector.Error{Code: connector.EFETCH, Message: msg, Retryable: retryable, Err: withoutURL(err)}
	}
	var dnsErr *net.DNSError
	var netErr net.Error
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errNoFirstByte):
		return fail(fmt.Sprintf("image_url host %s did not start answering within %s", host, f.opts.FirstByte), true)
	case errors.Is(cause, errTooSlow):
		// Final: another attempt would hold a worker as long again.
		return fail(fmt.Sprintf("image_url host %s sent the image slower than %d KiB/s", host, f.opts.MinRate>>10), false)
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return fail(fmt.Sprintf("image_url host %s did not answer within %s", host, f.opts.Timeout), true)
	case ctx.Err() != nil:
		return fail(fmt.Sprintf("fetching image_url from %s was cancelled", host), true)
	case errors.As(err, &dnsErr):
		return fail(fmt.Sprintf("image_url host %s could not be resolved", host), dnsErr.IsTemporary || dnsErr.IsTimeout)
	}
	return fail(fmt.Sprintf("could not fetch image_url from %s", host), true)
}

// withoutURL drops the URL that net/http's *url.Error carries and keeps
// its cause: the cause goes to logs and to asynq's record of the attempt in
// Redis, and an image URL's query may hold a presigned signature
// (X-Amz-Signature=...) that belongs to the flow, not to our logs.
func withoutURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Errorf("%s: %w", ue.Op, ue.Err)
	}
	return err
}

// statusError is a non-2xx answer. Server errors, 408 and 429 may pass;
// other client errors will not.
func statusError(status int) error {
	retryable := status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
	return &connector.Error{
		Code:      connector.EFETCH,
		Message:   fmt.Sprintf("image_url answered %d %s", status, http.StatusText(status)),
		Retryable: retryable,
	}
}

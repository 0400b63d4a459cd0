package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

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
		return &connector.Error{Code: connector.EFETCH, Message: msg, Retryable: retryable, Err: err}
	}
	var dnsErr *net.DNSError
	var netErr net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout()):
		return fail(fmt.Sprintf("image_url host %s did not answer within %s", host, f.opts.Timeout), true)
	case ctx.Err() != nil:
		return fail(fmt.Sprintf("fetching image_url from %s was cancelled", host), true)
	case errors.As(err, &dnsErr):
		return fail(fmt.Sprintf("image_url host %s could not be resolved", host), dnsErr.IsTemporary || dnsErr.IsTimeout)
	}
	return fail(fmt.Sprintf("could not fetch image_url from %s", host), true)
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

package upstream

import (
	"net/http"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// The upstream's text for a 400 about the image's format.
const invalidFormatText = "Invalid file format"

// compressError maps a non-200 answer of /compress to a *connector.Error
// keeping the status and the upstream's own text. 400, 401, 413 and 429
// are final; anything else (5xx, an unknown status, a body that is not the
// contract's JSON) is EUPSTREAM and Retryable.
func compressError(resp *http.Response, body []byte) *connector.Error {
	status := resp.StatusCode
	eb, ok := parseErrorBody(body)
	if !ok {
		if status == http.StatusRequestEntityTooLarge {
			// A proxy in front of the API refusing the body size: the
			// image is too large whoever says it.
			return &connector.Error{Code: connector.ETOOLARGE, Message: "compression API answered " + statusText(status), UpstreamStatus: status}
		}
		return unexpected(status, "compression API answered %s", statusText(status))
	}
	e := &connector.Error{Message: eb.Error, UpstreamStatus: status}
	switch status {
	case http.StatusBadRequest:
		e.Code = connector.EINVALID
		if eb.Error == invalidFormatText {
			e.Code = connector.EFORMAT
		}
	case http.StatusUnauthorized:
		e.Code = connector.EUNAUTHORIZED
	case http.StatusRequestEntityTooLarge:
		e.Code = connector.ETOOLARGE
	case http.StatusUnprocessableEntity:
		// The Idempotency-Key extension: the job's key was used with other
		// bytes (an image URL that changed between attempts). Calling again
		// would be refused the same way.
		e.Code = connector.EUPSTREAM
	case http.StatusTooManyRequests:
		e.Code = connector.ENOCREDITS
		credits := int64(0)
		if eb.CreditsRemaining != nil {
			credits = *eb.CreditsRemaining
		}
		e.CreditsRemaining = &credits
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	default:
		e.Code = connector.EUPSTREAM
		e.Retryable = true
		e.RetryAfter = retryAfter(resp.Header.Get("Retry-After"))
	}
	return e
}

// retryAfter reads a Retry-After header given in seconds; 0 otherwise.
func retryAfter(v string) time.Duration {
	if n, err := strconv.Atoi(v); err == nil && n > 0 {
		return time.Duration(n) * time.Second
	}
	return 0
}

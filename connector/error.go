package connector

import (
	"errors"
	"fmt"
	"time"
)

// ErrorCode is a machine-readable error class. The HTTP layer maps each code
// to a status in one table (server/errors.go); everything else only picks a code.
type ErrorCode string

const (
	EINVALID      ErrorCode = "invalid_input"          // 400: the caller sent something malformed
	EURLREFUSED   ErrorCode = "url_not_allowed"        // 400: image_url or target points into a private network
	EFORMAT       ErrorCode = "unsupported_format"     // 400: the bytes are not PNG, JPEG, WebP or AVIF
	EFETCH        ErrorCode = "fetch_failed"           // 400 on a job: the image URL could not be fetched
	EUNAUTHORIZED ErrorCode = "invalid_key"            // 401: missing or wrong compression API key
	ENOTFOUND     ErrorCode = "not_found"              // 404: unknown, expired or another key's
	ECONFLICT     ErrorCode = "idempotency_in_flight"  // 409: same Idempotency-Key still being processed
	ETOOLARGE     ErrorCode = "too_large"              // 413: image over the limit
	EMEDIATYPE    ErrorCode = "unsupported_media_type" // 415: request content type not accepted
	EMISMATCH     ErrorCode = "idempotency_mismatch"   // 422: Idempotency-Key reused with another body
	EDISABLED     ErrorCode = "hook_disabled"          // 409: the hook is disabled (410 Gone, or failing too long); nothing more is sent to it
	ETOOMANYHOOKS ErrorCode = "too_many_hooks"         // 409: the key has IMGFLOW_MAX_HOOKS_PER_KEY hooks already
	ENOCREDITS    ErrorCode = "insufficient_credits"   // 429: balance at zero
	ETOOMANY      ErrorCode = "too_many_jobs"          // 429: the key has its limit of unfinished jobs; retry later
	ERATELIMITED  ErrorCode = "rate_limited"           // 429: the key made this operation too often lately (hook tests, recoveries); retry after Retry-After
	EUPSTREAM     ErrorCode = "upstream_error"         // 502: the compression API failed (5xx, timeout, network)
	EUNAVAILABLE  ErrorCode = "unavailable"            // 503: Redis or the queue is down
	EBUSY         ErrorCode = "server_busy"            // 503: too many large bodies being read at once; retry
	EUPSTREAMDOWN ErrorCode = "upstream_unavailable"   // 503: the compression API cannot check the key, and did not confirm it lately
	EINTERNAL     ErrorCode = "internal"               // 500: a bug; the caller sees "Internal error"
)

// MaxImageSize is the largest image imgflow accepts and the compression API
// compresses: 10 MiB.
const MaxImageSize = 10 << 20

// Error is a domain error: a code, a message fit for the caller, and the
// facts some codes carry (field details, the upstream's status and balance).
type Error struct {
	Code             ErrorCode
	Message          string
	Details          []FieldError
	UpstreamStatus   int           // the compression API's status, when it answered
	CreditsRemaining *int64        // set with ENOCREDITS when known
	RetryAfter       time.Duration // a hint for 503 and 429 answers
	Retryable        bool          // a later attempt may succeed (5xx, timeouts, network)
	Err              error         // the underlying cause, for logs only
}

// ErrorBody is the REST API's answer to an error: the upstream's shape
// ({"error": text}) with the code and what else the error says. The server
// writes it (server/errors.go) and the CLI reads it.
type ErrorBody struct {
	Error            string       `json:"error"`
	Code             ErrorCode    `json:"code"`
	Details          []FieldError `json:"details,omitempty"`
	CreditsRemaining *int64       `json:"credits_remaining,omitempty"`
	UpstreamStatus   int          `json:"upstream_status,omitempty"`
}

// FieldError names one input field and what is wrong with it.
type FieldError struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code ErrorCode, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCodeOf returns the code of the first *Error in err's chain, EINTERNAL
// for any other non-nil error, and "" for nil.
func ErrorCodeOf(err error) ErrorCode {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the caller-facing message of err: the *Error's message,
// or "Internal error" so that internals never leak.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error"
}

// AsError returns the *Error in err's chain, or wraps err as EINTERNAL.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: EINTERNAL, Message: "Internal error", Err: err}
}

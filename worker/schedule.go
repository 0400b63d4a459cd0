package worker

import (
	"errors"
	"math/rand/v2"
	"time"
)

// Compress retries back off exponentially: 1s, 2s, 4s ... capped at
// maxBackoff, each with up to +25% jitter so that a burst of failures does
// not come back as a burst.
const (
	baseBackoff = time.Second
	maxBackoff  = time.Minute
)

// backoff is the delay before retry n+1 of a compress task (n retries done).
func backoff(n int) time.Duration {
	d := maxBackoff
	if n < 6 { // 1s<<6 already passes the cap
		d = min(baseBackoff<<n, maxBackoff)
	}
	return d + rand.N(d/4+1)
}

// retryAfterError is a failed delivery attempt whose receiver asked, with
// Retry-After, to wait at least after before the next one.
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// maxRetryAfter bounds what a receiver's Retry-After can ask for.
const maxRetryAfter = 24 * time.Hour

// deliveryDelay is the delay before the next delivery attempt after n
// retries (so n+1 failed attempts): schedule[n+1], or the receiver's
// Retry-After when that is longer.
func deliveryDelay(schedule []time.Duration, n int, err error) time.Duration {
	d := schedule[min(n+1, len(schedule)-1)]
	var ra *retryAfterError
	if errors.As(err, &ra) && ra.after > d {
		d = min(ra.after, maxRetryAfter)
	}
	return d
}

package worker

import (
	"context"
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

// inPlaceDelays are the pauses between tries of a step that a task retry
// must not redo: storing a result the upstream charged for, queueing the
// deliveries of a finished job.
var inPlaceDelays = []time.Duration{0, 100 * time.Millisecond, 500 * time.Millisecond, 2 * time.Second}

// retryInPlace runs step until it succeeds, inPlaceDelays run out or ctx
// ends, and returns its last error.
func retryInPlace(ctx context.Context, step func() error) error {
	var err error
	for _, wait := range inPlaceDelays {
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return err
		case <-time.After(wait):
		}
		if err = step(); err == nil {
			return nil
		}
	}
	return err
}

package worker

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// This file is the compress path's retry policy, all of it: when a failed
// run is retried by asynq and when the job fails (judge), how long asynq
// waits between runs (backoff), and how a step that must not be redone by a
// new run is retried where it stands (retryInPlace).

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

// maxFetchRetries bounds retries of an image URL that failed in a way that
// may pass (connection refused, 5xx, timeout): a flow waiting on ?wait
// should hear within seconds that its URL is unreachable, not after the
// minutes that upstream outages are given.
const maxFetchRetries = 2

// verdict is what becomes of a compress run that failed.
type verdict int

const (
	// retryTask: return the error; asynq runs the task again after backoff.
	retryTask verdict = iota
	// failJob: the job fails with the error; the task ends.
	failJob
)

// judge decides the fate of a run that failed with err after retried
// retries of at most maxRetry. A final error fails the job at once; one that
// may pass is retried until the retries run out, and then fails the job
// marked retryable (resubmitting later may work).
func judge(err error, retried, maxRetry int) (v verdict, retryableFailure bool) {
	if !retryable(err) {
		return failJob, false
	}
	if connector.ErrorCodeOf(err) == connector.EFETCH {
		maxRetry = min(maxRetry, maxFetchRetries)
	}
	if retried < maxRetry {
		return retryTask, false
	}
	return failJob, true
}

// retryable reports whether another run may succeed: upstream 5xx,
// timeouts and network errors, passing fetch errors, Redis being down, and
// anything that is not a domain error (a deadline, a bug elsewhere). A 200
// whose body could not be read is retried like a call cut off before its
// answer: the call record counts it unanswered, so the retry's call with
// the same Idempotency-Key either replays its charge or flags it uncertain.
func retryable(err error) bool {
	var e *connector.Error
	if !errors.As(err, &e) {
		return true
	}
	return e.Retryable || e.Code == connector.EUNAVAILABLE
}

// In-place retries back off from inPlaceBase, doubling up to inPlaceCap:
// short enough that a result is stored within a second of Redis coming
// back, long enough not to hammer a Redis that is restarting.
const (
	inPlaceBase = 50 * time.Millisecond
	inPlaceCap  = time.Second
)

// retryInPlace runs step until it succeeds, fails in a way that will not
// pass (anything but EUNAVAILABLE), or ctx ends, and returns its last error.
// It is for the steps a new run must not redo: keeping and storing an
// answer the upstream charged for, finishing a job, queueing its
// deliveries. Give it a context that ends at the task's deadline.
func retryInPlace(ctx context.Context, step func() error) error {
	wait := inPlaceBase
	for {
		err := step()
		if err == nil || connector.ErrorCodeOf(err) != connector.EUNAVAILABLE {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait = min(2*wait, inPlaceCap)
	}
}

// untilDeadline returns a context that ends at ctx's deadline but not when
// ctx is cancelled earlier. asynq cancels a task's context when it loses
// the task's lease (Redis unreachable for ~30 s): a worker holding an
// answer the upstream charged for must go on trying to store it until the
// task's own deadline, since a new run would charge again. Without a
// deadline on ctx, compressTimeout bounds it.
func untilDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(compressTimeout)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
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

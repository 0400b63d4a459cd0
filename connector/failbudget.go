package connector

// A job that fails costs its key nothing (the compression API charges only
// what it compresses), yet its fetch and its transform cost imgflow the
// same as a paid job's: without a bound, a key could repeat failing jobs
// (a 49 MP AVIF that runs out its deadline, a slow URL) at no cost. So a
// key's free failures are held to a budget, kept beside its unfinished
// jobs: a burst of FreeFailuresPerHour, then that many an hour, and every
// paid job (completed and charged) earns one back. Past the budget a new
// job from the key is refused with EFAILBUDGET and a Retry-After; a key
// whose paid jobs keep pace with its failures is never refused.

// EFAILBUDGET refuses a new job (429, Retry-After) of a key whose jobs
// failed uncharged more than its budget allows lately.
const EFAILBUDGET ErrorCode = "too_many_failures"

// DefaultFreeFailuresPerHour is each key's budget of free failures
// (IMGFLOW_FREE_FAILURES_PER_HOUR): a burst of this many, then this many
// an hour, plus one per paid job.
const DefaultFreeFailuresPerHour = 60

// FreeFailure reports whether a finished job counts against its key's
// budget of free failures: it failed, surely uncharged, for what its key
// sent or asked (a fetch, a decode, a transform, its metadata, its
// deadline). Failures of imgflow or the compression API (upstream_error,
// unavailable, internal) are not the key's and do not count.
func (j *Job) FreeFailure() bool {
	if j.Status != StatusFailed || j.ChargeUncertain || j.Error == nil {
		return false
	}
	c := j.Error.Code
	return c.CallersMistake() || c == EMETADATA || c == ETRANSFORMTIME
}

// Paid reports whether a finished job was charged: it completed from a
// call of the compression API (not from an earlier job's result).
func (j *Job) Paid() bool { return j.Status == StatusCompleted && !j.Free() }

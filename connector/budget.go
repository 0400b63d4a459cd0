package connector

// Free jobs cost their key nothing (a deduplicated repeat completes from an
// earlier job's result, uncharged), so their deliveries are held to a
// per-key outbound budget: without it, one charged job and a stream of
// identical repeats made hundreds of signed POSTs a second at any public
// URL the key named. Beyond the budget a delivery waits (it is put off),
// never dropped.

// DefaultFreeDeliveriesPerMinute is the per-key outbound budget of free
// jobs' deliveries (IMGFLOW_FREE_DELIVERIES_PER_MINUTE): a burst of this
// many at once, then this many a minute, evenly spaced.
const DefaultFreeDeliveriesPerMinute = 120

// Free reports whether the job cost its key nothing: it completed from an
// identical job's result (deduplicated).
func (j *Job) Free() bool { return j.DeduplicatedFrom != "" }

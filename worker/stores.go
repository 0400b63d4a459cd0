package worker

import (
	"context"
	"time"
)

// The stores the worker reads and writes besides the executor's
// (connector.JobRuns), each shaped by what the worker calls:
// redisstore's aggregates fit them, and main wires one field each.

// OutboundBudget keeps each key's budget of deliveries of free jobs
// (redisstore.Accounts).
type OutboundBudget interface {
	// SpendOutbound reserves one of owner's free deliveries under
	// perMinute (a burst of perMinute, then perMinute a minute, evenly) if
	// its turn comes within maxWait, and says how long to wait for it; ok
	// is false, with the wait, when it is further off (nothing reserved).
	SpendOutbound(ctx context.Context, owner string, perMinute int, maxWait time.Duration) (wait time.Duration, ok bool, err error)
}

package connector

import "context"

// InflightLimiter caps how many unfinished jobs one key (owner) has, so one
// tenant cannot fill every worker while the others wait. The JobStore frees
// a job's place when the job finishes or is deleted.
type InflightLimiter interface {
	// AdmitJob counts job id against owner's limit: ETOOMANY (with
	// RetryAfter) when owner already has limit unfinished jobs. Admission
	// is atomic, so concurrent requests cannot overshoot the limit.
	AdmitJob(ctx context.Context, owner, id string, limit int) error
	// ReleaseJob frees id's place, for a job that was admitted but never
	// made. Releasing an id twice, or one never admitted, is not an error.
	ReleaseJob(ctx context.Context, owner, id string) error
}

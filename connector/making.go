package connector

// MakingState is where the making of a batch stands. A batch is made in
// steps (its record, then every item, then its items queued) by a request
// that may die or lose its client at any step; one decision, taken once in
// the store by compare-and-set, says whether it is made or removed, so
// that every step after it is done by whoever gets there (the request, a
// retry with its Idempotency-Key, the worker's sweeper), never undone.
type MakingState string

const (
	// MakingCreating: items are being stored, hidden; nothing runs yet.
	MakingCreating MakingState = "creating"
	// MakingMade: decided made; items are made visible and queued by
	// whoever finishes it.
	MakingMade MakingState = "made"
	// MakingDone: made, visible and queued.
	MakingDone MakingState = "done"
	// MakingRemoved: decided removed; its hidden items are deleted.
	MakingRemoved MakingState = "removed"
)

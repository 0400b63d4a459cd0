package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// RetryAfter is the hint given with EUNAVAILABLE errors.
const RetryAfter = 5 * time.Second

// storageErr maps an error from Redis to the domain's terms:
//   - nil, *connector.Error and the caller's own context ending pass through;
//   - a Redis reply that means "not now" (LOADING, READONLY, MASTERDOWN,
//     CLUSTERDOWN, TRYAGAIN, BUSY, OOM, max clients) and every network or
//     pool failure become EUNAVAILABLE with RetryAfter, so the caller
//     answers 503 and the worker retries in place;
//   - NOSCRIPT too: Redis restarted or failed over and forgot its scripts.
//     go-redis's Script.Run and pipelinedScripts load them again, so the
//     next try passes (as a permanent error it would throw a charged
//     answer away);
//   - any other Redis reply (WRONGTYPE, a script error) is a bug: EINTERNAL.
//
// redis.Nil is handled where it means "not found", never here.
func storageErr(err error) error {
	if err == nil {
		return nil
	}
	var ce *connector.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !transientReply(rerr.Error()) {
		return internalErr(err)
	}
	return &connector.Error{
		Code:       connector.EUNAVAILABLE,
		Message:    "storage unavailable",
		RetryAfter: RetryAfter,
		Retryable:  true,
		Err:        err,
	}
}

func transientReply(msg string) bool {
	for _, p := range []string{"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "OOM", "NOSCRIPT", "ERR max number of clients"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// internalErr hides a storage-side bug (a corrupt record, a duplicate id)
// behind "Internal error" and keeps the cause for the logs.
func internalErr(err error) *connector.Error {
	return &connector.Error{Code: connector.EINTERNAL, Message: "Internal error", Err: fmt.Errorf("redisstore: %w", err)}
}

func notFound(what, id string) *connector.Error {
	return connector.Errorf(connector.ENOTFOUND, "%s %s not found", what, id)
}

// maxTxAttempts bounds the optimistic-locking retries of one update. Every
// round of conflicts lets at least one writer through, so this is only hit
// under a storm of writers to the same key.
const maxTxAttempts = 100

// callerErr marks an error from the caller's update function so that it
// comes back unchanged rather than as a storage error.
type callerErr struct{ err error }

func (e callerErr) Error() string { return e.err.Error() }

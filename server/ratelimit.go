package server

import (
	"context"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/imgflow/imgflow/connector"
)

// Per-key rate limits of the operations that send POSTs the key does not
// pay for: a hook test sends one at once, a recovery re-sends every failed
// delivery since a time. Without a limit one key could make imgflow post to
// any public URL hundreds of times a second. The state is in
// Redis (generic cell rate algorithm), so every serve process shares it.

// Defaults of the limits (docs/operations.md, "Per-key limits").
const (
	DefaultHookTestsPerMinute  = 10
	DefaultHookRecoversPerHour = 6
)

// SlotTaker reserves the next slot of a rate: redisstore.Hooks' TakeSlot
// (the endpoints' rate) fits. A slot up to maxWait ahead is granted at
// once, which lets a burst of rate × maxWait through; beyond it the answer
// is the wait until one is free.
type SlotTaker interface {
	TakeSlot(ctx context.Context, id string, rate float64, maxWait time.Duration) (wait time.Duration, ok bool, err error)
}

// opLimit is "at most n per window, then one per window/n".
type opLimit struct {
	name   string // the operation, in the limit's id and the error
	n      int    // <= 0: no limit
	window time.Duration
	env    string // the setting, named in the error
}

// allow takes one of the key's slots for op, or answers 429 rate_limited
// with Retry-After. Without a store no limit applies.
func (s *Server) allow(c echo.Context, op opLimit) error {
	if op.n <= 0 || s.cfg.OpLimiter == nil {
		return nil
	}
	interval := op.window / time.Duration(op.n)
	rate := float64(time.Second) / float64(interval)
	wait, ok, err := s.cfg.OpLimiter.TakeSlot(c.Request().Context(), "op:"+op.name+":"+s.owner(apiKey(c)), rate, op.window-interval)
	if err != nil {
		return err
	}
	if ok {
		return nil
	}
	retry := max(wait-(op.window-interval), time.Second)
	s.logger(c).Info("rate limited", "operation", op.name, "retry_after", retry)
	return &connector.Error{Code: connector.ERATELIMITED, RetryAfter: retry,
		Message: "too many " + op.name + " requests for this key: at most " + strconv.Itoa(op.n) + " per " + op.window.String() +
			" (" + op.env + "); retry after Retry-After seconds"}
}

func (s *Server) hookTestLimit() opLimit {
	return opLimit{name: "hook test", n: s.cfg.HookTestsPerMinute, window: time.Minute, env: "IMGFLOW_HOOK_TESTS_PER_MINUTE"}
}

func (s *Server) hookRecoverLimit() opLimit {
	return opLimit{name: "hook recover", n: s.cfg.HookRecoversPerHour, window: time.Hour, env: "IMGFLOW_HOOK_RECOVERS_PER_HOUR"}
}

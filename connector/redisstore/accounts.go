package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// Accounts keeps what imgflow knows of each key (owner): its recent key
// checks, the keys the compression API confirmed (the bounded fail-open),
// and its outbound budget of free deliveries.
type Accounts struct{ *conn }

// Cached returns the cached key check of owner and true, or nil and
// false when there is none (never cached or expired).
func (s *Accounts) Cached(ctx context.Context, owner string) (*connector.Account, bool, error) {
	data, err := s.rdb.Get(ctx, s.keys.acct(owner)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, storageErr(err)
	}
	var acct connector.Account
	if err := json.Unmarshal(data, &acct); err != nil {
		return nil, false, internalErr(fmt.Errorf("decode account: %w", err))
	}
	return &acct, true, nil
}

// Cache keeps owner's key check for ttl. A cache entry must expire, so
// ttl <= 0 stores nothing.
func (s *Accounts) Cache(ctx context.Context, owner string, acct *connector.Account, ttl time.Duration) error {
	if ttl <= 0 {
		return nil
	}
	data, err := json.Marshal(acct)
	if err != nil {
		return internalErr(err)
	}
	return storageErr(s.rdb.Set(ctx, s.keys.acct(owner), data, ttl).Err())
}

// ConfirmKey records that the compression API confirmed owner's key at at,
// for grace: while the API cannot be asked, a key confirmed within the
// grace is still let in. grace <= 0 stores nothing.
func (s *Accounts) ConfirmKey(ctx context.Context, owner string, at time.Time, grace time.Duration) error {
	if grace <= 0 {
		return nil
	}
	return storageErr(s.rdb.Set(ctx, s.keys.confirmed(owner), at.UTC().UnixMilli(), grace).Err())
}

// KeyConfirmedAt returns when the compression API last confirmed owner's
// key, and false when there is no record (never, or older than its grace).
func (s *Accounts) KeyConfirmedAt(ctx context.Context, owner string) (time.Time, bool, error) {
	ms, err := s.rdb.Get(ctx, s.keys.confirmed(owner)).Int64()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, storageErr(err)
	}
	return time.UnixMilli(ms).UTC(), true, nil
}

// outbudget:{owner} holds owner's outbound budget of free deliveries (its tat,
// as takeSlotScript keeps an endpoint's).

// SpendOutbound takes one of owner's free deliveries: GCRA over the
// budget's tat with a burst of perMinute (the worker's OutboundBudget).
func (s *Accounts) SpendOutbound(ctx context.Context, owner string, perMinute int, maxWait time.Duration) (time.Duration, bool, error) {
	if perMinute <= 0 {
		return 0, true, nil
	}
	interval := 60000 / float64(perMinute)
	burst := interval * float64(perMinute-1)
	r, err := takeSlotScript.Run(ctx, s.rdb, []string{s.keys.outbound(owner)}, s.now().UnixMilli(),
		strconv.FormatFloat(interval, 'f', 3, 64), strconv.FormatFloat(burst, 'f', 3, 64),
		maxWait.Milliseconds(), (time.Minute + maxWait).Milliseconds()).Int64Slice()
	if err != nil {
		return 0, false, storageErr(err)
	}
	return time.Duration(r[1]) * time.Millisecond, r[0] == 1, nil
}

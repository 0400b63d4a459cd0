package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/redis/go-redis/v9"
)

// CachedAccount returns the cached key check of owner and true, or nil and
// false when there is none (never cached or expired).
func (s *base) CachedAccount(ctx context.Context, owner string) (*connector.Account, bool, error) {
	data, err := s.rdb.Get(ctx, s.acctKey(owner)).Bytes()
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

// CacheAccount keeps owner's key check for ttl. A cache entry must expire, so
// ttl <= 0 stores nothing.
func (s *base) CacheAccount(ctx context.Context, owner string, acct *connector.Account, ttl time.Duration) error {
	if ttl <= 0 {
		return nil
	}
	data, err := json.Marshal(acct)
	if err != nil {
		return internalErr(err)
	}
	return storageErr(s.rdb.Set(ctx, s.acctKey(owner), data, ttl).Err())
}

// ConfirmKey records that the compression API confirmed owner's key at at,
// for grace: while the API cannot be asked, a key confirmed within the
// grace is still let in. grace <= 0 stores nothing.
func (s *base) ConfirmKey(ctx context.Context, owner string, at time.Time, grace time.Duration) error {
	if grace <= 0 {
		return nil
	}
	return storageErr(s.rdb.Set(ctx, s.confirmedKey(owner), at.UTC().UnixMilli(), grace).Err())
}

// KeyConfirmedAt returns when the compression API last confirmed owner's
// key, and false when there is no record (never, or older than its grace).
func (s *base) KeyConfirmedAt(ctx context.Context, owner string) (time.Time, bool, error) {
	ms, err := s.rdb.Get(ctx, s.confirmedKey(owner)).Int64()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, storageErr(err)
	}
	return time.UnixMilli(ms).UTC(), true, nil
}

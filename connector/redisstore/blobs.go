package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// PutBlob stores data under key for ttl (ttl <= 0: no expiry). The slice is
// written to the connection as it is, without a copy.
func (s *Store) PutBlob(ctx context.Context, key string, data []byte, ttl time.Duration) error {
	return storageErr(s.rdb.Set(ctx, s.blobKey(key), data, max(ttl, 0)).Err())
}

// GetBlob returns the bytes under key, or ENOTFOUND when they are gone.
func (s *Store) GetBlob(ctx context.Context, key string) ([]byte, error) {
	data, err := s.rdb.Get(ctx, s.blobKey(key)).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, notFound("blob", key)
	}
	if err != nil {
		return nil, storageErr(err)
	}
	return data, nil
}

// DeleteBlob removes the bytes under key; a missing blob is not an error.
func (s *Store) DeleteBlob(ctx context.Context, key string) error {
	return storageErr(s.rdb.Del(ctx, s.blobKey(key)).Err())
}

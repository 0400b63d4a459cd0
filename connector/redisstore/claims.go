package redisstore

import (
	"context"
	"time"
)

// Claims taken once: a name that one caller, on any replica, takes and
// others are refused until it lapses or is given back (an MCP upload URL's
// one PUT). One SET NX, so two replicas racing for a name never both have
// it.
//
//	claim:{name}   "1" for the claim's TTL

// ClaimOnce takes name for ttl: true when this call took it, false when it
// is taken already.
func (s *Blobs) ClaimOnce(ctx context.Context, name string, ttl time.Duration) (bool, error) {
	ok, err := s.rdb.SetNX(ctx, s.keys.claim(name), "1", ttl).Result()
	return ok, storageErr(err)
}

// GiveBack releases name, taken by ClaimOnce, for another caller.
func (s *Blobs) GiveBack(ctx context.Context, name string) error {
	return storageErr(s.rdb.Del(ctx, s.keys.claim(name)).Err())
}

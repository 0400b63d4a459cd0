package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The in-flight set outlives every place in it: a job made just
// before the beat is due, whose making sets no expiry, has a deadline
// within the set's life (on miniredis the TTL ages with the clock).
func TestTheInflightSetOutlivesAPlaceMadeWithoutSettingItsExpiry(t *testing.T) {
	s, r, clock := newListingStore(t)
	ctx := context.Background()
	set := s.Jobs.keys.inflight("me")
	makeListedJob(t, s)
	clock.advance(listingRefresh - time.Millisecond)
	last := makeListedJob(t, s)
	deadline := time.UnixMilli(int64(r.Client.ZScore(ctx, set, last.ID).Val()))
	if ttl := r.Client.PTTL(ctx, set).Val(); ttl <= 0 || clock.Now().Add(ttl).Before(deadline) {
		t.Fatalf("in-flight TTL %v ends before the last place's deadline %v (now %v)", ttl, deadline, clock.Now())
	}
}

// A set gone since the beat (the key's jobs all ended, evicted, Redis
// restarted), or one holding only its budget of free failures (whose
// expiry is the budget's, shorter than a place's deadline), gets its
// expiry from its first place, though the beat is not due.
func TestAPlaceAloneInItsSetSetsTheExpiry(t *testing.T) {
	s, r, _ := newListingStore(t)
	ctx := context.Background()
	set := s.Jobs.keys.inflight("me")
	makeListedJob(t, s)

	r.Client.Del(ctx, set)
	makeListedJob(t, s)
	if ttl := r.Client.PTTL(ctx, set).Val(); ttl < DefaultInflightTTL {
		t.Fatalf("in-flight TTL of a set made anew = %v, want past the place's deadline (-1: none)", ttl)
	}

	r.Client.Del(ctx, set)
	r.Client.ZAdd(ctx, set, redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: failuresMember})
	r.Client.PExpire(ctx, set, time.Minute)
	makeListedJob(t, s)
	if ttl := r.Client.PTTL(ctx, set).Val(); ttl < DefaultInflightTTL {
		t.Fatalf("in-flight TTL of a set that held only its budget = %v, want past the place's deadline", ttl)
	}
}

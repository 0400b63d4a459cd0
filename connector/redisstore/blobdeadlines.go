package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Blob deadlines: when each object of an external blob store (s3blob) must
// be deleted, for its sweeper. They are kept in one set per minute,
// blobdue:{<unix minute>}, so that adding is one SADD, a sweep pops whole
// past minutes with SPOP, and the load spreads over cluster slots instead of
// one sorted set holding every object. A set expires a week after its
// minute, so that deadlines nobody swept (no worker ran for a week) do not
// stay forever; the bucket's lifecycle rule is the backstop for those
// objects (docs/operations.md).
const (
	// blobDueKeep is how long a minute's set outlives its minute.
	blobDueKeep = 7 * 24 * time.Hour
	// BlobSweepLookback is how far back a sweeper that just started looks
	// for minutes nobody swept.
	BlobSweepLookback = blobDueKeep
)

// AddDeadline records that object name is due at.
func (s *Blobs) AddDeadline(ctx context.Context, name string, at time.Time) error {
	minute := at.Unix() / 60
	key := s.keys.blobDue(minute)
	_, err := s.bulk.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.SAdd(ctx, key, name)
		p.ExpireAt(ctx, key, time.Unix((minute+1)*60, 0).Add(blobDueKeep))
		return nil
	})
	return storageErr(err)
}

// Due removes and returns about max names due before now (a few
// batches' worth more at most; names come back even with an error, since
// they are gone from the index): those of
// every minute already over, from the store's sweep cursor on. The cursor
// (in this process) starts BlobSweepLookback back and moves past a minute
// once its set is empty. Two sweepers may run at once: SPOP hands each name
// to one of them.
func (s *Blobs) Due(ctx context.Context, now time.Time, max int) ([]string, error) {
	last := now.Unix()/60 - 1 // the last minute that is over
	s.sweepMu.Lock()
	defer s.sweepMu.Unlock()
	if s.sweepFrom == 0 {
		s.sweepFrom = now.Add(-BlobSweepLookback).Unix() / 60
	}
	var names []string
	for s.sweepFrom <= last && len(names) < max {
		// One round trip for a batch of minutes.
		n := min(last-s.sweepFrom+1, 64)
		cmds := make([]*redis.StringSliceCmd, n)
		_, err := s.bulk.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range n {
				cmds[i] = p.SPopN(ctx, s.keys.blobDue(s.sweepFrom+i), int64(max))
			}
			return nil
		})
		full := int64(-1)
		for i, c := range cmds {
			got := c.Val()
			names = append(names, got...) // popped: the caller must have them
			if full < 0 && len(got) == max {
				full = int64(i)
			}
		}
		if err != nil && err != redis.Nil {
			return names, storageErr(err)
		}
		if full >= 0 {
			// That minute may hold more: start there next time.
			s.sweepFrom += full
			return names, nil
		}
		s.sweepFrom += n
	}
	return names, nil
}

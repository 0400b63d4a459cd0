package redisstore

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/redistest"
)

// listingClock is a test clock for the store and, on miniredis, for Redis
// too: advance moves both, so TTLs age as the memo's clock does.
type listingClock struct {
	mu  sync.Mutex
	now time.Time
	r   *redistest.Redis
}

func (c *listingClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *listingClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	if c.r.Mini != nil {
		c.r.Mini.FastForward(d)
	}
}

func newListingStore(t *testing.T) (*Store, *redistest.Redis, *listingClock) {
	t.Helper()
	r := redistest.New(t)
	clock := &listingClock{now: time.Now(), r: r}
	return New(r.Client, Options{Prefix: r.Prefix, JobTTL: time.Hour, Now: clock.Now}), r, clock
}

func makeListedJob(t *testing.T, s *Store) *connector.Job {
	t.Helper()
	job := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued, Owner: "me",
		Input: connector.JobInput{Kind: connector.InputBase64}}
	if err := s.Jobs.CreateWithInput(context.Background(), job, nil, 0, 50); err != nil {
		t.Fatal(err)
	}
	return job
}

// A process making jobs of one key sets the expiry of the key's listing
// and of its in-flight set once per listingRefresh, not once per job:
// within it the expiry set by the first job stands (here shortened by
// hand, so that a second PEXPIRE or PEXPIREAT would show), after it the
// next job sets it again: JobTTL + listingSlack on the listing, the
// place's deadline + listingSlack on the in-flight set
// (inflightexpiry.go).
func TestMakingJobsSetsExpiriesOncePerRefresh(t *testing.T) {
	for _, c := range []struct {
		name             string
		key              func(s *Store) string
		first, firstMost time.Duration // the first job's expiry: at least, at most (0: no bound)
		again            time.Duration // past the refresh: at least
	}{
		{"listing", func(s *Store) string { return s.Jobs.keys.jobIndex("me") },
			time.Hour, time.Hour + listingSlack, time.Hour},
		{"in-flight set", func(s *Store) string { return s.Jobs.keys.inflight("me") },
			DefaultInflightTTL + listingSlack - time.Minute, 0, DefaultInflightTTL},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, r, clock := newListingStore(t)
			ctx := context.Background()
			key := c.key(s)
			makeListedJob(t, s)
			if ttl := r.Client.PTTL(ctx, key).Val(); ttl < c.first || (c.firstMost > 0 && ttl > c.firstMost) {
				t.Fatalf("%s TTL after the first job = %v, want from %v to %v", c.name, ttl, c.first, c.firstMost)
			}
			r.Client.PExpire(ctx, key, 5*time.Minute)
			clock.advance(listingRefresh - time.Second)
			makeListedJob(t, s)
			if ttl := r.Client.PTTL(ctx, key).Val(); ttl > 5*time.Minute {
				t.Fatalf("%s TTL after a job within the refresh = %v, want the 5m left standing (no expiry set)", c.name, ttl)
			}
			clock.advance(time.Second)
			makeListedJob(t, s)
			if ttl := r.Client.PTTL(ctx, key).Val(); ttl < c.again {
				t.Fatalf("%s TTL after a job past the refresh = %v, want at least %v again", c.name, ttl, c.again)
			}
		})
	}
}

// The listing outlives every record it lists: a job made just before the
// refresh is due, whose making sets no expiry, expires before its listing
// (on miniredis the TTLs age with the clock; a listing kept for JobTTL
// alone would expire listingRefresh before this record).
func TestTheListingOutlivesAJobMadeWithoutSettingItsExpiry(t *testing.T) {
	s, r, clock := newListingStore(t)
	ctx := context.Background()
	makeListedJob(t, s)
	clock.advance(listingRefresh - time.Millisecond)
	last := makeListedJob(t, s)
	listing := r.Client.PTTL(ctx, s.Jobs.keys.jobIndex("me")).Val()
	record := r.Client.PTTL(ctx, s.Jobs.keys.job(last.ID)).Val()
	if record <= 0 || listing < record {
		t.Fatalf("listing TTL %v, record TTL %v: want the listing to outlive the record", listing, record)
	}
}

// A listing gone since this process set its expiry (evicted, Redis
// restarted, emptied by another process) is made again with an expiry,
// though the memo says the expiry is set: the job remembered beside the
// new one tells Redis it is new.
func TestAListingGoneMeanwhileGetsAnExpiryAgain(t *testing.T) {
	s, r, _ := newListingStore(t)
	ctx := context.Background()
	idx := s.Jobs.keys.jobIndex("me")
	makeListedJob(t, s)
	r.Client.Del(ctx, idx)
	makeListedJob(t, s)
	if ttl := r.Client.PTTL(ctx, idx).Val(); ttl < time.Hour {
		t.Fatalf("listing TTL after it was made again = %v, want JobTTL + %v (-1: none)", ttl, listingSlack)
	}
}

// A job taken back (Undo) that emptied the listing is not listed again
// beside the next job, and the listing made again has an expiry.
func TestUndoForgetsTheJobRememberedForTheListing(t *testing.T) {
	s, r, _ := newListingStore(t)
	ctx := context.Background()
	idx := s.Jobs.keys.jobIndex("me")
	first := makeListedJob(t, s)
	if removed, err := s.Jobs.Undo(ctx, "me", first.ID); err != nil || !removed {
		t.Fatalf("Undo = %v, %v; want removed", removed, err)
	}
	next := makeListedJob(t, s)
	if members := r.Client.ZRange(ctx, idx, 0, -1).Val(); !slices.Equal(members, []string{next.ID}) {
		t.Fatalf("listing = %v, want only %s", members, next.ID)
	}
	if ttl := r.Client.PTTL(ctx, idx).Val(); ttl < time.Hour {
		t.Fatalf("listing TTL = %v, want JobTTL + %v", ttl, listingSlack)
	}
}

// EnsureListed, which can make a listing anew, gives it an expiry.
func TestEnsureListedGivesTheListingAnExpiry(t *testing.T) {
	s, r, _ := newListingStore(t)
	ctx := context.Background()
	if err := s.Jobs.EnsureListed(ctx, "me", uuid.Must(uuid.NewV7()).String()); err != nil {
		t.Fatal(err)
	}
	if ttl := r.Client.PTTL(ctx, s.Jobs.keys.jobIndex("me")).Val(); ttl < time.Hour {
		t.Fatalf("listing TTL = %v, want JobTTL + %v", ttl, listingSlack)
	}
}

package redisstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

var planned atomic.Int64

// reserve reserves key for a request that would make a fresh job id.
func reserve(t *testing.T, s *Store, owner, key, fp string) (*connector.IdempotencyRecord, bool) {
	t.Helper()
	return reserveAs(t, s, owner, key, fp, fmt.Sprintf("job-%d", planned.Add(1)))
}

// reserveAs reserves key for a request whose token (its planned job id) is
// token.
func reserveAs(t *testing.T, s *Store, owner, key, fp, token string) (*connector.IdempotencyRecord, bool) {
	t.Helper()
	rec, ok, err := s.Idempotency.Reserve(context.Background(), owner, key, fp, token)
	if err != nil {
		t.Fatalf("Reserve: %v", err)
	}
	return rec, ok
}

// complete completes key for the request holding token, failing the test
// unless it held the key.
func complete(t *testing.T, s *Store, owner, key, token, jobID string) {
	t.Helper()
	if held, err := s.Idempotency.Complete(context.Background(), owner, key, token, jobID); err != nil || !held {
		t.Fatalf("Complete = %v, %v; want held", held, err)
	}
}

// The three answers the server builds on: first use reserves; a repeat while
// in flight sees job_id ""; a repeat after completion sees the job id; and
// the fingerprint comes back so the server can tell a different body (422).
func TestIdempotencyReserveThenCompleteThenReplay(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	if rec, ok := reserveAs(t, s, "o", "k1", "fp-a", "tok-1"); !ok || rec == nil || rec.PlannedID != "tok-1" {
		t.Fatalf("first reserve = %+v, %v; want the caller's planned job, true", rec, ok)
	}
	if ttl := r.Client.PTTL(ctx, s.conn.keys.idemLease("o", "k1")).Val(); ttl <= 0 || ttl > DefaultIdempotencyLease {
		t.Fatalf("lease TTL = %v, want (0, %v]", ttl, DefaultIdempotencyLease)
	}
	rec, ok := reserve(t, s, "o", "k1", "fp-b")
	if ok || rec == nil || rec.Fingerprint != "fp-a" || rec.MadeID != "" {
		t.Fatalf("reserve while in flight = %+v, %v; want {fp-a, \"\"}, false", rec, ok)
	}
	complete(t, s, "o", "k1", "tok-1", "job-1")
	rec, ok = reserve(t, s, "o", "k1", "fp-a")
	if ok || rec == nil || rec.Fingerprint != "fp-a" || rec.MadeID != "job-1" {
		t.Fatalf("reserve after completion = %+v, %v; want {fp-a, job-1}, false", rec, ok)
	}
	if ttl := r.Client.PTTL(ctx, s.conn.keys.idem("o", "k1")).Val(); ttl <= 23*time.Hour || ttl > IdempotencyTTL {
		t.Fatalf("completed TTL = %v, want about 24h", ttl)
	}
	if _, ok := reserve(t, s, "other", "k1", "fp-a"); !ok {
		t.Fatal("another owner's same key was refused, want it reserved (keys are per owner)")
	}
}

func TestIdempotencyCompletedRecordLasts24HoursFromFirstUse(t *testing.T) {
	now := time.Now()
	s, r := newStore(t, Options{Now: func() time.Time { return now }})
	if r.Mini == nil {
		t.Skip("needs miniredis's FastForward")
	}
	r.Mini.SetTime(now) // miniredis reads EXAT against this clock
	reserveAs(t, s, "o", "k", "fp", "tok")
	now = now.Add(2 * time.Minute)
	r.Mini.SetTime(now)
	r.Mini.FastForward(2 * time.Minute)
	// The lease lapsed meanwhile and nobody took the key over: still this
	// request's to complete.
	complete(t, s, "o", "k", "tok", "job-1")
	r.Mini.FastForward(IdempotencyTTL - 3*time.Minute)
	if rec, ok := reserve(t, s, "o", "k", "fp"); ok || rec.MadeID != "job-1" {
		t.Fatalf("23h57m after first use: reserve = %+v, %v; want the completed record", rec, ok)
	}
	r.Mini.FastForward(2 * time.Minute)
	if _, ok := reserve(t, s, "o", "k", "fp"); !ok {
		t.Fatal("24h01m after first use the key is still remembered, want it free")
	}
}

// A server killed while holding a key: its lease runs out within seconds,
// and a retry with the same request takes the key over with the dead
// request's planned job id (to find that job, or make it once). A live
// holder that renews keeps the key.
func TestIdempotencyKeyOfADeadRequestIsTakenOverWithinItsLease(t *testing.T) {
	lease := 300 * time.Millisecond
	s, r := newStore(t, Options{IdempotencyLease: lease})
	ctx := context.Background()
	wait := func() {
		if r.Mini != nil {
			r.Mini.FastForward(lease + 50*time.Millisecond)
		} else {
			time.Sleep(lease + 50*time.Millisecond)
		}
	}
	if _, ok, err := s.Idempotency.Reserve(ctx, "o", "live", "fp", "job-live"); err != nil || !ok {
		t.Fatalf("reserve = %v, %v", ok, err)
	}
	for range 3 { // the live holder renews within each lease
		if r.Mini != nil {
			r.Mini.FastForward(lease / 2)
		} else {
			time.Sleep(lease / 2)
		}
		if held, err := s.Idempotency.Renew(ctx, "o", "live", "job-live"); err != nil || !held {
			t.Fatalf("Renew by the holder = %v, %v; want held", held, err)
		}
	}
	if rec, ok := reserve(t, s, "o", "live", "fp"); ok || rec.MadeID != "" {
		t.Fatalf("reserve while the holder renews = %+v, %v; want in flight", rec, ok)
	}

	if _, ok := reserve(t, s, "o", "dead", "fp"); !ok {
		t.Fatal("first reserve refused")
	}
	rec, ok := reserve(t, s, "o", "dead", "fp")
	if ok {
		t.Fatal("a second reserve within the lease took the key, want in flight (409)")
	}
	planned := rec.PlannedID
	wait() // the holder died: no renewal
	if rec, ok := reserve(t, s, "o", "dead", "fp-other"); ok || rec.Fingerprint != "fp" {
		t.Fatalf("another body after the lease = %+v, %v; want refused with the first fingerprint (422)", rec, ok)
	}
	rec, ok = reserve(t, s, "o", "dead", "fp")
	if !ok || rec.PlannedID != planned {
		t.Fatalf("retry after the lease = %+v, %v; want taken over with the dead request's job %s", rec, ok, planned)
	}
	if held, _ := s.Idempotency.Renew(ctx, "o", "dead", planned); held {
		t.Error("the dead request's lease still renews after a takeover, want it lost")
	}
}

func TestIdempotencyReleaseFreesOnlyPendingKeys(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	reserveAs(t, s, "o", "failed", "fp", "tok-f")
	if err := s.Idempotency.Release(ctx, "o", "failed", "tok-f"); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, ok := reserve(t, s, "o", "failed", "fp2"); !ok {
		t.Fatal("released key could not be reserved again")
	}

	reserveAs(t, s, "o", "done", "fp", "tok-d")
	complete(t, s, "o", "done", "tok-d", "job-1")
	if err := s.Idempotency.Release(ctx, "o", "done", "tok-d"); err != nil {
		t.Fatalf("Release of a completed key: %v", err)
	}
	if rec, ok := reserve(t, s, "o", "done", "fp"); ok || rec.MadeID != "job-1" {
		t.Fatalf("after releasing a completed key: reserve = %+v, %v; want the record kept", rec, ok)
	}
	if err := s.Idempotency.Release(ctx, "o", "never", "tok-n"); err != nil {
		t.Fatalf("Release of an unknown key = %v, want nil", err)
	}
}

func TestIdempotencyCompleteWithoutReservationIsNotFound(t *testing.T) {
	s, _ := newStore(t, Options{})
	_, err := s.Idempotency.Complete(context.Background(), "o", "gone", "tok", "job-1")
	wantCode(t, err, connector.ENOTFOUND)
}

// A request that lost its lease (its renewals failed while Redis was
// down) and a request that took the key over: the first one's release
// and complete must leave the key to the second, or a third request
// reserves it fresh and makes a second job for the one key.
func TestIdempotencyLostLeaseNeitherReleasesNorCompletesTheTakersKey(t *testing.T) {
	lease := 300 * time.Millisecond
	s, r := newStore(t, Options{IdempotencyLease: lease})
	ctx := context.Background()
	lapse := func() {
		if r.Mini != nil {
			r.Mini.FastForward(lease + 50*time.Millisecond)
		} else {
			time.Sleep(lease + 50*time.Millisecond)
		}
	}
	reserveAs(t, s, "o", "k", "fp", "stalled")
	lapse()
	if rec, ok := reserveAs(t, s, "o", "k", "fp", "taker"); !ok || rec.PlannedID != "stalled" {
		t.Fatalf("takeover = %+v, %v; want taken over", rec, ok)
	}

	if err := s.Idempotency.Release(ctx, "o", "k", "stalled"); err != nil {
		t.Fatalf("release by the stalled request: %v", err)
	}
	if rec, ok := reserveAs(t, s, "o", "k", "fp", "third"); ok || rec.MadeID != "" {
		t.Fatalf("third request after the stalled one's release = %+v, %v; want the key still in flight (the taker's)", rec, ok)
	}
	if held, err := s.Idempotency.Complete(ctx, "o", "k", "stalled", "stalled-job"); err != nil || held {
		t.Fatalf("complete by the stalled request = %v, %v; want not held", held, err)
	}
	if held, err := s.Idempotency.Renew(ctx, "o", "k", "taker"); err != nil || !held {
		t.Fatalf("the taker's lease after the stalled request's complete = %v, %v; want still held", held, err)
	}
	complete(t, s, "o", "k", "taker", "taker-job")
	if rec, ok := reserveAs(t, s, "o", "k", "fp", "third"); ok || rec.MadeID != "taker-job" {
		t.Fatalf("after the taker completed: reserve = %+v, %v; want its job", rec, ok)
	}
	// Once completed, a late complete by the stalled request (its lease
	// gone, nobody holding the key) still does not overwrite it.
	if held, err := s.Idempotency.Complete(ctx, "o", "k", "stalled", "stalled-job"); err != nil || held {
		t.Fatalf("late complete by the stalled request = %v, %v; want not held", held, err)
	}
	// A complete retried after its first try landed (the answer lost) is a
	// no-op success.
	complete(t, s, "o", "k", "taker", "taker-job")
	if rec, _ := reserveAs(t, s, "o", "k", "fp", "fourth"); rec.MadeID != "taker-job" {
		t.Fatalf("record = %+v, want taker-job kept", rec)
	}

	// A release by the taker itself still frees a pending key.
	reserveAs(t, s, "o", "k2", "fp", "holder")
	if err := s.Idempotency.Release(ctx, "o", "k2", "holder"); err != nil {
		t.Fatal(err)
	}
	if _, ok := reserveAs(t, s, "o", "k2", "fp", "next"); !ok {
		t.Fatal("the holder's release left the key held")
	}
}

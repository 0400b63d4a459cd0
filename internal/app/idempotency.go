package app

import (
	"context"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// The Idempotency-Key lease, one for jobs and batches (whose keys are
// apart: a batch's is scoped "batch:"). A request reserves the key with
// the id it would make; while it lives it renews a short lease; at its end
// it records what it made (complete) or lets the key go (release). A
// second request with the key waits while the lease is held, and takes the
// key over when it lapses: the first request died, and what it left is the
// second one's to find or finish; finding nothing, it makes its own under
// its own id (replan). Release acts only while the request's lease still
// holds its token, complete then too or while nobody holds the key and it
// names no job yet: a request that lost the key (its renewals failed, a
// Redis restart) leaves it to the one that took it over.

// idempotencyPoll is how often a waiting request looks again.
const idempotencyPoll = 100 * time.Millisecond

// completeKeyFor is how long a request's end keeps trying to record what
// it made under its key, in the background.
const completeKeyFor = 30 * time.Second

// leased is a request's reservation of an Idempotency-Key.
type leased struct {
	rec      *connector.IdempotencyRecord
	reserved bool
	token    string // the fresh id the request reserved with
}

// ownID is the id this request makes its job or batch under: the fresh id
// it reserved the key with, which is also its lease's token, so that the
// key's record names what its holder makes.
func (l *leased) ownID() string { return l.token }

// tookOver reports whether the key was taken over from a dead request:
// its planned id is not this request's.
func (l *leased) tookOver() bool { return l.rec.PlannedID != l.ownID() }

// errKeyInFlight answers a request whose Idempotency-Key another request
// still holds past the wait: 409, to be retried shortly.
func errKeyInFlight() error {
	return &connector.Error{Code: connector.ECONFLICT, RetryAfter: time.Second,
		Message: "a request with this Idempotency-Key is still in flight; retry shortly"}
}

// reserve claims owner's key for a request with fingerprint, waiting
// while another request holds it in flight; not reserved means the key is
// done: the earlier record tells what it made (or, by its fingerprint,
// that it was another request: the caller answers 422).
func (s *Maker) reserve(ctx context.Context, owner, key, fingerprint string) (*leased, error) {
	if len(key) > 255 {
		return nil, connector.Errorf(connector.EINVALID, "Idempotency-Key must be at most 255 characters")
	}
	token, err := newID()
	if err != nil {
		return nil, err
	}
	waitUntil := time.Now().Add(s.cfg.IdempotencyWait)
	t := time.NewTicker(idempotencyPoll)
	defer t.Stop()
	for {
		rec, reserved, err := s.cfg.Idempotency.Reserve(ctx, owner, key, fingerprint, token)
		if err != nil {
			return nil, err
		}
		if reserved || rec.Fingerprint != fingerprint || rec.MadeID != "" {
			return &leased{rec: rec, reserved: reserved, token: token}, nil
		}
		if time.Now().After(waitUntil) {
			return nil, errKeyInFlight()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// replan names the request's own id (its token) as what it makes under a
// key it took over and found nothing made under: a request taking the key
// over from this one in turn finds that. ECONFLICT when the lease was lost
// meanwhile.
func (s *Maker) replan(ctx context.Context, owner, key string, l *leased) error {
	held, err := s.cfg.Idempotency.Replan(ctx, owner, key, l.token, l.ownID())
	if err != nil {
		return err
	}
	if !held {
		return errKeyInFlight()
	}
	l.rec.PlannedID = l.ownID()
	return nil
}

// hold renews the lease until the returned function is called (at the end
// of the request, which the renewing goroutine does not outlive).
func (s *Maker) hold(ctx context.Context, owner, key, token string) (stop func()) {
	return renewWhile(ctx, s.renewEvery, func(ctx context.Context) (bool, error) {
		held, err := s.cfg.Idempotency.Renew(ctx, owner, key, token)
		if err == nil && !held {
			s.log.Warn("idempotency key lease lost to a retry; the store's decisions keep what is made once")
		}
		return held, err
	})
}

// renewWhile calls renew every period until the returned function is
// called (the renewing goroutine does not outlive it), or until renew says
// the lease is no longer held. A failed renewal is tried again next period:
// the lease outlives a few.
func renewWhile(ctx context.Context, every time.Duration, renew func(context.Context) (held bool, err error)) (stop func()) {
	done := make(chan struct{})
	ended := make(chan struct{})
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(ended)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if held, err := renew(ctx); err == nil && !held {
					return
				}
			}
		}
	}()
	return func() { close(done); <-ended }
}

// complete records id as what the request holding key (its lease token)
// made. On a Redis hiccup it is tried again in the background: until then a
// retry waits (409 at worst), and after the lease lapses it takes the key
// over and finds id. A request that lost the key to another leaves it be.
//
// lost is true when the key turned out to be another request's: a retry
// took it over while this request stalled, and the key keeps what that
// retry makes.
func (s *Maker) complete(ctx context.Context, owner, key, token, id string) (lost bool) {
	ctx = context.WithoutCancel(ctx)
	do := func(ctx context.Context) error {
		held, err := s.cfg.Idempotency.Complete(ctx, owner, key, token, id)
		if err == nil && !held {
			lost = true
			s.log.Warn("idempotency key taken over by a retry before this request recorded what it made; the key keeps the retry's", "id", id)
		}
		return err
	}
	if do(ctx) == nil {
		return lost
	}
	s.retryLater(completeKeyFor, "idempotency key not completed; a retry takes it over after its lease and finds what was made", do, "id", id)
	return false
}

// release lets the key go after a request that made nothing, so that a
// retry goes through at once (else it waits for the lease), unless the
// request lost its lease (token) to another.
func (s *Maker) release(ctx context.Context, owner, key, token string) {
	if err := s.cfg.Idempotency.Release(context.WithoutCancel(ctx), owner, key, token); err != nil {
		s.log.Warn("idempotency key not released; a retry takes it over when its lease lapses", "err", err)
	}
}

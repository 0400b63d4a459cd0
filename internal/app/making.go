package app

import (
	"context"

	"github.com/imgflow/imgflow/connector"
)

// One making protocol for a single job and a batch (a set is a batch of its
// variants: set.go). Under an Idempotency-Key a request
//
//  1. leases the key (idempotency.go), or meets what the key made already;
//  2. settles what a dead request left under the key it took over: the
//     answer when it was made, else nothing, and this request makes its own;
//  3. makes under its own id (job.go: one record, queued; batch.go: begin,
//     stage, decide, finish under the batch's lease);
//  4. records what it made on the key, or lets the key go.
//
// Without a key (or an Idempotency store) only step 3 runs. A making is what
// a job and a batch differ in; the one difference of the protocol itself is
// lostKey, the answer when a retry took the key over while this request
// made: a single job is taken back (its retry makes its own), a batch,
// decided made and published whole, stays.
type making[T any] struct {
	// scope keeps a kind's keys apart from the other's ("" for jobs).
	scope string
	// what names the request in the 422 of a key reused.
	what string
	// make admits and makes under id; left says what a failure left.
	make func(ctx context.Context, id string) (T, leftBehind, error)
	// find reads what a completed key made.
	find func(ctx context.Context, id string) (T, error)
	// settle brings to its end what a dead request left under id: found
	// false when it made nothing.
	settle func(ctx context.Context, id string) (got T, found bool, err error)
	// lostKey answers a request that made got and then found its key
	// taken over by a retry; nil: got stays the answer.
	lostKey func(ctx context.Context, got T) error
	// id is what got is recorded under.
	id func(got T) string
}

// makeOnce runs the protocol for owner's request with key and fingerprint
// ("" key: none). replay is true when the answer is what an earlier
// request made.
func makeOnce[T any](ctx context.Context, s *Maker, owner, key, fingerprint string, m making[T]) (got T, replay bool, err error) {
	var none T
	if key == "" || s.cfg.Idempotency == nil {
		id, err := newID()
		if err != nil {
			return none, false, err
		}
		got, left, err := m.make(ctx, id)
		return got, left == adopted, err
	}
	scoped := m.scope + key
	l, err := s.reserve(ctx, owner, scoped, fingerprint)
	if err != nil {
		return none, false, err
	}
	if !l.reserved {
		if l.rec.Fingerprint != fingerprint {
			return none, false, connector.Errorf(connector.EMISMATCH, "Idempotency-Key %q was already used with a different %s", key, m.what)
		}
		got, err = m.find(ctx, l.rec.MadeID)
		return got, true, err
	}
	defer s.hold(ctx, owner, scoped, l.token)()
	if l.tookOver() {
		got, found, err := m.settle(ctx, l.rec.PlannedID)
		if found || err != nil {
			if err == nil {
				s.complete(ctx, owner, scoped, l.token, m.id(got))
			}
			return got, found, err
		}
		// It made nothing: this request makes its own under its own id
		// (the dead one's planned id may be decided removed already; had
		// that request only stalled, what it makes after all has another
		// id, and neither request takes back the other's). The key's record
		// names it, so that a request taking the key over from this one in
		// turn finds it.
		if err = s.replan(ctx, owner, scoped, l); err != nil {
			return none, false, err
		}
	}
	got, left, err := m.make(ctx, l.ownID())
	if err != nil {
		// A refused or failed request does not hold the key; one whose
		// making may be left (its taking back unknown) keeps it until its
		// lease lapses: a retry then takes it over and settles it.
		if left == nothingLeft {
			s.release(ctx, owner, scoped, l.token)
		}
		return none, false, err
	}
	if s.complete(ctx, owner, scoped, l.token, m.id(got)) && left == made && m.lostKey != nil {
		if err := m.lostKey(ctx, got); err != nil {
			return none, false, err
		}
	}
	return got, left == adopted, nil
}

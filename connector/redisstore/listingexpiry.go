package redisstore

import (
	"sync"
	"time"
)

// A key's listing (jobs:{owner}) must outlive every record it lists, or
// GET /v1/jobs would lose a job before the job itself expires; it may
// outlive them (List skips and drops entries whose record is gone). Every
// writer that lists a job therefore sets the listing's expiry to
// listingTTL = JobTTL + listingSlack, relative (PEXPIRE), never less. The
// making of a job (admitAndListScript) sets it at most once per
// listingRefresh per owner in each process, and lists the job it made then
// (listingMemo) beside each later one, so that Redis tells whether the
// listing existed before the ZADD.
//
// Why a skipped expiry is enough. Say this process set the expiry while
// making a job, after it read its clock at t0 (Redis ran the PEXPIRE at
// some T0 ≥ t0): the listing lives until T0 + JobTTL + listingSlack. A job
// made at t1 < t0 + listingRefresh whose making skips the expiry gets its
// record (SET ... PX JobTTL, the same pipeline) at T1 = t1 + d, d the
// pipeline's delay (the client's write and read timeouts, a few seconds),
// so it expires at T1 + JobTTL < T0 + listingRefresh + d + JobTTL, within
// the listing's life while listingRefresh + d ≤ listingSlack (30 s + d
// against 10 min). The expiry is not shortened meanwhile: every writer of
// this build sets listingTTL counted from a later time (longer), and
// admitAndListScript sets it whenever the listing did not exist before its
// ZADD (emptied by Undo, Delete or List's pruning, evicted, Redis
// restarted): neither the job listed then nor this one was in it.
//
// An older build's writers set JobTTL alone: during a rolling upgrade an
// old process listing a job between t0 and t1 can leave the listing to
// expire up to listingRefresh + d before the record made at t1, should no
// job of the key be made in the week after it.

// listingSlack is how much longer than JobTTL a listing lives past the
// last expiry set on it.
const listingSlack = 10 * time.Minute

// listingRefresh is how long after setting a listing's expiry a process
// lists jobs without setting it again.
const listingRefresh = 30 * time.Second

// listingMemoSize bounds the owners remembered; past it the memo starts
// over (a miss only costs the PEXPIRE it would have saved).
const listingMemoSize = 4096

// listingTTL is the expiry every writer sets on a listing.
func (s *Jobs) listingTTL() time.Duration { return s.jobTTL + listingSlack }

// listingMemo is, per owner, when this process last set the listing's
// expiry (its clock read before the round trip) and the job it listed then.
type listingMemo struct {
	mu sync.Mutex
	m  map[string]listedWithExpiry
}

type listedWithExpiry struct {
	at time.Time
	id string
}

func newListingMemo() *listingMemo { return &listingMemo{m: map[string]listedWithExpiry{}} }

// listedBefore is the job listed when owner's listing last had its expiry
// set at most listingRefresh before now, "" when the expiry is due. A
// clock that went back (now before the memo) makes it due.
func (l *listingMemo) listedBefore(owner string, now time.Time) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.m[owner]
	if !ok {
		return ""
	}
	if age := now.Sub(e.at); age < 0 || age >= listingRefresh {
		delete(l.m, owner)
		return ""
	}
	return e.id
}

// expirySet records that owner's listing had its expiry set in a round
// trip begun at at, when id was listed.
func (l *listingMemo) expirySet(owner, id string, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[owner]; !ok && len(l.m) >= listingMemoSize {
		clear(l.m)
	}
	l.m[owner] = listedWithExpiry{at: at, id: id}
}

// unlisted forgets id when it is the job remembered for owner (its entry
// is being removed), so that it is not listed again beside a later job.
func (l *listingMemo) unlisted(owner, id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[owner]; ok && e.id == id {
		delete(l.m, owner)
	}
}

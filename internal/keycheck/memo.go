package keycheck

import (
	"sync"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// memoTTL is how long a serve process reuses a key check it read
// from the shared cache (Accounts) without asking Redis again. A POST asked
// twice (the header key, then admission) and every request asked once: one
// Redis round trip and a JSON decode each, for an answer that is already
// allowed to be TTL (30 s) old. One second adds at most that much
// to the staleness another serve process's refresh (GET /v1/account) could
// see; this process's own refreshes replace its memo at once.
const memoTTL = time.Second

// memoSize bounds the keys remembered; past it the memo starts over
// (a miss only costs the read it would have saved).
const memoSize = 4096

// memo is the process-local front of the key-check cache.
type memo struct {
	mu sync.Mutex
	m  map[string]memoEntry
}

type memoEntry struct {
	acct  *connector.Account
	until time.Time
}

func newMemo() *memo { return &memo{m: map[string]memoEntry{}} }

// get returns owner's remembered key check while it is fresh at now.
func (a *memo) get(owner string, now time.Time) (*connector.Account, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[owner]
	if !ok || !now.Before(e.until) {
		return nil, false
	}
	return e.acct, true
}

// put remembers acct for owner until now + ttl (ttl <= 0: forget it).
func (a *memo) put(owner string, acct *connector.Account, now time.Time, ttl time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ttl <= 0 || acct == nil {
		delete(a.m, owner)
		return
	}
	if _, ok := a.m[owner]; !ok && len(a.m) >= memoSize {
		clear(a.m)
	}
	a.m[owner] = memoEntry{acct: acct, until: now.Add(ttl)}
}

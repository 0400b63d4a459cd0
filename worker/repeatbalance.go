package worker

import (
	"context"
	"sync"
	"time"
)

// A deduplicated repeat calls no compression and is charged nothing, yet
// reports the account's balance at the time it completes: it asks the
// compression API's free key check (POST /validate), never copies the
// earlier job's figure, which other jobs may have spent since. The check
// is bounded by repeatBalanceTimeout; when it fails or times out the
// repeat completes all the same, its balance null. The balance costs no
// Redis command: checks are remembered in this process for
// repeatBalanceFresh, and a compression this worker makes for a key
// forgets that key's (its balance changed).

// repeatBalanceTimeout bounds the key check a repeat waits for.
const repeatBalanceTimeout = 2 * time.Second

// repeatBalanceFresh is how long a key check answers later repeats of
// the same key, so a burst of identical jobs asks once.
const repeatBalanceFresh = 2 * time.Second

// repeatBalanceMemoSize bounds the keys remembered; past it the memo
// starts over (a miss costs one key check).
const repeatBalanceMemoSize = 4096

// balanceMemo remembers each owner's last balance read by a key check.
type balanceMemo struct {
	mu sync.Mutex
	m  map[string]balanceEntry
}

type balanceEntry struct {
	credits int64
	asked   time.Time // when the check that read credits was sent
	known   bool      // credits holds a balance (false: only charged is set)
	charged time.Time // when this worker last had a compression answered
}

// fresh returns owner's balance read by a check sent within
// repeatBalanceFresh of now and after this worker's last charge for owner.
func (m *balanceMemo) fresh(owner string, now time.Time) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[owner]
	if !ok || !e.known || now.Sub(e.asked) > repeatBalanceFresh || e.asked.Before(e.charged) {
		return 0, false
	}
	return e.credits, true
}

// put remembers credits for owner, read by a check sent at asked, unless a
// newer check's answer or a later charge is known already.
func (m *balanceMemo) put(owner string, credits int64, asked time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[owner]
	if ok && (e.known && !asked.After(e.asked) || asked.Before(e.charged)) {
		return
	}
	if !ok && len(m.m) >= repeatBalanceMemoSize {
		clear(m.m)
	}
	m.m[owner] = balanceEntry{credits: credits, asked: asked, known: true, charged: e.charged}
}

// charged forgets owner's balance: a compression was answered at at.
func (m *balanceMemo) charged(owner string, at time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.m[owner]; !ok && len(m.m) >= repeatBalanceMemoSize {
		clear(m.m)
	}
	m.m[owner] = balanceEntry{charged: at}
}

// repeatBalance is the balance a repeat of r's job reports: remembered
// when fresh, else read with a key check; nil when that check fails.
func (w *Worker) repeatBalance(ctx context.Context, r *run) *int64 {
	owner := r.job.Owner
	if credits, ok := w.balances.fresh(owner, time.Now()); ok {
		return &credits
	}
	apiKey, err := w.cfg.Keyring.Open(r.job.SealedKey)
	if err != nil {
		r.log.Warn("sealed API key does not open; the repeat reports no balance", "err", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, repeatBalanceTimeout)
	defer cancel()
	asked := time.Now()
	acct, err := w.cfg.Compressor.Validate(ctx, apiKey)
	if err != nil {
		r.log.Warn("could not read the balance for a deduplicated job; it reports none", "err", err)
		return nil
	}
	w.balances.put(owner, acct.CreditsRemaining, asked)
	credits := acct.CreditsRemaining
	return &credits
}

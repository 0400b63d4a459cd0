package redisstore

import "strconv"

// A key's in-flight set (inflight:{owner}: its jobs' places under a cap,
// and its budget of free failures) must outlive every place in it, or the
// cap would stop counting a job still in flight. The making of a single
// job (admitAndListScript) no longer sets the set's expiry with every
// place: it sets it on the listing's beat (at most once per listingRefresh
// per owner in each process, listingexpiry.go) to the place's deadline plus
// listingSlack, and whenever the new place is the set's only one.
//
// Why the places made between beats are covered. The beat at T0 (Redis's
// clock at the script, the deadline computed from the process's clock t0 ≤
// T0) gives the set t0 + inflightTTL + listingSlack. A place made at t1 <
// t0 + listingRefresh skips the expiry; its deadline t1 + inflightTTL is
// within the set's life while listingRefresh ≤ listingSlack (30 s against
// 10 min). Nothing shortens the expiry meanwhile: this build's writers set
// a later one, spendFailureScript only lengthens it, and a set made anew
// (expired, emptied by the worker's ends, Redis restarted) has no other
// place, so its first place sets it. A set holding only its budget has
// the budget's expiry, which may be shorter: its first place sets it too.
//
// Every writer of this build sets at least deadline + listingSlack (Admit
// and batches' admitManyScript set it with every place: they are not the
// per-job path), so none shortens what another set.
//
// An older build's makers set max(deadline, budget) with every place:
// during a rolling upgrade one of them admitting a job between a beat and
// a place of this build can leave the set to expire up to listingRefresh
// before that place's deadline (an hour on), after which the cap forgets
// a job in flight that long.

// inflightSlackLua is listingSlack in ms, for the scripts that set the
// in-flight set's expiry past a deadline they were given.
var inflightSlackLua = strconv.FormatInt(listingSlack.Milliseconds(), 10)

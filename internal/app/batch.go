package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// A batch is atomic to its callers. It is made in three steps:
//
//  1. begin: its decision is recorded as creating (with the batch record),
//     its items take their places under the key's cap, and each item's
//     input and record are stored hidden (nothing lists, reads or runs
//     them);
//  2. decide: one compare-and-set turns creating into made, or, when the
//     request failed or its client went away first, into removed;
//  3. finish (made): the items' records are made visible and listed, the
//     batch is published, the items are queued, the making ends.
//
// Only a made batch is ever answered 2xx, and only a made batch's items
// run, so a request that ends before its answer leaves nothing charged, or
// a made batch that a retry with its Idempotency-Key finds whole. Whoever
// meets a made batch unfinished finishes it (each step is a no-op when
// done); whoever meets one left creating by a dead request removes it: a
// retry taking the key over, or the worker's sweeper (SweepBatches). The
// making request holds a lease on its batch until it decides
// (batchlease.go): a batch whose lease is held is its request's, however
// long it takes.

// BatchRequest asks for a batch.
type BatchRequest struct {
	Owner          string
	Key            string
	IdempotencyKey string
	Fingerprint    string
	Items          []Input
	CallbackURL    string
	Metadata       json.RawMessage
	// Dedupe is the items' default: an item's own Dedupe wins.
	Dedupe *bool
	// VariantIDs makes the batch a responsive set whose items are these
	// variants, by index (set.go).
	VariantIDs []string
}

// ItemError is an error of one item of a batch request, by its index.
type ItemError struct {
	Index int
	Err   error
}

func (e *ItemError) Error() string { return fmt.Sprintf("items[%d]: %v", e.Index, e.Err) }
func (e *ItemError) Unwrap() error { return e.Err }

// batchMakers is how many items of one batch are stored or queued at once:
// the store's autopipeliner sends what they write together, so a
// 1,000-item batch costs tens of round trips, not thousands.
const batchMakers = 64

// CreateBatch admits and makes a batch, or, for a repeated Idempotency-Key
// with the same request, returns the batch made the first time (replay
// true). Idempotency-Keys of batches and of jobs are apart.
func (s *Maker) CreateBatch(ctx context.Context, r *BatchRequest) (*connector.Batch, bool, error) {
	return makeOnce(ctx, s, r.Owner, r.IdempotencyKey, r.Fingerprint, making[*connector.Batch]{
		scope: "batch:",
		what:  "batch",
		make: func(ctx context.Context, id string) (*connector.Batch, leftBehind, error) {
			b, err := s.makeBatch(ctx, id, r)
			if err != nil {
				return nil, nothingLeft, err // removed, or left creating for the sweeper
			}
			return b, made, nil
		},
		find: s.madeBatch,
		settle: func(ctx context.Context, id string) (*connector.Batch, bool, error) {
			b, err := s.settleBatch(ctx, id)
			return b, b != nil, err
		},
		id: func(b *connector.Batch) string { return b.ID },
	})
}

// madeBatch is the batch a completed key made. Its finish may have met a
// Redis hiccup: the sweeper would finish it; this request does it now.
func (s *Maker) madeBatch(ctx context.Context, id string) (*connector.Batch, error) {
	b, err := s.cfg.Batches.Get(ctx, id)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		if b, err = s.settleBatch(ctx, id); b == nil && err == nil {
			err = connector.Errorf(connector.ENOTFOUND, "batch %s not found", id)
		}
	}
	return b, err
}

// makeBatch admits the batch (every URL, the key's preflight: a zero
// balance is 429 and makes nothing; the key's cap) and makes it (see the
// comment at the top).
func (s *Maker) makeBatch(ctx context.Context, id string, r *BatchRequest) (*connector.Batch, error) {
	for i, item := range r.Items {
		if item.URL != "" {
			if err := s.cfg.CheckURL(ctx, "image_url", item.URL); err != nil {
				return nil, &ItemError{Index: i, Err: err}
			}
		}
	}
	if err := s.Admit(ctx, r.Key, FieldURL{"callback_url", r.CallbackURL}); err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC()
	b := &connector.Batch{ID: id, Status: connector.BatchRunning, CreatedAt: now, Metadata: r.Metadata,
		Owner: r.Owner, CallbackURL: r.CallbackURL, JobIDs: make([]string, len(r.Items)), VariantIDs: r.VariantIDs}
	for i := range b.JobIDs {
		jid, err := newID()
		if err != nil {
			return nil, err
		}
		b.JobIDs[i] = jid
	}
	b.Counts = connector.BatchCounts{Total: len(b.JobIDs), Queued: len(b.JobIDs)}
	if r.CallbackURL != "" {
		b.Callback = &connector.DeliveryState{Status: connector.DeliveryPending}
	}

	// 1. Begin: nothing of it is seen or runs until it is decided made.
	if err := s.cfg.Batches.Begin(ctx, b); err != nil {
		return nil, err // a decision left creating is removed by the sweeper
	}
	defer s.holdBatch(ctx, b.ID)()
	err := s.cfg.Jobs.AdmitAll(ctx, r.Owner, b.JobIDs, s.cfg.MaxJobsPerKey)
	if err == nil {
		err = s.stageItems(ctx, b, r)
	}
	if err == nil {
		err = ctx.Err() // the client went away: nothing is made
	}
	if err != nil {
		s.removeBatch(context.WithoutCancel(ctx), b, true)
		return nil, err
	}

	// 2. Decide. From here the request's end no longer matters.
	ctx = context.WithoutCancel(ctx)
	state, err := s.cfg.Batches.Decide(ctx, b.ID, connector.MakingMade)
	if err != nil {
		// Unknown whether it went through: ask for the other outcome,
		// which tells the one that holds.
		if state, err = s.cfg.Batches.Decide(ctx, b.ID, connector.MakingRemoved); err != nil {
			return nil, err // left creating: the sweeper removes it
		}
	}
	switch state {
	case connector.MakingMade, connector.MakingDone:
	case connector.MakingRemoved:
		s.removeBatch(ctx, b, true) // by us just now, or by the sweeper (our lease lapsed: Redis lost)
		return nil, &connector.Error{Code: connector.EUNAVAILABLE, RetryAfter: time.Second, Retryable: true,
			Message: "the batch could not be made in time; retry"}
	default:
		return nil, &connector.Error{Code: connector.EUNAVAILABLE, RetryAfter: time.Second, Retryable: true,
			Message: "the batch could not be made; retry", Err: fmt.Errorf("batch %s: decision %q", b.ID, state)}
	}

	// 3. Finish, before answering, so that the batch the answer names can
	// be read at once: tried again in place over a Redis hiccup. Should it
	// still fail the batch is made all the same: the sweeper or a retry
	// with the key finishes it, and the answer is it.
	if err := s.settleMade(ctx, b); err != nil {
		s.log.Warn("batch made but not finished; the sweeper finishes it", "batch_id", b.ID, "err", err)
	}
	return b, nil
}

// finishTries spaces the tries of a request to finish the batch it made.
var finishTries = []time.Duration{0, 100 * time.Millisecond, 300 * time.Millisecond, time.Second, 2 * time.Second}

// settleMade finishes the made batch b, trying again over finishTries
// while ctx lasts (the sweeper finishes what it leaves).
func (s *Maker) settleMade(ctx context.Context, b *connector.Batch) error {
	err := s.finishBatch(ctx, b)
	for _, pause := range finishTries[1:] {
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(pause):
		}
		err = s.finishBatch(ctx, b)
	}
	return err
}

// stageItems stores every item's input and hidden record, batchMakers at
// a time; the first error (or the request's end) stops it.
func (s *Maker) stageItems(ctx context.Context, b *connector.Batch, r *BatchRequest) error {
	sealed := s.cfg.Keyring.Seal(r.Key)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, batchMakers)
	var wg sync.WaitGroup
	for i := range r.Items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			item := r.Items[i]
			if item.Dedupe == nil {
				item.Dedupe = r.Dedupe
			}
			idx := i
			job := s.jobRecord(b.JobIDs[i], r.Owner, sealed, &item, b.CreatedAt)
			job.BatchID, job.BatchIndex = b.ID, &idx
			input, err := s.putInput(ctx, job.ID, item.Image)
			if err == nil {
				err = s.cfg.Jobs.Stage(ctx, job, input, s.cfg.InputTTL)
			}
			if err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	return context.Cause(ctx)
}

// finishBatch makes a made batch's items visible, publishes the batch and
// queues its items, then ends its making. Each step is a no-op when done
// before, so any number of finishers may meet. An item whose enqueue
// fails is queued by the sweeper (its commit noted it).
func (s *Maker) finishBatch(ctx context.Context, b *connector.Batch) error {
	const chunk = 500
	for from := 0; from < len(b.JobIDs); from += chunk {
		if err := s.cfg.Jobs.CommitStaged(ctx, b.Owner, b.JobIDs[from:min(from+chunk, len(b.JobIDs))]); err != nil {
			return err
		}
	}
	if err := s.cfg.Batches.Create(ctx, b); err != nil {
		return err
	}
	sem := make(chan struct{}, batchMakers)
	var wg sync.WaitGroup
	var failed sync.Once
	for _, id := range b.JobIDs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.enqueue(ctx, &connector.Job{ID: id, Owner: b.Owner, BatchID: b.ID}); err != nil {
				failed.Do(func() {
					s.log.Warn("batch items not queued; the sweeper queues them", "batch_id", b.ID, "err", err)
				})
			}
		})
	}
	wg.Wait()
	return s.cfg.Batches.EndMaking(ctx, b.ID, connector.MakingDone)
}

// removeBatch decides a batch removed unless it is made (then it is
// finished instead, and stays), and deletes its hidden items. Its maker
// (maker) decides at once; anyone else only once the maker's lease
// lapsed: while it is held the batch stays creating. It returns the state
// after: "" when there is no decision (never begun, or expired) or on a
// storage error (logged).
func (s *Maker) removeBatch(ctx context.Context, b *connector.Batch, maker bool) connector.MakingState {
	decide := s.cfg.Batches.RemoveLapsed
	if maker {
		decide = func(ctx context.Context, id string) (connector.MakingState, error) {
			return s.cfg.Batches.Decide(ctx, id, connector.MakingRemoved)
		}
	}
	state, err := decide(ctx, b.ID)
	if err != nil {
		s.log.Warn("batch of a failed request not removed yet; the sweeper removes it", "batch_id", b.ID, "err", err)
		return ""
	}
	switch state {
	case connector.MakingRemoved, "":
		if err := s.cfg.Jobs.RemoveStaged(ctx, b.Owner, b.JobIDs); err != nil {
			s.log.Warn("hidden items of a removed batch not deleted; they expire", "batch_id", b.ID, "err", err)
			return state
		}
		if state != "" {
			if err := s.cfg.Batches.EndMaking(ctx, b.ID, connector.MakingRemoved); err != nil {
				s.log.Warn("removed batch left noted; the sweeper forgets it", "batch_id", b.ID, "err", err)
			}
		}
	case connector.MakingMade:
		if err := s.finishBatch(ctx, b); err != nil {
			s.log.Warn("batch made but not finished; the sweeper finishes it", "batch_id", b.ID, "err", err)
		}
	}
	return state
}

// settleBatch brings a batch left by a dead request to its end: finished
// when made (the answer), removed when left creating (nil: make anew). A
// batch already published is the answer as it is.
func (s *Maker) settleBatch(ctx context.Context, id string) (*connector.Batch, error) {
	b, state, err := s.cfg.Batches.Making(ctx, id)
	switch {
	case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
		// Never begun, or its decision expired: published or not made.
		return s.publishedBatch(ctx, id)
	case err != nil:
		return nil, err
	}
	switch state {
	case connector.MakingDone:
		return s.publishedBatch(ctx, id)
	case connector.MakingRemoved:
		if b != nil {
			s.removeBatch(ctx, b, false)
		}
		return nil, nil
	}
	if b == nil {
		return nil, fmt.Errorf("batch %s: %s without its record", id, state)
	}
	bg := context.WithoutCancel(ctx)
	waitUntil := time.Now().Add(s.cfg.IdempotencyWait)
	// creating: removed once its request's lease lapsed; made: finished.
	for state = s.removeBatch(bg, b, false); state == connector.MakingCreating; state = s.removeBatch(bg, b, false) {
		// Its request lives on (its lease is held) though its key's lease
		// lapsed: wait for its end, as for a key in flight.
		if time.Now().After(waitUntil) {
			return nil, errKeyInFlight()
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(idempotencyPoll):
		}
	}
	switch state {
	case connector.MakingRemoved:
		return nil, nil
	case connector.MakingMade:
		// The answer, whole: never nil, which would make a second batch
		// under the key. Its finish, failed just now, is tried again.
		if got, err := s.publishedBatch(bg, id); got != nil || err != nil {
			return got, err
		}
		if err := s.settleMade(bg, b); err != nil {
			return nil, &connector.Error{Code: connector.EUNAVAILABLE, RetryAfter: time.Second, Retryable: true,
				Message: "the batch could not be made; retry", Err: err}
		}
	case "": // unknown (a storage error, logged): neither answer nor make anew
		return nil, &connector.Error{Code: connector.EUNAVAILABLE, RetryAfter: time.Second, Retryable: true,
			Message: "the batch could not be made; retry", Err: fmt.Errorf("batch %s: left undecided", id)}
	}
	return s.publishedBatch(bg, id)
}

// publishedBatch is batch id as published; nil when there is none.
func (s *Maker) publishedBatch(ctx context.Context, id string) (*connector.Batch, error) {
	b, err := s.cfg.Batches.Get(ctx, id)
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return nil, nil
	}
	return b, err
}

// SweepBatchesAt bounds the batches one SweepBatches call looks at: a
// caller that got fewer settled knows none are left but live requests'.
const SweepBatchesAt = 100

// SweepBatches settles batches begun before before whose making has not
// ended: those a dead request left creating are removed (once its lease
// lapsed: a live request's batch is left to it, however slow), those made
// are finished. It returns how many it settled (of at most
// SweepBatchesAt looked at) and whether more may be left: a whole call's
// worth were settled. The batches of live requests, which stay, do not
// count, so a caller that sweeps again while more are left always makes
// progress. The worker's sweeper calls it.
func (s *Maker) SweepBatches(ctx context.Context, before time.Time) (settled int, more bool, err error) {
	settled, err = s.sweepBatches(ctx, before)
	return settled, err == nil && settled == SweepBatchesAt, err
}

func (s *Maker) sweepBatches(ctx context.Context, before time.Time) (int, error) {
	ids, err := s.cfg.Batches.MakingBefore(ctx, before, SweepBatchesAt)
	if err != nil {
		return 0, err
	}
	settled := 0
	for _, id := range ids {
		settled++
		b, state, err := s.cfg.Batches.Making(ctx, id)
		switch {
		case connector.ErrorCodeOf(err) == connector.ENOTFOUND:
			err = s.cfg.Batches.EndMaking(ctx, id, connector.MakingRemoved) // expired: forget the note
		case err != nil:
		case b == nil: // done or removed, its note left
			err = s.cfg.Batches.EndMaking(ctx, id, state)
		default:
			switch s.removeBatch(ctx, b, false) {
			case connector.MakingCreating, "": // its request lives (its own); or next time
				settled--
			case connector.MakingRemoved:
				s.log.Warn("removed a batch a request left half made (serve killed, or Redis lost mid-request)", "batch_id", id)
			case connector.MakingMade:
				s.log.Warn("finished a batch a request left made but unfinished", "batch_id", id)
			}
		}
		if err != nil {
			return settled - 1, errors.Join(fmt.Errorf("batch %s", id), err)
		}
	}
	return settled, nil
}

package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
)

func fullJob() *connector.Job {
	at := func(sec int) *time.Time {
		t := time.Date(2026, 11, 21, 10, 0, sec, 123456789, time.UTC)
		return &t
	}
	credits := int64(41)
	return &connector.Job{
		ID:         uuid.Must(uuid.NewV7()).String(),
		Status:     connector.StatusFailed,
		CreatedAt:  *at(0),
		UpdatedAt:  *at(5),
		StartedAt:  at(1),
		FinishedAt: at(4),
		Input:      connector.JobInput{Kind: connector.InputBase64, URL: "https://x.test/a.png", Filename: "a.png", Size: 1234, MIMEType: "image/png"},
		Result: &connector.JobResult{OriginalSize: 1234, CompressedSize: 567, CompressionRatio: 0.54,
			CreditsRemaining: &credits, MIMEType: "image/png", Filename: "a.png", UpstreamJobID: "up-1"},
		Error:       &connector.JobError{Code: connector.ENOCREDITS, Message: "no credits", UpstreamStatus: 429, CreditsRemaining: &credits, Retryable: true},
		Callback:    &connector.DeliveryState{Status: connector.DeliveryDelivered, Attempts: 2, LastStatus: 204, LastError: "timeout", DeliveredAt: at(6)},
		Metadata:    json.RawMessage(`{"zap":"1","n":[1,2]}`),
		Runs:        3,
		Owner:       "owner-hash",
		SealedKey:   []byte{0, 1, 2, 0xff, 'k'},
		CallbackURL: "https://hooks.example/cb?sig=abc&x=1",
	}
}

func TestCreateThenGetRoundTripsEveryField(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	want := fullJob()
	if err := s.Jobs.Create(ctx, want); err != nil {
		t.Fatalf("Create: %v", err)
	}
	got, err := s.Jobs.Get(ctx, want.ID)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(storedJob{Job: got, Owner: got.Owner, SealedKey: got.SealedKey, CallbackURL: got.CallbackURL})
		wj, _ := json.Marshal(storedJob{Job: want, Owner: want.Owner, SealedKey: want.SealedKey, CallbackURL: want.CallbackURL})
		t.Fatalf("Get returned\n%s\nwant\n%s", gj, wj)
	}
}

func TestCreateJobRefusesAnExistingID(t *testing.T) {
	s, _ := newStore(t, Options{})
	job := newJob(t, s, "o", connector.StatusQueued)
	err := s.Jobs.Create(context.Background(), &connector.Job{ID: job.ID, Owner: "o", Status: connector.StatusCompleted})
	if err == nil {
		t.Fatal("second Create with the same id = nil, want an error")
	}
	got, _ := s.Jobs.Get(context.Background(), job.ID)
	if got.Status != connector.StatusQueued {
		t.Fatalf("after the refused create, status = %q, want the original %q", got.Status, connector.StatusQueued)
	}
}

func TestGetUnknownJobIsNotFound(t *testing.T) {
	s, _ := newStore(t, Options{})
	_, err := s.Jobs.Get(context.Background(), "nope")
	wantCode(t, err, connector.ENOTFOUND)
}

func TestJobExpiresAfterJobTTL(t *testing.T) {
	s, r := newStore(t, Options{JobTTL: time.Hour})
	job := newJob(t, s, "o", connector.StatusQueued)
	ttl := r.Client.PTTL(context.Background(), s.conn.keys.job(job.ID)).Val()
	if ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("job record TTL = %v, want about 1h", ttl)
	}
	if r.Mini == nil {
		t.Skip("expiry itself is checked on miniredis only (FastForward)")
	}
	r.Mini.FastForward(time.Hour + time.Second)
	_, err := s.Jobs.Get(context.Background(), job.ID)
	wantCode(t, err, connector.ENOTFOUND)
}

func TestUpdateJobAppliesChangeSetsUpdatedAtAndKeepsExpiry(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	s, r := newStore(t, Options{Now: func() time.Time { return now }, JobTTL: time.Hour})
	ctx := context.Background()
	job := newJob(t, s, "o", connector.StatusQueued)
	now = now.Add(time.Minute)
	got, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error {
		j.Status = connector.StatusProcessing
		j.StartedAt = &now
		return nil
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if got.Status != connector.StatusProcessing || !got.UpdatedAt.Equal(now) || got.Owner != "o" {
		t.Fatalf("Update returned status %q, updated_at %v, owner %q; want processing, %v, o", got.Status, got.UpdatedAt, got.Owner, now)
	}
	stored, _ := s.Jobs.Get(ctx, job.ID)
	if !reflect.DeepEqual(stored, got) {
		t.Fatalf("stored job %+v differs from the returned one %+v", stored, got)
	}
	if ttl := r.Client.PTTL(ctx, s.conn.keys.job(job.ID)).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("TTL after update = %v, want the original expiry (0 < ttl <= 1h)", ttl)
	}
}

func TestUpdateJobReturnsTheFunctionsErrorAndStoresNothing(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	job := newJob(t, s, "o", connector.StatusQueued)
	boom := errors.New("boom")
	_, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error {
		j.Status = connector.StatusFailed
		return boom
	})
	if err != boom {
		t.Fatalf("Update error = %v, want the function's own error", err)
	}
	if got, _ := s.Jobs.Get(ctx, job.ID); got.Status != connector.StatusQueued {
		t.Fatalf("status after aborted update = %q, want queued", got.Status)
	}
}

func TestUpdateUnknownJobIsNotFound(t *testing.T) {
	s, _ := newStore(t, Options{})
	_, err := s.Jobs.Update(context.Background(), "nope", func(*connector.Job) error { return nil })
	wantCode(t, err, connector.ENOTFOUND)
}

// Concurrent read-modify-write updates must not lose each other's changes.
func TestConcurrentUpdatesAreNotLost(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	job := newJob(t, s, "o", connector.StatusQueued)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			_, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error {
				j.Runs++
				return nil
			})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	got, _ := s.Jobs.Get(ctx, job.ID)
	if got.Runs != n {
		t.Fatalf("Attempts = %d after %d concurrent increments, want %d", got.Runs, n, n)
	}
}

func TestDeleteJobForgetsTheRecordAndItsListing(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	keep := newJob(t, s, "o", connector.StatusQueued)
	gone := newJob(t, s, "o", connector.StatusQueued)
	if err := s.Jobs.Delete(ctx, gone.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Jobs.Get(ctx, gone.ID); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Errorf("Get after Delete: %v, want ENOTFOUND", err)
	}
	page, err := s.Jobs.List(ctx, "o", connector.JobFilter{Limit: 10})
	if err != nil || len(page.Jobs) != 1 || page.Jobs[0].ID != keep.ID {
		t.Errorf("listing after Delete = %v, %v; want only %s", page, err, keep.ID)
	}
	if err := s.Jobs.Delete(ctx, gone.ID); err != nil {
		t.Errorf("deleting it again: %v, want nil", err)
	}
}

// Two processes (two Stores on one Redis) updating the same job: each
// remembers the record it wrote last, and neither may overwrite the other's
// change with its old copy.
func TestUpdatesFromTwoProcessesAreNotLost(t *testing.T) {
	a, r := newStore(t, Options{})
	b := New(r.Client, Options{Prefix: r.Prefix})
	ctx := context.Background()
	job := newJob(t, a, "o", connector.StatusQueued)
	inc := func(s *Store) {
		t.Helper()
		if _, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Runs++; return nil }); err != nil {
			t.Fatalf("Update: %v", err)
		}
	}
	inc(a) // a now remembers Attempts=1
	inc(b)
	inc(b)
	inc(a) // from a's old copy: must see b's two increments
	got, _ := b.Jobs.Get(ctx, job.ID)
	if got.Runs != 4 {
		t.Fatalf("Attempts = %d after 4 increments from two stores, want 4", got.Runs)
	}
}

// A change refused on an old copy is checked against the current record:
// a job another process finished is not started again, and a refusal that
// holds comes back to the caller.
func TestUpdateJobDecidesOnTheCurrentRecordNotAnOldCopy(t *testing.T) {
	a, r := newStore(t, Options{})
	b := New(r.Client, Options{Prefix: r.Prefix})
	ctx := context.Background()
	job := newJob(t, a, "o", connector.StatusQueued)
	errNotQueued := errors.New("not queued")
	if _, err := a.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Runs = 1; return nil }); err != nil {
		t.Fatal(err)
	}
	// b starts the job; a's copy still says queued.
	if _, err := b.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusProcessing; return nil }); err != nil {
		t.Fatal(err)
	}
	_, err := a.Jobs.Update(ctx, job.ID, func(j *connector.Job) error {
		if j.Status != connector.StatusQueued {
			return errNotQueued
		}
		j.Status = connector.StatusFailed
		return nil
	})
	if !errors.Is(err, errNotQueued) {
		t.Fatalf("Update on a job another store started = %v, want the refusal", err)
	}
	// And a refusal that an old copy would not make is not made either:
	// the caller's decision follows the current record.
	if _, err := b.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusQueued; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Jobs.Update(ctx, job.ID, func(j *connector.Job) error {
		if j.Status != connector.StatusQueued {
			return errNotQueued
		}
		j.Status = connector.StatusProcessing
		return nil
	}); err != nil {
		t.Fatalf("Update on a queued job = %v, want it started", err)
	}
}

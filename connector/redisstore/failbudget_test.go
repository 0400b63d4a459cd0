package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/imgflow/imgflow/connector"
)

// makeJob makes a queued job of owner through the making round trip
// (admission, cap 50), or returns its refusal.
func makeJob(s *Store, owner string) (*connector.Job, error) {
	job := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Status: connector.StatusQueued,
		Input: connector.JobInput{Kind: connector.InputURL, URL: "https://example.com/a.png"}, Owner: owner}
	return job, s.Jobs.CreateWithInput(context.Background(), job, nil, 0, 50)
}

// finishJob ends job as finish makes it.
func finishJob(t *testing.T, s *Store, job *connector.Job, finish func(*connector.Job)) {
	t.Helper()
	if _, err := s.Jobs.Update(context.Background(), job.ID, func(j *connector.Job) error { finish(j); return nil }); err != nil {
		t.Fatal(err)
	}
}

func failFetch(j *connector.Job) {
	j.Status = connector.StatusFailed
	j.Error = &connector.JobError{Code: connector.EFETCH, Message: "404"}
}

func failUpstream(j *connector.Job) {
	j.Status = connector.StatusFailed
	j.Error = &connector.JobError{Code: connector.EUPSTREAM, Message: "502", Retryable: true}
}

func completePaid(j *connector.Job) {
	j.Status = connector.StatusCompleted
	j.Result = &connector.JobResult{CompressedSize: 1}
}

// A key's free failures: a burst of the budget, then a new job is refused
// with EFAILBUDGET and a Retry-After of one interval; time gives one back;
// a paid job gives one back; failures of the system do not count, nor
// does another key share the budget; a batch is refused as a job is.
func TestFreeFailuresPastTheBudgetRefuseNewJobs(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	s, _ := newStore(t, Options{FreeFailuresPerHour: 4, Now: func() time.Time { return now }})
	for i := range 4 {
		job, err := makeJob(s, "owner")
		if err != nil {
			t.Fatalf("job %d within the budget: %v", i, err)
		}
		finishJob(t, s, job, failFetch)
	}
	_, err := makeJob(s, "owner")
	var e *connector.Error
	if connector.ErrorCodeOf(err) != connector.EFAILBUDGET || !errors.As(err, &e) || e.RetryAfter != 15*time.Minute {
		t.Fatalf("past 4 free failures: expected too_many_failures with Retry-After 15m, got %v", err)
	}
	if err := s.Jobs.AdmitAll(context.Background(), "owner", []string{"b1", "b2"}, 50); connector.ErrorCodeOf(err) != connector.EFAILBUDGET {
		t.Fatalf("a batch past the budget: expected too_many_failures, got %v", err)
	}
	if err := s.Jobs.Admit(context.Background(), "owner", "a1", 50); connector.ErrorCodeOf(err) != connector.EFAILBUDGET {
		t.Fatalf("an admission past the budget: expected too_many_failures, got %v", err)
	}
	if _, err := makeJob(s, "another owner"); err != nil {
		t.Fatalf("another key: expected its own budget, got %v", err)
	}

	now = now.Add(15 * time.Minute)
	job, err := makeJob(s, "owner")
	if err != nil {
		t.Fatalf("one interval on: expected one job, got %v", err)
	}
	finishJob(t, s, job, failUpstream) // the system's failure: not counted
	job, err = makeJob(s, "owner")
	if err != nil {
		t.Fatalf("after an upstream failure: expected it not counted, got %v", err)
	}
	finishJob(t, s, job, completePaid) // a paid job earns one back
	for i := range 2 {
		job, err := makeJob(s, "owner")
		if err != nil {
			t.Fatalf("after a paid job, job %d: %v", i, err)
		}
		if i == 0 {
			finishJob(t, s, job, failFetch)
		}
	}
}

// A key with no failures gets no budget member from its paid jobs, and the
// budget's member never takes one of the key's places.
func TestPaidJobsOfAKeyWithoutFailuresLeaveNoBudget(t *testing.T) {
	s, r := newStore(t, Options{FreeFailuresPerHour: 4})
	job, err := makeJob(s, "owner")
	if err != nil {
		t.Fatal(err)
	}
	finishJob(t, s, job, completePaid)
	if n, err := r.Client.ZCard(context.Background(), s.conn.keys.inflight("owner")).Result(); err != nil || n != 0 {
		t.Fatalf("in-flight set after a paid job: expected empty, got %d, %v", n, err)
	}
	job, _ = makeJob(s, "owner")
	finishJob(t, s, job, failFetch)
	for i := range 50 {
		if _, err := makeJob(s, "owner"); err != nil {
			t.Fatalf("job %d of a cap of 50 with one failure counted: %v", i, err)
		}
	}
	if _, err := makeJob(s, "owner"); connector.ErrorCodeOf(err) != connector.ETOOMANY {
		t.Fatalf("job 51: expected too_many_jobs, got %v", err)
	}
}

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// newStore returns a Store on the test's Redis and that Redis.
func newStore(t testing.TB, opts Options) (*Store, *redistest.Redis) {
	t.Helper()
	r := redistest.New(t)
	opts.Prefix = r.Prefix
	return New(r.Client, opts), r
}

// newJob creates a queued job of owner with a fresh UUIDv7 id.
func newJob(t testing.TB, s *Store, owner string, status connector.JobStatus) *connector.Job {
	t.Helper()
	job := &connector.Job{
		ID:     uuid.Must(uuid.NewV7()).String(),
		Status: status,
		Input:  connector.JobInput{Kind: connector.InputURL, URL: "https://example.com/a.png"},
		Owner:  owner,
	}
	if err := s.Jobs.Create(context.Background(), job); err != nil {
		t.Fatalf("Create: %v", err)
	}
	return job
}

// idAt is a UUIDv7-shaped id for time t, n telling apart ids of one instant.
func idAt(t time.Time, n int) string {
	ms := t.UnixMilli()
	return fmt.Sprintf("%08x-%04x-7000-8000-%012x", ms>>16, ms&0xffff, n)
}

func wantCode(t *testing.T, err error, want connector.ErrorCode) {
	t.Helper()
	if got := connector.ErrorCodeOf(err); got != want {
		t.Fatalf("error code = %q (err %v), want %q", got, err, want)
	}
}

func TestPingAnswersWhenRedisIsUp(t *testing.T) {
	s, _ := newStore(t, Options{})
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping = %v, want nil", err)
	}
}

func TestNewFillsDefaults(t *testing.T) {
	s := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}), Options{})
	if s.conn.keys.prefix != "imgflow:" || s.conn.jobTTL != 7*24*time.Hour || s.conn.now == nil {
		t.Fatalf("defaults = prefix %q, JobTTL %v, Now set %v; want \"imgflow:\", 168h, true", s.conn.keys.prefix, s.conn.jobTTL, s.conn.now != nil)
	}
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// Every operation against a Redis that does not answer is EUNAVAILABLE with
// the Retry-After hint, so the server answers 503 rather than 500.
func TestRedisDownIsUnavailable(t *testing.T) {
	redis.SetLogger(quietLogger{}) // go-redis logs every failed dial
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
	t.Cleanup(func() { rdb.Close() })
	s := New(rdb, Options{Prefix: "down:"})
	job := &connector.Job{ID: uuid.Must(uuid.NewV7()).String(), Owner: "o"}
	noop := func(*connector.Job) error { return nil }
	calls := map[string]func(ctx context.Context) error{
		"Ping":        s.Ping,
		"Jobs.Create": func(ctx context.Context) error { return s.Jobs.Create(ctx, job) },
		"Jobs.Get":    func(ctx context.Context) error { _, err := s.Jobs.Get(ctx, job.ID); return err },
		"Jobs.Update": func(ctx context.Context) error { _, err := s.Jobs.Update(ctx, job.ID, noop); return err },
		"Jobs.List": func(ctx context.Context) error {
			_, err := s.Jobs.List(ctx, "o", connector.JobFilter{})
			return err
		},
		"Jobs.Wait": func(ctx context.Context) error { _, err := s.Jobs.Wait(ctx, job.ID); return err },
		"Blobs.Put": func(ctx context.Context) error {
			return s.Blobs.Put(ctx, "k", strings.NewReader("x"), 1, time.Minute)
		},
		"Blobs.Open":   func(ctx context.Context) error { _, err := connector.ReadBlob(ctx, s.Blobs, "k"); return err },
		"Blobs.Delete": func(ctx context.Context) error { return s.Blobs.Delete(ctx, "k") },
		"Reserve": func(ctx context.Context) error {
			_, _, err := s.Idempotency.Reserve(ctx, "o", "k", "f", "j")
			return err
		},
		"Complete": func(ctx context.Context) error {
			_, err := s.Idempotency.Complete(ctx, "o", "k", "j", "j")
			return err
		},
		"Release": func(ctx context.Context) error { return s.Idempotency.Release(ctx, "o", "k", "j") },
		"Renew": func(ctx context.Context) error {
			_, err := s.Idempotency.Renew(ctx, "o", "k", "j")
			return err
		},
		"Accounts.Cached": func(ctx context.Context) error { _, _, err := s.Accounts.Cached(ctx, "o"); return err },
		"Accounts.Cache": func(ctx context.Context) error {
			return s.Accounts.Cache(ctx, "o", &connector.Account{Valid: true}, time.Minute)
		},
		"ConfirmKey":     func(ctx context.Context) error { return s.Accounts.ConfirmKey(ctx, "o", time.Now(), time.Hour) },
		"KeyConfirmedAt": func(ctx context.Context) error { _, _, err := s.Accounts.KeyConfirmedAt(ctx, "o"); return err },
		"Hooks.Create":   func(ctx context.Context) error { return s.Hooks.Create(ctx, &connector.Hook{ID: "h", Owner: "o"}) },
		"Hooks.Get":      func(ctx context.Context) error { _, err := s.Hooks.Get(ctx, "h"); return err },
		"Hooks.List":     func(ctx context.Context) error { _, err := s.Hooks.List(ctx, "o"); return err },
		"Hooks.Delete":   func(ctx context.Context) error { return s.Hooks.Delete(ctx, "o", "h") },
		"Hooks.Disable":  func(ctx context.Context) error { return s.Hooks.Disable(ctx, "h") },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := call(ctx)
			var e *connector.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *connector.Error", err, err)
			}
			if e.Code != connector.EUNAVAILABLE || e.Message != "storage unavailable" || e.RetryAfter != 5*time.Second || e.Err == nil {
				t.Fatalf("err = {Code %q, Message %q, RetryAfter %v, Err %v}, want {unavailable, storage unavailable, 5s, the cause}",
					e.Code, e.Message, e.RetryAfter, e.Err)
			}
		})
	}
}

// The default store batches its small commands through the client's
// autopipeliner; Unbatched keeps the client as given, and both run a job's
// writes the same.
func TestUnbatchedAndBatchedStoresRunTheSameJob(t *testing.T) {
	for _, unbatched := range []bool{false, true} {
		s, r := newStore(t, Options{Unbatched: unbatched})
		if _, ap := s.conn.rdb.(*redis.AutoPipeliner); ap == unbatched || s.conn.bulk != redis.UniversalClient(r.Client) {
			t.Fatalf("unbatched %v: small commands on %T, bulk on %T", unbatched, s.conn.rdb, s.conn.bulk)
		}
		ctx := context.Background()
		job := newJob(t, s, "owner", connector.StatusQueued)
		done, err := s.Jobs.Update(ctx, job.ID, func(j *connector.Job) error { j.Status = connector.StatusCompleted; return nil })
		if err != nil || done.Status != connector.StatusCompleted {
			t.Fatalf("unbatched %v: Update = %v, %v", unbatched, done, err)
		}
		if got, err := s.Jobs.Get(ctx, job.ID); err != nil || got.Status != connector.StatusCompleted {
			t.Fatalf("unbatched %v: Get = %v, %v", unbatched, got, err)
		}
	}
}

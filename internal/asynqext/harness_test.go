package asynqext_test

import (
	"cmp"
	"context"
	"errors"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hibiken/asynq"
	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/internal/asynqext"
	"github.com/imgflow/imgflow/internal/redistest"
)

// pinned stops the test unless the asynq linked is the one whose layout
// this package was verified against: on another version, a passing
// contract proves little and a failing one says too little.
func pinned(t *testing.T) {
	t.Helper()
	if v := linkedAsynq(t); v != asynqext.VerifiedVersion {
		t.Fatalf("asynq is %s, these layout contracts were verified against %s: re-verify (see internal/asynqext's package comment) and bump the pin (asynqext.VerifiedVersion)", v, asynqext.VerifiedVersion)
	}
}

const asynqModule = "github.com/hibiken/asynq"

// linkedAsynq is the version of asynq this test links: from the binary's
// build information when it lists its modules, else (go test's binaries
// list none) from the go command, which resolves the same build list,
// replacements included.
func linkedAsynq(t *testing.T) string {
	t.Helper()
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == asynqModule {
				if m.Replace != nil {
					m = m.Replace
				}
				return cmp.Or(m.Version, m.Path)
			}
		}
	}
	out, err := exec.Command("go", "list", "-m", "-f", "{{with .Replace}}{{or .Version .Path}}{{else}}{{.Version}}{{end}}", asynqModule).Output()
	if err != nil {
		t.Fatalf("the asynq version linked cannot be read (go list -m %s: %v); these layout contracts were verified against %s", asynqModule, err, asynqext.VerifiedVersion)
	}
	return strings.TrimSpace(string(out))
}

// contract is one contract test's Redis, queue, and asynq's client and
// inspector on them.
type contract struct {
	t         *testing.T
	ctx       context.Context
	redis     *redistest.Redis
	q         asynqext.Queue
	client    *asynq.Client
	inspector *asynq.Inspector
}

func newContract(t *testing.T) *contract {
	t.Helper()
	pinned(t)
	r := redistest.New(t)
	c := &contract{
		t:         t,
		ctx:       context.Background(),
		redis:     r,
		q:         asynqext.QueueOf(r.Queue()),
		client:    asynq.NewClientFromRedisClient(r.Client),
		inspector: asynq.NewInspectorFromRedisClient(r.Client),
	}
	return c
}

// newClient is another connection to the test's Redis, for a server.
func (c *contract) newClient() *redis.Client {
	c.t.Helper()
	opts, err := redis.ParseURL(c.redis.URL)
	if err != nil {
		c.t.Fatal(err)
	}
	opts.Protocol = 2 // as imgflow's clients
	rdb := redis.NewClient(opts)
	c.t.Cleanup(func() { rdb.Close() })
	return rdb
}

// enqueue puts a task with id on the queue, with opts.
func (c *contract) enqueue(id string, opts ...asynq.Option) {
	c.t.Helper()
	opts = append([]asynq.Option{asynq.TaskID(id), asynq.Queue(c.q.Name())}, opts...)
	if _, err := c.client.EnqueueContext(c.ctx, asynq.NewTask("contract", nil), opts...); err != nil {
		c.t.Fatalf("enqueue %s: %v", id, err)
	}
}

// state reads task id's state as asynqext reads it.
func (c *contract) state(id string) asynqext.TaskState {
	c.t.Helper()
	states, err := c.q.TaskStates(c.ctx, c.redis.Client, []string{id})
	if err != nil {
		c.t.Fatalf("TaskStates(%s): %v", id, err)
	}
	return states[0]
}

// serve starts an asynq server on the queue, on a client of its own that
// carries hook (nil: none), until the test ends.
func (c *contract) serve(hook redis.Hook, handle asynq.HandlerFunc) {
	c.t.Helper()
	rdb := c.newClient()
	if hook != nil {
		rdb.AddHook(hook)
	}
	srv := asynq.NewServerFromRedisClient(rdb, asynq.Config{
		Concurrency:              1,
		Queues:                   map[string]int{c.q.Name(): 1},
		TaskCheckInterval:        50 * time.Millisecond,
		DelayedTaskCheckInterval: 100 * time.Millisecond,
		RetryDelayFunc:           func(int, error, *asynq.Task) time.Duration { return time.Second },
		ShutdownTimeout:          time.Second,
		Logger:                   quiet{},
		LogLevel:                 asynq.FatalLevel,
	})
	if err := srv.Start(handle); err != nil {
		c.t.Fatalf("starting an asynq server: %v", err)
	}
	c.t.Cleanup(srv.Shutdown)
}

// waitFor waits up to 10 s for cond, failing the test with what otherwise.
func (c *contract) waitFor(what string, cond func() bool) {
	c.t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			c.t.Fatalf("waited 30 s for %s", what)
		}
	}
}

// quiet is an asynq logger that says nothing: a server cut off from Redis
// complains on every tick.
type quiet struct{}

func (quiet) Debug(...any) {}
func (quiet) Info(...any)  {}
func (quiet) Warn(...any)  {}
func (quiet) Error(...any) {}
func (quiet) Fatal(...any) {}

// sent is one script a client sent, as asynqext tells it, and its answer.
type sent struct {
	script asynqext.Script
	err    error
	cmd    *redis.Cmd // its answer (nil if not a *redis.Cmd)
}

// scripts is a go-redis hook that records the scripts a client sends
// (EVAL and EVALSHA) as asynqext tells them apart. With cutAfterDequeue,
// it cuts the client off from Redis once a dequeue has returned a task:
// every later command fails, as for a worker killed or partitioned
// mid-task (its lease is never extended, nothing it writes arrives).
type scripts struct {
	q               asynqext.Queue
	cutAfterDequeue bool
	cut             atomic.Bool
	mu              sync.Mutex
	seen            []sent
}

var errCutOff = errors.New("cut off from Redis (test)")

func (s *scripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (s *scripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if s.cut.Load() {
			cmd.SetErr(errCutOff)
			return errCutOff
		}
		err := next(ctx, cmd)
		if name := cmd.Name(); name != "eval" && name != "evalsha" {
			return err
		}
		script := s.q.ScriptOf(cmd)
		c, _ := cmd.(*redis.Cmd)
		s.mu.Lock()
		s.seen = append(s.seen, sent{script: script, err: err, cmd: c})
		s.mu.Unlock()
		if s.cutAfterDequeue && script == asynqext.Dequeue && err == nil {
			s.cut.Store(true)
		}
		return err
	}
}

func (s *scripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if s.cut.Load() {
			for _, cmd := range cmds {
				cmd.SetErr(errCutOff)
			}
			return errCutOff
		}
		return next(ctx, cmds)
	}
}

// any reports whether a script sent so far matches.
func (s *scripts) any(match func(sent) bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.seen, match)
}

// since returns the scripts sent after the first n, and how many there are.
func (s *scripts) since(n int) ([]sent, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seen[n:]), len(s.seen)
}

// redisNow is Redis's clock in Unix seconds, the clock of asynq's leases
// as RequeueAbandoned reads them.
func (c *contract) redisNow() int64 {
	c.t.Helper()
	now, err := c.redis.Client.Time(c.ctx).Result()
	if err != nil {
		c.t.Fatal(err)
	}
	return now.Unix()
}

package redisstore

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/imgflow/imgflow/connector"
)

func TestDedupeClaimsOneJobPerImageAndKey(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	k := connector.DedupeKey{Owner: "owner-a", SHA256: "ab12", Options: "v1"}

	source, holder, err := s.Dedupe.Enter(ctx, k, "job-1", time.Minute)
	if err != nil || source != "" || holder != "job-1" {
		t.Fatalf("first Enter = (%q, %q, %v), want job-1 to hold the claim", source, holder, err)
	}
	if source, holder, _ = s.Dedupe.Enter(ctx, k, "job-2", time.Minute); source != "" || holder != "job-1" {
		t.Fatalf("second job's Enter = (%q, %q), want job-1 named as the holder", source, holder)
	}
	if _, holder, _ = s.Dedupe.Enter(ctx, k, "job-1", time.Minute); holder != "job-1" {
		t.Fatalf("the holder's re-run got holder %q, want its own claim renewed", holder)
	}
	// Another key, or other options, is another image.
	for _, other := range []connector.DedupeKey{{Owner: "owner-b", SHA256: "ab12", Options: "v1"}, {Owner: "owner-a", SHA256: "ab12", Options: "v2"}} {
		if _, holder, _ := s.Dedupe.Enter(ctx, other, "job-9", time.Minute); holder != "job-9" {
			t.Errorf("%+v: holder %q, want job-9 to claim it (nothing shared)", other, holder)
		}
	}
	// Another job's release leaves the claim; the holder's finish records it.
	s.Dedupe.Release(ctx, k, "job-2")
	if _, holder, _ = s.Dedupe.Enter(ctx, k, "job-3", time.Minute); holder != "job-1" {
		t.Fatalf("after job-2's release the holder is %q, want job-1", holder)
	}
	if err := s.Dedupe.Finish(ctx, k, "job-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if source, holder, _ = s.Dedupe.Enter(ctx, k, "job-3", time.Minute); source != "job-1" || holder != "" {
		t.Fatalf("after the finish: (%q, %q), want job-1 as the source", source, holder)
	}
	if got, _ := s.Dedupe.Source(ctx, k); got != "job-1" {
		t.Fatalf("Source = %q, want job-1", got)
	}
	// Forgetting names the entry it forgets.
	s.Dedupe.Forget(ctx, k, "job-7")
	if got, _ := s.Dedupe.Source(ctx, k); got != "job-1" {
		t.Fatalf("Forget of another job dropped the entry (%q)", got)
	}
	s.Dedupe.Forget(ctx, k, "job-1")
	if got, _ := s.Dedupe.Source(ctx, k); got != "" {
		t.Fatalf("after Forget: %q, want none", got)
	}
}

// commandLog records the names of the commands a client sends (a
// pipeline's one by one); after, when set, runs once a pipeline is answered.
type commandLog struct {
	mu    sync.Mutex
	names []string
	after func()
}

func (l *commandLog) DialHook(next redis.DialHook) redis.DialHook { return next }
func (l *commandLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		l.add(cmd)
		return next(ctx, cmd)
	}
}
func (l *commandLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			l.add(cmd)
		}
		err := next(ctx, cmds)
		if handshake(cmds[0]) {
			return err
		}
		l.mu.Lock()
		after := l.after
		l.after = nil
		l.mu.Unlock()
		if after != nil {
			after()
		}
		return err
	}
}
func (l *commandLog) add(cmd redis.Cmder) {
	if handshake(cmd) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names = append(l.names, cmd.Name())
}

// handshake tells the commands a new connection sends first.
func handshake(cmd redis.Cmder) bool {
	switch cmd.Name() {
	case "hello", "client", "auth", "select":
		return true
	}
	return false
}

// take returns the names logged since the last take.
func (l *commandLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := strings.Join(l.names, " ")
	l.names = nil
	return names
}

// A new image costs its job three plain commands (claim and look-up in one
// round trip, then the record), a repeat two and its record, and no
// script: the claim a completed job held is left to expire. The claim is
// written before the source is read (Enter says why).
func TestDedupeCostsANewImageThreeCommands(t *testing.T) {
	s, r := newStore(t, Options{Unbatched: true})
	log := &commandLog{}
	r.Client.AddHook(log)
	ctx := context.Background()
	k := connector.DedupeKey{Owner: "owner-a", SHA256: "ab12", Options: "v1"}

	if source, holder, err := s.Dedupe.Enter(ctx, k, "job-1", time.Minute); err != nil || source != "" || holder != "job-1" {
		t.Fatalf("Enter = (%q, %q, %v), want job-1 to hold the claim", source, holder, err)
	}
	if err := s.Dedupe.Finish(ctx, k, "job-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := log.take(); got != "set get set" {
		t.Errorf("a new image's commands: %q, want %q", got, "set get set")
	}
	if source, holder, err := s.Dedupe.Enter(ctx, k, "job-2", time.Minute); err != nil || source != "job-1" || holder != "" {
		t.Fatalf("repeat's Enter = (%q, %q, %v), want job-1 as the source", source, holder, err)
	}
	if err := s.Dedupe.Finish(ctx, k, "job-2", time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := log.take(); got != "set get set" {
		t.Errorf("a repeat's commands: %q, want %q", got, "set get set")
	}
	if source, _, _ := s.Dedupe.Enter(ctx, k, "job-3", time.Minute); source != "job-2" {
		t.Errorf("after the repeat's finish the source is %q, want job-2 (its result lives longer)", source)
	}
}

// Old workers run the one-step scripts below beside new ones, on the same
// keys: whichever version claims, finishes or looks up, an image is
// compressed once and a finished one is found.
const (
	oldEnter = `
local src = redis.call('GET', KEYS[1])
if src then return {src, ''} end
local cur = redis.call('GET', KEYS[2])
if cur and cur ~= ARGV[1] then return {'', cur} end
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2])
return {'', ARGV[1]}
`
	oldFinish = `
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
`
)

func TestDedupeOldAndNewWorkersShareTheIndex(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	keys := func(k connector.DedupeKey) []string {
		return []string{s.conn.keys.dedupe(k), s.conn.keys.dedupeClaim(k)}
	}
	oldEnterAs := func(k connector.DedupeKey, job string) []string {
		t.Helper()
		res, err := r.Client.Eval(ctx, oldEnter, keys(k), job, 60000).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	// An old worker's claim holds against a new worker, and its finish
	// (which drops its claim) leaves the source to find.
	k := connector.DedupeKey{Owner: "o", SHA256: "old-claims", Options: "v1"}
	oldEnterAs(k, "old-1")
	if source, holder, _ := s.Dedupe.Enter(ctx, k, "new-1", time.Minute); source != "" || holder != "old-1" {
		t.Fatalf("new Enter beside an old claim = (%q, %q), want old-1 named as the holder", source, holder)
	}
	r.Client.Eval(ctx, oldFinish, keys(k), "old-1", 3600000)
	if source, holder, _ := s.Dedupe.Enter(ctx, k, "new-1", time.Minute); source != "old-1" || holder != "" {
		t.Fatalf("new Enter after the old finish = (%q, %q), want old-1 as the source", source, holder)
	}

	// A new worker's claim holds against an old worker; its finish leaves
	// the claim, which the old look-up reads after the source.
	k = connector.DedupeKey{Owner: "o", SHA256: "new-claims", Options: "v1"}
	s.Dedupe.Enter(ctx, k, "new-2", time.Minute)
	if res := oldEnterAs(k, "old-2"); res[0] != "" || res[1] != "new-2" {
		t.Fatalf("old Enter beside a new claim = %q, want new-2 named as the holder", res)
	}
	s.Dedupe.Finish(ctx, k, "new-2", time.Hour)
	if res := oldEnterAs(k, "old-2"); res[0] != "new-2" {
		t.Fatalf("old Enter after the new finish = %q, want new-2 as the source", res)
	}
	if got, _ := s.Dedupe.Source(ctx, k); got != "new-2" {
		t.Fatalf("Source = %q, want new-2", got)
	}
}

// Enter writes the claim before it reads the source, so a holder that
// finishes between its reads is found: an old worker's finish drops its
// claim in the step that records the source, a failure drops it alone.
func TestDedupeEnterFindsAHolderThatFinishesBetweenItsReads(t *testing.T) {
	s, r := newStore(t, Options{Unbatched: true})
	log := &commandLog{}
	r.Client.AddHook(log)
	ctx := context.Background()
	for _, tc := range []struct {
		name                   string
		finish                 func(k connector.DedupeKey)
		wantSource, wantHolder string
	}{
		{"completed on an old worker", func(k connector.DedupeKey) {
			r.Client.Eval(ctx, oldFinish, []string{s.conn.keys.dedupe(k), s.conn.keys.dedupeClaim(k)}, "job-1", 3600000)
		}, "job-1", ""},
		{"failed", func(k connector.DedupeKey) { s.Dedupe.Release(ctx, k, "job-1") }, "", "job-2"},
	} {
		k := connector.DedupeKey{Owner: "o", SHA256: tc.name, Options: "v1"}
		s.Dedupe.Enter(ctx, k, "job-1", time.Minute)
		log.mu.Lock()
		log.after = func() { tc.finish(k) }
		log.mu.Unlock()
		source, holder, err := s.Dedupe.Enter(ctx, k, "job-2", time.Minute)
		if err != nil || source != tc.wantSource || holder != tc.wantHolder {
			t.Errorf("%s: Enter = (%q, %q, %v), want (%q, %q)", tc.name, source, holder, err, tc.wantSource, tc.wantHolder)
		}
	}
}

// A re-run of the claimant (its worker died mid-call) renews its claim for
// a whole lease.
func TestDedupeReRunRenewsItsClaim(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	k := connector.DedupeKey{Owner: "o", SHA256: "ab12", Options: "v1"}
	s.Dedupe.Enter(ctx, k, "job-1", 2*time.Second)
	source, holder, err := s.Dedupe.Enter(ctx, k, "job-1", time.Hour)
	if err != nil || source != "" || holder != "job-1" {
		t.Fatalf("re-run's Enter = (%q, %q, %v), want job-1 to hold the claim", source, holder, err)
	}
	if ttl := r.Client.PTTL(ctx, s.conn.keys.dedupeClaim(k)).Val(); ttl < 59*time.Minute {
		t.Errorf("the re-run's claim lives %v more, want the hour's lease", ttl)
	}
}

// A job that cannot serve (its file gone, or it failed) loses its entry
// and its claim: a completed job's claim is left beside its entry, and
// must not keep naming it once the entry is gone.
func TestDedupeForgetDropsTheEntryAndTheClaimOfTheJob(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	k := connector.DedupeKey{Owner: "o", SHA256: "ab12", Options: "v1"}
	s.Dedupe.Enter(ctx, k, "job-1", time.Minute)
	s.Dedupe.Finish(ctx, k, "job-1", time.Hour)
	if err := s.Dedupe.Forget(ctx, k, "job-1"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Dedupe.Source(ctx, k); got != "" {
		t.Fatalf("Source after Forget = %q, want none", got)
	}
	if source, holder, _ := s.Dedupe.Enter(ctx, k, "job-2", time.Minute); source != "" || holder != "job-2" {
		t.Fatalf("Enter after Forget = (%q, %q), want job-2 to claim the image at once", source, holder)
	}
	s.Dedupe.Forget(ctx, k, "job-1")
	if _, holder, _ := s.Dedupe.Enter(ctx, k, "job-3", time.Minute); holder != "job-2" {
		t.Fatalf("Forget of job-1 dropped job-2's claim (holder %q)", holder)
	}
}

func TestCopyBlobCopiesInsideRedis(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	data := bytes.Repeat([]byte("imgflow "), 300_000) // 2.4 MB: a blob of several chunks
	if err := s.Blobs.Put(ctx, connector.OutputBlobKey("a"), bytes.NewReader(data), int64(len(data)), time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := connector.CopyBlob(ctx, s.Blobs, connector.OutputBlobKey("a"), connector.OutputBlobKey("b"), time.Hour); err != nil {
		t.Fatal(err)
	}
	got, err := connector.ReadBlob(ctx, s.Blobs, connector.OutputBlobKey("b"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the copy has %d bytes (%v), want the %d of the original", len(got), err, len(data))
	}
	err = connector.CopyBlob(ctx, s.Blobs, connector.OutputBlobKey("gone"), connector.OutputBlobKey("c"), time.Hour)
	if connector.ErrorCodeOf(err) != connector.ENOTFOUND {
		t.Fatalf("copying a missing blob: %v, want ENOTFOUND", err)
	}
}

package redisstore

import (
	"bytes"
	"context"
	"testing"
	"time"

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

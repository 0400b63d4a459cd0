package redisstore

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/internal/blobtest"
)

func TestBlobExpiresAfterItsTTL(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	ttl := time.Minute
	if r.Mini == nil {
		ttl = 1100 * time.Millisecond // real Redis: wait it out
	}
	if err := s.Blobs.Put(ctx, "out:j1", strings.NewReader("x"), 1, ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := connector.ReadBlob(ctx, s.Blobs, "out:j1"); err != nil {
		t.Fatalf("GetBlob before expiry: %v", err)
	}
	if r.Mini != nil {
		r.Mini.FastForward(ttl + time.Second)
	} else {
		time.Sleep(ttl + 400*time.Millisecond)
	}
	_, err := connector.ReadBlob(ctx, s.Blobs, "out:j1")
	wantCode(t, err, connector.ENOTFOUND)
}

func TestBlobStoreContract(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) connector.BlobStore {
		s, r := newStore(t, Options{})
		t.Cleanup(func() {
			// Nothing but finished blobs is left: no parts of failed writes.
			keys := r.Client.Keys(context.Background(), r.Prefix+"*:part:*").Val()
			if len(keys) > 0 {
				t.Errorf("parts left behind: %v", keys)
			}
		})
		return s.Blobs
	})
}

func TestBlobExpiredWhileReadIsNotFound(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	data := bytes.Repeat([]byte("x"), 3*blobChunk)
	if err := s.Blobs.Put(ctx, "out:j", bytes.NewReader(data), int64(len(data)), time.Hour); err != nil {
		t.Fatal(err)
	}
	b, err := s.Blobs.Open(ctx, "out:j")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r.Client.Del(ctx, s.conn.keys.blob("out:j"))
	n, err := io.Copy(io.Discard, b)
	if connector.ErrorCodeOf(err) != connector.ENOTFOUND || n != blobChunk {
		t.Fatalf("reading a blob deleted after its first chunk: %d bytes, %v; want %d bytes then ENOTFOUND", n, err, blobChunk)
	}
}

package redisstore

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/imgflow/imgflow/connector"
)

func TestBlobRoundTripsTenMiB(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	data := bytes.Repeat([]byte{0, 1, 2, 0xff}, connector.MaxImageSize/4)
	if err := s.PutBlob(ctx, "out:j1", data, time.Minute); err != nil {
		t.Fatalf("PutBlob: %v", err)
	}
	got, err := s.GetBlob(ctx, "out:j1")
	if err != nil {
		t.Fatalf("GetBlob: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("GetBlob returned %d bytes differing from the %d put", len(got), len(data))
	}
}

func TestDeletedOrUnknownBlobIsNotFound(t *testing.T) {
	s, _ := newStore(t, Options{})
	ctx := context.Background()
	if err := s.PutBlob(ctx, "in:j1", []byte("x"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteBlob(ctx, "in:j1"); err != nil {
		t.Fatalf("DeleteBlob: %v", err)
	}
	_, err := s.GetBlob(ctx, "in:j1")
	wantCode(t, err, connector.ENOTFOUND)
	if err := s.DeleteBlob(ctx, "in:j1"); err != nil {
		t.Fatalf("DeleteBlob of a missing blob = %v, want nil", err)
	}
}

func TestBlobExpiresAfterItsTTL(t *testing.T) {
	s, r := newStore(t, Options{})
	ctx := context.Background()
	ttl := time.Minute
	if r.Mini == nil {
		ttl = 1100 * time.Millisecond // real Redis: wait it out
	}
	if err := s.PutBlob(ctx, "out:j1", []byte("x"), ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetBlob(ctx, "out:j1"); err != nil {
		t.Fatalf("GetBlob before expiry: %v", err)
	}
	if r.Mini != nil {
		r.Mini.FastForward(ttl + time.Second)
	} else {
		time.Sleep(ttl + 400*time.Millisecond)
	}
	_, err := s.GetBlob(ctx, "out:j1")
	wantCode(t, err, connector.ENOTFOUND)
}

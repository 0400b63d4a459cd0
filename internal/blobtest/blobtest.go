// Package blobtest holds the behaviour every connector.BlobStore must show,
// as one test suite that each implementation's tests run against a real
// engine (Redis, an S3-compatible server).
package blobtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"

	"github.com/imgflow/imgflow/connector"
)

// Run runs the suite; open returns a store for one subtest, empty of the
// keys the suite uses ("in:<name>", "out:<name>").
func Run(t *testing.T, open func(t *testing.T) connector.BlobStore) {
	sizes := []struct {
		name string
		size int
	}{
		{"empty", 0}, {"small", 1000}, {"1MiB", 1 << 20}, {"1MiB+1", 1<<20 + 1}, {"10MiB", connector.MaxImageSize},
	}
	for _, sz := range sizes {
		t.Run("RoundTrips"+sz.name, func(t *testing.T) {
			bs := open(t)
			data := pattern(sz.size)
			// HalfReader: the store must not rely on full reads.
			put(t, bs, "out:rt", iotest.HalfReader(bytes.NewReader(data)), int64(len(data)))
			expectBlob(t, bs, "out:rt", data)
			// Unknown size gives the same.
			put(t, bs, "out:rt2", bytes.NewReader(data), -1)
			expectBlob(t, bs, "out:rt2", data)
		})
	}
	t.Run("ReplacesAnEarlierBlob", func(t *testing.T) {
		bs := open(t)
		put(t, bs, "out:r", bytes.NewReader(pattern(3<<20)), 3<<20)
		put(t, bs, "out:r", bytes.NewReader([]byte("short")), 5)
		expectBlob(t, bs, "out:r", []byte("short"))
	})
	t.Run("UnknownOrDeletedIsNotFound", func(t *testing.T) {
		bs, ctx := open(t), context.Background()
		if _, err := bs.Open(ctx, "in:never"); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
			t.Fatalf("Open of an unknown key = %v, want ENOTFOUND", err)
		}
		put(t, bs, "in:d", bytes.NewReader([]byte("x")), 1)
		if err := bs.Delete(ctx, "in:d"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if _, err := bs.Open(ctx, "in:d"); connector.ErrorCodeOf(err) != connector.ENOTFOUND {
			t.Fatalf("Open after Delete = %v, want ENOTFOUND", err)
		}
		if err := bs.Delete(ctx, "in:d"); err != nil {
			t.Fatalf("Delete of a missing blob = %v, want nil", err)
		}
	})
	t.Run("AFailedWriteStoresNothing", func(t *testing.T) {
		bs, ctx := open(t), context.Background()
		put(t, bs, "out:f", bytes.NewReader([]byte("kept")), 4)
		boom := errors.New("client went away")
		for name, r := range map[string]struct {
			r    io.Reader
			size int64
		}{
			"reader error after 2 MiB": {io.MultiReader(bytes.NewReader(pattern(2<<20)), iotest.ErrReader(boom)), 3 << 20},
			"fewer bytes than said":    {bytes.NewReader(pattern(1500)), 2000},
			"more bytes than said":     {bytes.NewReader(pattern(2<<20 + 7)), 2 << 20},
		} {
			err := bs.Put(ctx, "out:f", r.r, r.size, time.Minute)
			if err == nil {
				t.Errorf("%s: Put = nil, want an error", name)
			}
			if name == "reader error after 2 MiB" && !errors.Is(err, boom) {
				t.Errorf("%s: Put = %v, want the reader's own error", name, err)
			}
			expectBlob(t, bs, "out:f", []byte("kept"))
		}
	})
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>11)
	}
	return b
}

func put(t *testing.T, bs connector.BlobStore, key string, r io.Reader, size int64) {
	t.Helper()
	if err := bs.Put(context.Background(), key, r, size, time.Hour); err != nil {
		t.Fatalf("Put(%s, %d bytes): %v", key, size, err)
	}
}

func expectBlob(t *testing.T, bs connector.BlobStore, key string, want []byte) {
	t.Helper()
	b, err := bs.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open(%s): %v", key, err)
	}
	defer b.Close()
	if b.Size != int64(len(want)) {
		t.Errorf("Open(%s).Size = %d, want %d", key, b.Size, len(want))
	}
	got, err := io.ReadAll(iotest.OneByteReader(io.LimitReader(b, 1<<10)))
	if err == nil {
		var rest []byte
		rest, err = io.ReadAll(b)
		got = append(got, rest...)
	}
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s holds %d bytes that differ from the %d put", key, len(got), len(want))
	}
}

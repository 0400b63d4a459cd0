package redisstore

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/imgflow/imgflow/connector"
)

// go test -run '^$' -bench . -benchmem ./connector/redisstore/
// (set REDIS_URL for figures against a real server).

func BenchmarkCreateJobThenGetJob(b *testing.B) {
	s, _ := newStore(b, Options{})
	ctx := context.Background()
	tmpl := fullJob()
	b.ReportAllocs()
	for b.Loop() {
		job := *tmpl
		job.ID = uuid.Must(uuid.NewV7()).String()
		if err := s.CreateJob(ctx, &job); err != nil {
			b.Fatal(err)
		}
		if _, err := s.GetJob(ctx, job.ID); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkPutBlob10MiB(b *testing.B) {
	s, _ := newStore(b, Options{})
	ctx := context.Background()
	data := bytes.Repeat([]byte{1, 2, 3, 4}, connector.MaxImageSize/4)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if err := s.PutBlob(ctx, "bench", bytes.NewReader(data), int64(len(data)), time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadBlob10MiB(b *testing.B) {
	s, _ := newStore(b, Options{})
	ctx := context.Background()
	data := bytes.Repeat([]byte{1, 2, 3, 4}, connector.MaxImageSize/4)
	if err := s.PutBlob(ctx, "bench", bytes.NewReader(data), int64(len(data)), time.Minute); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := connector.ReadBlob(ctx, s, "bench")
		if err != nil || len(got) != len(data) {
			b.Fatalf("GetBlob: %d bytes, %v", len(got), err)
		}
	}
}

// BenchmarkOpenBlob10MiBStreamed reads a 10 MiB blob to a writer, as the
// file download does. B/op still totals the blob (each 1 MiB chunk is a
// fresh reply buffer) but only one chunk is live at a time, where
// BenchmarkReadBlob10MiB holds the whole blob.
func BenchmarkOpenBlob10MiBStreamed(b *testing.B) {
	s, _ := newStore(b, Options{})
	ctx := context.Background()
	data := bytes.Repeat([]byte{1, 2, 3, 4}, connector.MaxImageSize/4)
	if err := s.PutBlob(ctx, "bench", bytes.NewReader(data), int64(len(data)), time.Minute); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		blob, err := s.OpenBlob(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, blob); err != nil || n != int64(len(data)) {
			b.Fatalf("read %d bytes, %v", n, err)
		}
		blob.Close()
	}
}

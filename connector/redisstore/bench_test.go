package redisstore

import (
	"bytes"
	"context"
	"io"
	"strings"
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
		if err := s.Jobs.Create(ctx, &job); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Jobs.Get(ctx, job.ID); err != nil {
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
		if err := s.Blobs.Put(ctx, "bench", bytes.NewReader(data), int64(len(data)), time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadBlob10MiB(b *testing.B) {
	s, _ := newStore(b, Options{})
	ctx := context.Background()
	data := bytes.Repeat([]byte{1, 2, 3, 4}, connector.MaxImageSize/4)
	if err := s.Blobs.Put(ctx, "bench", bytes.NewReader(data), int64(len(data)), time.Minute); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		got, err := connector.ReadBlob(ctx, s.Blobs, "bench")
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
	if err := s.Blobs.Put(ctx, "bench", bytes.NewReader(data), int64(len(data)), time.Minute); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		blob, err := s.Blobs.Open(ctx, "bench")
		if err != nil {
			b.Fatal(err)
		}
		if n, err := io.Copy(io.Discard, blob); err != nil || n != int64(len(data)) {
			b.Fatalf("read %d bytes, %v", n, err)
		}
		blob.Close()
	}
}

// BenchmarkJobRecordCodec is a job record's encode and decode, done on every
// change of a job (a job's life has four or five).
func BenchmarkJobRecordCodec(b *testing.B) {
	now := time.Now().UTC()
	job := &connector.Job{ID: "01a20d65-3a68-7900-857a-d7ac6f445298", Owner: "c974142b442a7f2e36bf185640254211",
		SealedKey: []byte(strings.Repeat("k", 120)), CallbackURL: "https://hooks.example.com/catch/123/abc?x=1",
		Status: connector.StatusCompleted, CreatedAt: now, UpdatedAt: now, StartedAt: &now, FinishedAt: &now, Runs: 1,
		Input:  connector.JobInput{Kind: connector.InputBase64, Size: 7754, MIMEType: "image/png", Filename: "image.png"},
		Result: &connector.JobResult{OriginalSize: 7754, CompressedSize: 5120, CompressionRatio: 33.9, MIMEType: "image/png", Filename: "image.png", UpstreamJobID: "7d9f0a52-1111-4c3b-9a55-0c2a1e5e3c11"},
	}
	b.ReportAllocs()
	for b.Loop() {
		data, err := encodeJob(job)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := decodeJob(data); err != nil {
			b.Fatal(err)
		}
	}
}

package worker

import (
	"bytes"
	"context"
	"io"
	"sync/atomic"
	"testing"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/fixtures/images"
)

// breakingBlobs is a blob store whose first opened blob fails after
// `after` bytes, as Redis lost in the middle of a read would.
type breakingBlobs struct {
	connector.BlobStore
	after  int64
	broken atomic.Bool
}

func (b *breakingBlobs) Open(ctx context.Context, key string) (*connector.Blob, error) {
	blob, err := b.BlobStore.Open(ctx, key)
	if err != nil || !b.broken.CompareAndSwap(false, true) {
		return blob, err
	}
	cut := io.MultiReader(io.LimitReader(blob, b.after), iotestErr{
		&connector.Error{Code: connector.EUNAVAILABLE, Message: "storage unavailable", Retryable: true}})
	return &connector.Blob{ReadCloser: struct {
		io.Reader
		io.Closer
	}{cut, blob}, Size: blob.Size}, nil
}

type iotestErr struct{ err error }

func (r iotestErr) Read([]byte) (int, error) { return 0, r.err }

// An upload streams from the blob store while the call sends it. When the
// store fails mid-stream, the compression API got a cut-off body that it
// can neither compress nor charge: the job is retried, and not flagged as
// a possible second charge.
func TestStoredImageCutOffMidCallIsRetriedWithoutAnUncertainCharge(t *testing.T) {
	h := newHarness(t)
	h.cfg.Blobs = &breakingBlobs{BlobStore: h.store.Blobs, after: 64 << 10}
	h.cfg.Runs = h.store.Runs.WithBlobs(h.cfg.Blobs) // the blobs are elsewhere: the executor's store delegates to them
	h.start()
	data := images.Read(t, "photo.png")
	job := h.newJob(connector.JobInput{Kind: connector.InputUpload}, "")
	ctx := context.Background()
	if err := h.store.Blobs.Put(ctx, connector.InputBlobKey(job.ID), bytes.NewReader(data), int64(len(data)), 0); err != nil {
		t.Fatal(err)
	}
	h.enqueue(job.ID)

	got := h.waitJob(job.ID, "finished", finished)
	if got.Status != connector.StatusCompleted {
		t.Fatalf("status: expected completed on the retry, got %s (error %+v)", got.Status, got.Error)
	}
	if got.Runs != 2 || got.UpstreamCalls != 2 || got.ChargeUncertain {
		t.Errorf("expected 2 attempts, upstream_calls 2, charge certain (the cut-off call sent no whole image), got %d, %d, %v",
			got.Runs, got.UpstreamCalls, got.ChargeUncertain)
	}
	if out, err := connector.ReadBlob(ctx, h.store.Blobs, connector.OutputBlobKey(job.ID)); err != nil || !bytes.Equal(out, data) {
		t.Errorf("output blob: expected the %d bytes sent whole on the retry, got %d, err %v", len(data), len(out), err)
	}
}

package worker

import (
	"bytes"
	"context"
	"io"

	"github.com/imgflow/imgflow/connector"
	"github.com/imgflow/imgflow/connector/imaging"
)

// image is a job's input as the call sends it, read once front to back:
// from memory for a fetched URL, or streamed from the blob store for an
// upload or base64. Streaming matters: read into memory first, a 10 MiB
// upload would be held once more while the store's own reads of it are
// still on the heap.
type image struct {
	mimeType string // sniffed from the bytes; "" when none of the accepted formats
	size     int64
	sha256   string // hex SHA-256 of a fetched image, hashed as it came ("" for a stored one)
	body     io.Reader
	closer   io.Closer // the blob; nil for a fetched image
	// shape is what a transformed image is (transform.go); nil when the
	// input goes as it came. metadata is the EXIF block to write into the
	// compressed result (preserve).
	shape    *imaging.Info
	metadata []byte
	// fitted is how a job with a target made the image (fit.go); source
	// is the input's bytes, for a local fit when the answer is over;
	// candidate the fitted file sent, delivered instead of an answer that
	// scores under the target's min_score.
	fitted    *imaging.Fit
	source    []byte
	candidate []byte
	// readErr is the first error reading body. Compress reads the image in
	// a goroutine of its own but returns only after it stopped, so the
	// caller reads this after Compress without a race.
	readErr error
}

// fetchedImage is an image the fetcher holds in memory.
func fetchedImage(f *connector.Image) *image {
	return &image{mimeType: f.MIMEType, size: f.Data.Size(), sha256: f.SHA256, body: connector.BytesReader(f.Data)}
}

// openStoredImage opens a job's input blob (or takes opened, the blob as
// the job's read opened it) and sniffs its type from the first bytes; the
// rest streams from the store as the call reads it.
func openStoredImage(ctx context.Context, blobs connector.BlobStore, jobID string, opened *connector.Blob) (*image, error) {
	blob := opened
	if blob == nil {
		var err error
		if blob, err = blobs.Open(ctx, connector.InputBlobKey(jobID)); err != nil {
			return nil, storedImageError(err)
		}
	}
	head := make([]byte, min(blob.Size, connector.SniffLen))
	if _, err := io.ReadFull(blob, head); err != nil {
		blob.Close()
		return nil, storedImageError(err)
	}
	return &image{
		mimeType: connector.SniffInputType(head),
		size:     blob.Size,
		body:     io.MultiReader(bytes.NewReader(head), blob),
		closer:   blob,
	}, nil
}

// storedImageError explains a failure to read the input blob: gone means
// it expired (the job waited longer than the input TTL), and no retry will
// bring it back; anything else (Redis down) is the store's error, retried.
func storedImageError(err error) error {
	if connector.ErrorCodeOf(err) == connector.ENOTFOUND {
		return connector.Errorf(connector.EINVALID, "The uploaded image expired before it could be compressed")
	}
	return err
}

func (img *image) Read(p []byte) (int, error) {
	n, err := img.body.Read(p)
	if err != nil && err != io.EOF && img.readErr == nil {
		img.readErr = err
	}
	return n, err
}

// Size is the image's size in bytes, so the call can send it with a
// Content-Length.
func (img *image) Size() int64 { return img.size }

// Close closes the blob, if the image streams from one.
func (img *image) Close() error {
	if img.closer == nil {
		return nil
	}
	return img.closer.Close()
}

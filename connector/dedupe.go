package connector

import (
	"context"
	"time"
)

// Content dedupe: a job whose key, image bytes and compression options are
// those of a completed job of the same key, whose result is still stored,
// completes from that result without calling the compression API, so it
// costs no credit. Flows re-run (a replayed Zap, an n8n execution run
// again), and few send Idempotency-Keys, which are per request anyway.
//
// The index is per owner (the key's hash): a key never sees, or reuses,
// another key's results. The bytes are identified by their SHA-256, taken
// while they stream in (the API for base64 and uploads, the fetcher for
// URLs), never by the URL: the same URL may serve other bytes tomorrow.

// DedupeKey names a compression: whose it is, which bytes, which options.
type DedupeKey struct {
	Owner  string // the key's hash (Job.Owner)
	SHA256 string // hex SHA-256 of the input's bytes
	// Options is the canonical form of the options that change the output
	// (DedupeOptions).
	Options string
}

// DedupeOptions is the canonical form of what, besides the bytes, decides
// a job's output: its transform (resize, convert, preserve). The file name
// and metadata change only what the job shows, which a deduplicated job
// takes from its own request. A job without options keeps the key it
// always had ("v1"). j may be nil (no options).
func DedupeOptions(j *Job) string {
	if j == nil || j.Transform.IsZero() {
		return "v1"
	}
	return "v1;" + j.Transform.Canonical()
}

// DedupeKeyOf is the job's key in the dedupe index, once its digest is
// known (ok false before).
func DedupeKeyOf(j *Job) (k DedupeKey, ok bool) {
	if j.Input.SHA256 == "" || j.Owner == "" {
		return k, false
	}
	return DedupeKey{Owner: j.Owner, SHA256: j.Input.SHA256, Options: DedupeOptions(j)}, true
}

// BlobCopier copies a blob inside its store, without the bytes passing
// through imgflow; a BlobStore that cannot may leave it out (CopyBlob then
// streams the copy).
type BlobCopier interface {
	// Copy makes to a copy of from, living ttl; ENOTFOUND when from is
	// gone.
	Copy(ctx context.Context, from, to string, ttl time.Duration) error
}

// CopyBlob copies blob from to to in bs: inside the store when it can,
// else streamed (one chunk held at a time).
func CopyBlob(ctx context.Context, bs BlobStore, from, to string, ttl time.Duration) error {
	if c, ok := bs.(BlobCopier); ok {
		return c.Copy(ctx, from, to, ttl)
	}
	b, err := bs.Open(ctx, from)
	if err != nil {
		return err
	}
	defer b.Close()
	return bs.Put(ctx, to, b, b.Size, ttl)
}
